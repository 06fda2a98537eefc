package weir

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/weir-stream/weir/abi"
)

// processor runs the batch calls of one module instance: it decodes a batch
// frame, calls the registered function for each record and builds the
// output frame. Its buffers are reused from call to call, so a steady stream
// of batches does not allocate. The exports use the single package-level
// processor, proc; tests make their own.
type processor struct {
	w   abi.OutputWriter
	rd  abi.BatchReader
	in  abi.InRecord
	rec Record
	out Output
	em  Emitter
	// scratch stages values built in place when the output frame has too
	// little spare capacity (see stage).
	scratch []byte
	// next is the index of the next record of the batch to process.
	next int
}

var proc processor

// noHandler are the messages for batch calls of a kind without a function.
var noHandler = func() (m [len(abi.Ops) + 1]string) {
	for _, op := range abi.Ops {
		m[op] = "plugin has no " + op.String() + " handler"
	}
	return m
}()

// run processes one batch frame for op and returns the output frame, which
// aliases p's buffer until the next call.
//
// A malformed frame is an error. Records are decoded as they are processed,
// so functions may already have run for the records before the point where
// the frame breaks; since the host wrote the frame, the exports treat the
// error as fatal, and the host discards the whole call when the instance
// dies. (Checking the frame in a separate pass first would cost about a
// quarter of the SDK's per-record overhead, for a host bug.)
func (p *processor) run(op abi.Op, frame []byte) ([]byte, error) {
	if op < abi.OpMap || op > abi.OpFilter {
		return nil, fmt.Errorf("weir: unknown batch operation %v", op)
	}
	p.out.p, p.em.p = p, p
	if _, err := p.rd.Reset(frame); err != nil {
		return nil, err
	}
	p.w.Reset()
	p.next = 0
	for {
		done, err := p.runFrom(op)
		if err != nil {
			return nil, err
		}
		if done {
			return p.w.Bytes(), nil
		}
	}
}

// runFrom processes records from p.next to the end of the batch. A panic
// while processing a record becomes that record's error, and runFrom returns
// done == false so that run resumes with the next record. Recovering here,
// once per batch rather than once per record, keeps a deferred call out of
// the per-record path, which in a Go wasm guest is a large share of it.
func (p *processor) runFrom(op abi.Op) (done bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			p.fail(op, int(p.rec.index), panicError(v))
			done, err = false, nil
		}
	}()
	for {
		more, err := p.rd.Next(&p.in)
		if err != nil || !more {
			return err == nil, err
		}
		i := p.next
		p.next++
		p.rec = recordAt(&p.in, i)
		switch op {
		case abi.OpMap:
			p.mapOne(i)
		case abi.OpFlatMap:
			p.flatMapOne(i)
		case abi.OpFilter:
			p.filterOne(i)
		}
	}
}

// fail rejects record i with err, discarding what was built for it.
func (p *processor) fail(op abi.Op, i int, err error) {
	switch op {
	case abi.OpMap:
		p.out.discard()
	case abi.OpFlatMap:
		p.out.discard()
		p.em.pending = false
	}
	p.w.Error(i, err.Error())
}

func (p *processor) mapOne(i int) {
	switch {
	case handlers.mapFn != nil:
		v, err := handlers.mapFn(&p.rec)
		switch {
		case err != nil:
			p.w.Error(i, err.Error())
		case sameSlice(v, p.in.Value):
			p.w.Keep(i)
		default:
			p.w.Record(i, v)
		}
	case handlers.mapTo != nil:
		p.out.reset(i)
		if err := handlers.mapTo(&p.rec, &p.out); err != nil {
			p.fail(abi.OpMap, i, err)
			return
		}
		p.out.commit()
	default:
		p.w.Error(i, noHandler[abi.OpMap])
	}
}

func (p *processor) flatMapOne(i int) {
	if handlers.flatMap == nil {
		p.w.Error(i, noHandler[abi.OpFlatMap])
		return
	}
	p.em.reset(i)
	err := handlers.flatMap(&p.rec, &p.em)
	if err == nil {
		// A misused Emitter can panic here too; runFrom recovers it.
		p.em.flush()
		return
	}
	p.fail(abi.OpFlatMap, i, err)
}

func (p *processor) filterOne(i int) {
	if handlers.filter == nil {
		p.w.Error(i, noHandler[abi.OpFilter])
		return
	}
	keep, err := handlers.filter(&p.rec)
	switch {
	case err != nil:
		p.w.Error(i, err.Error())
	case keep:
		p.w.Keep(i)
	}
}

// recoverInto, deferred, turns a panic into *err.
func recoverInto(err *error) {
	if v := recover(); v != nil {
		*err = panicError(v)
	}
}

// panicError is the record error for a recovered panic value.
func panicError(v any) error {
	return errors.New("panic: " + fmt.Sprint(v))
}

// runInit passes config to the registered Init function, if any, and
// returns the error text to give the host, or "" on success.
func runInit(config []byte) string {
	if handlers.init == nil {
		return ""
	}
	err := callInit(handlers.init, append([]byte{}, config...))
	if err == nil {
		return ""
	}
	if msg := err.Error(); msg != "" {
		return msg
	}
	return "init failed"
}

func callInit(fn InitFunc, config []byte) (err error) {
	defer recoverInto(&err)
	return fn(config)
}

// sameSlice reports whether a and b are the same slice: same start and
// length. Returning the input value unchanged from a map function is a keep.
func sameSlice(a, b []byte) bool {
	return len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}
