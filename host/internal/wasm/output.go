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
	prev := -1
	group := len(out.Records) // where the outputs of input prev start
	used := 0
	for {
		ok, err := d.reader.Next(e)
		if err != nil {
			return nrejected, &outputError{msg: "malformed output frame", err: err}
		}
		if !ok {
			break
		}
		if msg := abi.CheckOrder(d.op, len(in), prev, e); msg != "" {
			return nrejected, &outputError{msg: "output breaks the ABI order rules: " + msg}
		}
		if e.Index != prev {
			group = len(out.Records)
			prev = e.Index
		}
		if used += entrySize(e); d.limit > 0 && used > d.limit {
			return nrejected, &limitError{msg: fmt.Sprintf("%s output of one call over max_batch_output (%s)",
				d.op, sizeString(uint64(d.limit)))}
		}
		if rejected[e.Index] {
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
			clear(out.Records[group:])
			out.Records = out.Records[:group]
			rejected[e.Index] = true
			nrejected++
			out.Dead = append(out.Dead, record.DeadLetter{
				Record: *src,
				Stage:  d.stage,
				Reason: d.op.String() + " error: " + guestText(e.Message, maxErrorMessage),
			})
		}
	}
	if d.op == abi.OpMap && prev != len(in)-1 {
		return nrejected, &outputError{msg: fmt.Sprintf(
			"output breaks the ABI order rules: map must answer every input, but answered %d of %d", prev+1, len(in))}
	}
	return nrejected, nil
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
