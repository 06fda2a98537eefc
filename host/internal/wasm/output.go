package wasm

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/record"
)

// outputError is an output frame that breaks the ABI: a guest bug, treated
// like a trap.
type outputError struct {
	msg string
	err error
}

func (e *outputError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *outputError) Unwrap() error { return e.err }

const (
	// maxErrorMessage bounds the guest error text kept in a dead letter.
	maxErrorMessage = 1024
	// maxInternedNames bounds the header-name intern table of a decoder.
	maxInternedNames = 1024
)

// decoder turns output frames into records. Each Worker has one; its
// reader, entry and intern table are reused from call to call.
type decoder struct {
	op     abi.Op
	stage  string // the operator, for dead letters
	limit  int    // bytes of output one call may produce (see charge); 0: none
	reader abi.OutputReader
	entry  abi.Entry
	names  map[string]string // interned header names
}

// limitError is output over the decoder's limit.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

// recordSize is what an output record costs the host besides its bytes.
const recordSize = int(unsafe.Sizeof(record.Record{}))

// entrySize is what entry e costs the host: its record, and the bytes
// copied for it.
func entrySize(e *abi.Entry) int {
	n := recordSize
	switch e.Kind {
	case abi.KindRecord:
		n += len(e.Value)
		if e.Flags&abi.FlagKey != 0 {
			n += len(e.Key)
		}
		if e.Flags&abi.FlagHeaders != 0 {
			n += e.Headers.Len()*int(unsafe.Sizeof(record.Header{})) + len(e.Headers.Raw())
		}
	case abi.KindError:
		n += min(len(e.Message), maxErrorMessage)
	}
	return n
}

// decode appends to out what frame says about the batch in: kept and
// emitted records, and a dead letter for each input the guest rejected,
// which it also marks in rejected (len(in), all false on entry). Entries
// for a rejected input are discarded, including those before the error.
//
// It checks the frame as it goes (abi.OutputReader, abi.CheckOrder, and for
// map one entry per input) and returns an *outputError at the first
// violation; out may then hold partial results, which the caller rolls
// back. Everything the guest produced is copied, so frame may be a view of
// guest memory that goes stale afterwards.
func (d *decoder) decode(frame []byte, in []record.Record, out *record.Output, rejected []bool) (nrejected int, err error) {
	if _, err := d.reader.Reset(frame); err != nil {
		return 0, &outputError{msg: "malformed output frame", err: err}
	}
	e := &d.entry
	a := d.begin(in, out, rejected)
	for {
		ok, err := d.reader.Next(e)
		if err != nil {
			return a.nrej, &outputError{msg: "malformed output frame", err: err}
		}
		if !ok {
			break
		}
		live, err := d.next(&a, e.Index, abi.CheckOrder(d.op, len(in), a.prev, e), entrySize(e))
		if err != nil {
			return a.nrej, err
		}
		if !live {
			continue
		}
		src := &in[e.Index]
		switch e.Kind {
		case abi.KindKeep:
			out.Records = append(out.Records, *src)
		case abi.KindRecord:
			out.Records = append(out.Records, record.Record{})
			d.record(&out.Records[len(out.Records)-1], src, e, out)
		case abi.KindError:
			d.reject(&a, e.Index, guestText(e.Message, maxErrorMessage))
		}
	}
	return a.nrej, d.end(&a)
}

// answers is the progress of one output frame's decoding.
type answers struct {
	in       []record.Record
	out      *record.Output
	rejected []bool
	prev     int // the input the last entry answered, or -1
	group    int // where the outputs of input prev start in out.Records
	used     int // output bytes charged against the decoder's limit
	nrej     int // inputs rejected
}

// begin starts decoding the answers about the batch in.
func (d *decoder) begin(in []record.Record, out *record.Output, rejected []bool) answers {
	return answers{in: in, out: out, rejected: rejected, prev: -1, group: len(out.Records)}
}

