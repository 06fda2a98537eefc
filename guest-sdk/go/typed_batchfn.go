package weir

import (
	"fmt"

	"github.com/weir-stream/weir/abi"
)

// Batch functions are the typed convention's loop in the plugin's hands:
// TypedMapBatch and TypedFilterBatch register a function called once per
// batch, which reads whole columns and answers the records it means to.
// The per-record functions (TypedMap, TypedFilter) pay, in Go's wasm code,
// a call through a function value and the SDK's bookkeeping for every
// record; a batch function pays them once per batch, and its own loop over
// a column is a load per value.

// TypedMapBatchFunc answers a typed map's batch: through b.Patch it
// patches the records it changes, through b.Reject it rejects records;
// every record it does not answer is kept unchanged. An error (or a panic)
// rejects every record of the batch with its message.
type TypedMapBatchFunc func(b *Batch) error

// TypedFilterBatchFunc answers a typed filter's batch: b.Keep keeps a
// record, b.Reject rejects it; a record it does not answer is dropped. An
// error (or a panic) rejects every record of the batch with its message.
type TypedFilterBatchFunc func(b *Batch) error

// TypedMapBatch registers the typed map as a batch function.
func TypedMapBatch(fn TypedMapBatchFunc) {
	mustRegister(fn == nil, mapRegistered(), "map")
	typed.mapBatch = fn
}

// TypedFilterBatch registers the typed filter as a batch function.
func TypedFilterBatch(fn TypedFilterBatchFunc) {
	mustRegister(fn == nil, filterRegistered(), "filter")
	typed.filterBatch = fn
}

// Batch is one typed batch, as a batch function sees it: its length, its
// columns (timestamps, keys and the declared fields) and the answers given
// so far. Records are answered in increasing order, each at most once. A
// Batch, its columns and the slices they return belong to the SDK and are
// valid only during the call.
type Batch struct {
	p     *typedProc
	op    abi.Op
	n     int
	next  int // the first record not answered yet
	patch Patch
	open  bool // patch is record next-1's, still open
}

// Len returns the number of records in the batch.
func (b *Batch) Len() int { return b.n }

// Timestamps returns the records' event times, in milliseconds since the
// Unix epoch; every record has one.
func (b *Batch) Timestamps() Ints { return Ints{b.p.cols[abi.TypedTimestampColumn]} }

// Keys returns the records' keys; a record without one is Null.
func (b *Batch) Keys() Strings { return Strings{b.p.cols[abi.TypedKeyColumn]} }

// Ints returns int field f's column.
func (b *Batch) Ints(f int) Ints { return Ints{*b.p.field(f, abi.TypeInt)} }

// Floats returns float field f's column.
func (b *Batch) Floats(f int) Floats { return Floats{*b.p.field(f, abi.TypeFloat)} }

// Bools returns bool field f's column.
func (b *Batch) Bools(f int) Bools { return Bools{*b.p.field(f, abi.TypeBool)} }

// Strings returns string field f's column (decoded text), or raw field f's
// (its JSON source text).
func (b *Batch) Strings(f int) Strings {
	c := &b.p.cols[abi.TypedFirstFieldColumn+f]
	if c.Type != abi.TypeString && c.Type != abi.TypeRaw {
		panic(typeError{Field: f, Have: c.Type})
	}
	return Strings{*c}
}

// Keep keeps record i unchanged.
func (b *Batch) Keep(i int) {
	b.answer(i)
	b.p.w.Keep(i)
}

// Reject rejects record i: the host dead-letters it with err's message.
func (b *Batch) Reject(i int, err error) {
	b.answer(i)
	b.p.w.Error(i, err.Error())
}

// Patch returns record i's patch, valid until the next answer; a patch
// that sets nothing keeps the record. Only a map patches.
func (b *Batch) Patch(i int) *Patch {
	if b.op != abi.OpMap {
		panic("weir: a filter keeps or rejects; it does not patch")
	}
	b.answer(i)
	b.patch.reset(&b.p.w, i)
	b.open = true
	return &b.patch
}

// answer moves the batch on to record i: it closes the open patch and,
// in a map, keeps the records skipped.
func (b *Batch) answer(i int) {
	if i < b.next || i >= b.n {
		panic(fmt.Sprintf("weir: record %d answered out of order: the next is %d of %d", i, b.next, b.n))
	}
	b.close()
	if b.op == abi.OpMap {
		for j := b.next; j < i; j++ {
			b.p.w.Keep(j)
		}
	}
	b.next = i + 1
}

// close writes the open patch's entry when it has not written itself.
func (b *Batch) close() {
	if !b.open {
		return
	}
	b.open = false
	switch p := &b.patch; {
	case p.begun:
	case p.emitted():
		p.begin() // a new key or timestamp, the value as it is
	default:
		b.p.w.Keep(p.i)
	}
}

// finish answers the records left: a map keeps them.
func (b *Batch) finish() {
	b.close()
	if b.op != abi.OpMap {
		return
	}
	for ; b.next < b.n; b.next++ {
		b.p.w.Keep(b.next)
	}
}

// runBatch calls fn with the whole batch of n records; an error or a
// panic rejects every record with its message.
func (p *typedProc) runBatch(op abi.Op, n int, fn func(*Batch) error) {
	p.batch = Batch{p: p, op: op, n: n}
	if err := p.callBatch(fn); err != nil {
		p.w.Reset()
		msg := err.Error()
		for i := range n {
			p.w.Error(i, msg)
		}
		return
	}
	p.batch.finish()
}

func (p *typedProc) callBatch(fn func(*Batch) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicError(v)
		}
	}()
	return fn(&p.batch)
}

// Ints is an int column of a Batch: a plain value, valid during the call.
type Ints struct{ c abi.Column }

// Get returns record i's value and whether it is present.
func (c Ints) Get(i int) (int64, bool) { return c.c.Int(i), c.c.Status(i) == abi.ValuePresent }

// Status returns whether record i has a value.
func (c Ints) Status(i int) Status { return c.c.Status(i) }

// Floats is a float column of a Batch: a plain value, valid during the
// call.
type Floats struct{ c abi.Column }

// Get returns record i's value and whether it is present.
func (c Floats) Get(i int) (float64, bool) {
	return c.c.Float(i), c.c.Status(i) == abi.ValuePresent
}

// Status returns whether record i has a value.
func (c Floats) Status(i int) Status { return c.c.Status(i) }

// Bools is a bool column of a Batch: a plain value, valid during the call.
type Bools struct{ c abi.Column }

// Get returns record i's value and whether it is present.
func (c Bools) Get(i int) (bool, bool) { return c.c.Bool(i), c.c.Status(i) == abi.ValuePresent }

// Status returns whether record i has a value.
func (c Bools) Status(i int) Status { return c.c.Status(i) }

// Strings is a string or raw column of a Batch: a plain value, valid
// during the call.
type Strings struct{ c abi.Column }

// Get returns record i's bytes, which alias the batch, and whether they
// are present.
func (c Strings) Get(i int) ([]byte, bool) {
	if c.c.Status(i) != abi.ValuePresent {
		return nil, false
	}
	return c.c.Bytes(i), true
}

// Status returns whether record i has a value.
func (c Strings) Status(i int) Status { return c.c.Status(i) }
