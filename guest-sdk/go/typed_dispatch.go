package weir

import (
	"fmt"

	"github.com/weir-stream/weir/abi"
)

// typedProc runs the typed batch calls of one module instance: it checks a
// typed batch frame, calls the registered typed function for each record
// and builds the typed output frame. Reading a field is a load from its
// column: nothing is decoded per record. Its buffers are reused from call
// to call. The exports use the package-level typedProcessor; tests make
// their own.
type typedProc struct {
	w    abi.TypedOutputWriter
	b    abi.TypedBatch
	cols []abi.Column
	row  Row
	em   PatchEmitter
	// mark is the frame's end before the current record's entries, to
	// take them back when its function fails.
	mark  abi.TypedMark
	next  int
	batch Batch
}

var typedProcessor typedProc

// run processes one typed batch frame for op and returns the typed output
// frame, which aliases p's buffer until the next call. A malformed frame
// is an error (a host bug).
func (p *typedProc) run(op abi.Op, frame []byte) ([]byte, error) {
	if op < abi.OpMap || op > abi.OpFilter {
		return nil, fmt.Errorf("weir: unknown batch operation %v", op)
	}
	n, err := p.b.ResetShape(frame) // the host checked it as it wrote it
	if err != nil {
		return nil, err
	}
	p.cols = p.cols[:0]
	for k := range p.b.Fields() + abi.TypedFirstFieldColumn {
		p.cols = append(p.cols, p.b.Column(k))
	}
	p.row.p = p
	p.w.Reset()
	if fn := batchFunc(op); fn != nil {
		p.runBatch(op, n, fn)
		return p.w.Bytes(), nil
	}
	for p.next = 0; p.next < n; {
		p.runFrom(op, n)
	}
	return p.w.Bytes(), nil
}

// batchFunc returns op's registered batch function, or nil.
func batchFunc(op abi.Op) func(*Batch) error {
	switch {
	case op == abi.OpMap && typed.mapBatch != nil:
		return typed.mapBatch
	case op == abi.OpFilter && typed.filterBatch != nil:
		return typed.filterBatch
	}
	return nil
}

// runFrom answers records from p.next to n. A panic becomes the record's
// error, and run resumes with the next one; recovering once per batch
// keeps a deferred call out of the per-record path.
func (p *typedProc) runFrom(op abi.Op, n int) {
	defer func() {
		if v := recover(); v != nil {
			p.fail(p.next-1, panicError(v))
		}
	}()
	for p.next < n {
		i := p.next
		p.next++
		p.row.i = i
		p.mark = p.w.Mark()
		var err error
		switch op {
		case abi.OpMap:
			err = p.mapOne(i)
		case abi.OpFlatMap:
			err = p.flatMapOne(i)
		case abi.OpFilter:
			err = p.filterOne(i)
		}
		if err != nil {
			p.fail(i, err)
		}
	}
}

// fail answers record i with err alone, taking back what it emitted.
func (p *typedProc) fail(i int, err error) {
	p.w.Rewind(p.mark)
	p.em.pending = false
	p.w.Error(i, err.Error())
}

func (p *typedProc) mapOne(i int) error {
	if typed.mapFn == nil {
		return noHandlerError(abi.OpMap)
	}
	patch := &p.em.cur
	patch.reset(&p.w, i)
	if err := typed.mapFn(&p.row, patch); err != nil {
		return err
	}
	switch {
	case patch.begun:
	case patch.emitted():
		patch.begin() // a new key or timestamp, the value as it is
	default:
		p.w.Keep(i)
	}
	return nil
}

func (p *typedProc) flatMapOne(i int) error {
	if typed.flatMap == nil {
		return noHandlerError(abi.OpFlatMap)
	}
	p.em.cur.reset(&p.w, i)
	p.em.pending = false
	if err := typed.flatMap(&p.row, &p.em); err != nil {
		return err
	}
	p.em.flush()
	return nil
}

func (p *typedProc) filterOne(i int) error {
	if typed.filter == nil {
		return noHandlerError(abi.OpFilter)
	}
	keep, err := typed.filter(&p.row)
	if err == nil && keep {
		p.w.Keep(i)
	}
	return err
}

// field returns field f's column, which must be of type t.
func (p *typedProc) field(f int, t abi.FieldType) *abi.Column {
	c := &p.cols[abi.TypedFirstFieldColumn+f]
	if c.Type != t {
		panic(typeError{f, c.Type, t})
	}
	return c
}

// typeError is the panic of reading field Field as Want when it is
// declared as Have (Want 0: as bytes). A value, not a formatted string, so
// that the accessors that check for it stay small enough to inline.
type typeError struct {
	Field      int
	Have, Want abi.FieldType
}

func (e typeError) Error() string {
	want := "string or raw"
	if e.Want != 0 {
		want = e.Want.String()
	}
	return fmt.Sprintf("weir: field %d is %s, not %s", e.Field, e.Have, want)
}

type handlerError string

func (e handlerError) Error() string { return string(e) }

func noHandlerError(op abi.Op) error { return handlerError(noHandler[op]) }