// next takes the entry answering input index, whose ordering problem
// (abi.CheckOrder) is order and whose output costs size bytes. It returns
// an *outputError or a *limitError, or whether the input is still to be
// answered (not rejected by an earlier entry).
func (d *decoder) next(a *answers, index int, order string, size int) (bool, error) {
	if order != "" {
		return false, &outputError{msg: "output breaks the ABI order rules: " + order}
	}
	if index != a.prev {
		a.group = len(a.out.Records)
		a.prev = index
	}
	if err := d.charge(a, size); err != nil {
		return false, err
	}
	return !a.rejected[index], nil
}

// charge counts size more bytes of output, returning a *limitError past
// the decoder's limit.
func (d *decoder) charge(a *answers, size int) error {
	if a.used += size; d.limit > 0 && a.used > d.limit {
		return &limitError{msg: fmt.Sprintf("%s output of one call over max_batch_output (%s)",
			d.op, sizeString(uint64(d.limit)))}
	}
	return nil
}

// reject rejects input index, the input of the last entry, with msg:
// its outputs so far are dropped and it becomes a dead letter.
func (d *decoder) reject(a *answers, index int, msg string) {
	clear(a.out.Records[a.group:])
	a.out.Records = a.out.Records[:a.group]
	a.rejected[index] = true
	a.nrej++
	a.out.Dead = append(a.out.Dead, d.deadLetter(&a.in[index], msg))
}

// deadLetter is the dead letter of src, rejected with msg: by the guest,
// or by the host for the guest (ABI.md §14: a field or a patch).
func (d *decoder) deadLetter(src *record.Record, msg string) record.DeadLetter {
	return record.DeadLetter{Record: *src, Stage: d.stage, Reason: d.op.String() + " error: " + msg}
}

// end checks, after the last entry, that a map answered every input.
func (d *decoder) end(a *answers) error {
	if d.op == abi.OpMap && a.prev != len(a.in)-1 {
		return &outputError{msg: fmt.Sprintf(
			"output breaks the ABI order rules: map must answer every input, but answered %d of %d", a.prev+1, len(a.in))}
	}
	return nil
}

// record fills r, a zero record in out.Records, with the record a
// KindRecord entry emits for input src: the entry's value, and its key,
// timestamp and headers where flagged, else the input's. It keeps the
// input's origin. (Filling the record in place saves copying it twice.)
func (d *decoder) record(r *record.Record, src *record.Record, e *abi.Entry, out *record.Output) {
	r.Key = src.Key
	r.Value = out.Arena.Copy(e.Value)
	r.Timestamp = src.Timestamp
	r.Headers = src.Headers
	r.Origin = src.Origin
	if e.Flags&abi.FlagKey != 0 {
		r.Key = out.Arena.Copy(e.Key)
	}
	if e.Flags&abi.FlagTimestamp != 0 {
		r.Timestamp = e.Time
	}
	if e.Flags&abi.FlagHeaders != 0 {
		r.Headers = nil
		if n := e.Headers.Len(); n > 0 {
			hs := out.AllocHeaders(n)
			i := 0
			e.Headers.Each(func(name, value []byte) {
				hs[i] = record.Header{Key: d.intern(name), Value: out.Arena.Copy(value)}
				i++
			})
			r.Headers = hs
		}
	}
}

// intern returns name as a string, reusing the string of an earlier header
// with the same name.
func (d *decoder) intern(name []byte) string {
	if s, ok := d.names[string(name)]; ok {
		return s
	}
	s := string(name)
	if d.names == nil {
		d.names = make(map[string]string)
	}
	if len(d.names) < maxInternedNames {
		d.names[s] = s
	}
	return s
}

// guestText returns guest-supplied text as valid UTF-8 of at most max
// bytes.
func guestText(b []byte, max int) string {
	return strings.ToValidUTF8(truncateUTF8(b, max), "\uFFFD")
}
