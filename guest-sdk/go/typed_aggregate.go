package weir

import (
	"errors"

	"github.com/weir-stream/weir/abi"
)

// TypedAggregateFuncs are the functions of a typed aggregate (ABI.md
// §14.5): an aggregate whose Add reads each record's declared fields from
// a Row, which the host extracted natively, instead of parsing the
// record's value. Everything else is as in AggregateFuncs: the host keeps
// the accumulators as bytes, through Codec, and calls Create, Merge and
// Result as for a raw aggregate. Declare the fields Add reads with Fields.
//
// For each group of an add call, the SDK decodes the accumulator once,
// calls Add for each of the group's records in order, and encodes the
// accumulator once; nothing is allocated per record. Records whose fields
// break the declaration (Required, Strict) are dead-lettered by the host
// and never reach Add.
//
// Add must not keep the Row, nor the slices it returns (they alias the
// call's input), nor slices decoded from accumulator bytes: copy what must
// outlive the call. State is not available, as for AggregateFuncs.
type TypedAggregateFuncs[A any] struct {
	// Create returns a fresh accumulator, as AggregateFuncs.Create. Nil
	// means A's zero value.
	Create func() A
	// Add folds r into acc and returns the new accumulator. Returning an
	// error, or panicking, rejects r: the host sends it to the dead-letter
	// output with the error's text, the accumulator returned is ignored,
	// and the group's other records are folded in as usual. (When A is or
	// holds a pointer, changes Add made through it before failing remain.)
	Add func(acc A, r *Row) (A, error)
	// Merge, Result, ResultCtx and Codec are as in AggregateFuncs: one
	// of Result and ResultCtx, which is given the group's context (its
	// key and window), is required.
	Merge     func(a, b A) A
	Result    func(dst []byte, acc A) ([]byte, error)
	ResultCtx func(dst []byte, acc A, c AggContext) ([]byte, error)
	Codec     Codec[A]
}

// TypedAggregate registers a typed aggregate, which reads the fields
// declared with Fields. Create may be nil, and one of Result and
// ResultCtx; the other functions, and both of the Codec's, are required. Call it from a package init function, at
// most once, instead of Aggregate; registering an aggregate twice, or with
// a required function nil, panics, which makes the module fail to
// initialise.
//
// The module then answers the host's weir_fields call with its
// declaration, and the host calls weir_typed_agg_add for its records. A
// host that predates the typed convention calls weir_agg_add, which
// rejects every record: a typed aggregate has no raw Add.
func TypedAggregate[A any](f TypedAggregateFuncs[A]) {
	funcs := AggregateFuncs[A]{Create: f.Create, Merge: f.Merge, Result: f.Result, ResultCtx: f.ResultCtx, Codec: f.Codec}
	mustRegisterAggregate("TypedAggregateFuncs", f.Add == nil, funcs)
	aggHandler = &typedAggOf[A]{aggOf: aggOf[A]{f: funcs}, addFn: f.Add}
}

// typedAggregator is a registered typed aggregate: an aggregator whose
// records are Rows. addRow folds one, leaving the accumulator unchanged
// when it fails, between begin and end as aggregator.add.
type typedAggregator interface {
	aggregator
	addRow(r *Row) error
}

// typedAggOf adapts TypedAggregateFuncs to typedAggregator: create,
// begin, end, merge and result are aggOf's.
type typedAggOf[A any] struct {
	aggOf[A]
	addFn func(acc A, r *Row) (A, error)
}

func (g *typedAggOf[A]) addRow(r *Row) error {
	acc, err := g.addFn(g.cur, r)
	if err != nil {
		return err
	}
	g.cur = acc
	return nil
}

// add is the raw weir_agg_add's: a typed aggregate has no raw Add.
func (g *typedAggOf[A]) add(*Record) error { return errTypedOnly }

var (
	errTypedOnly = errors.New("plugin's aggregate is typed: it reads records through " +
		abi.ExportTypedAggAdd + ", not " + abi.ExportAggAdd)
	errNoTypedAggregate = errors.New("plugin has no typed " + abi.OpAggregate.String() + " handler")
)

// moduleFields is the module's answer to abi.ExportFields: typedDecl's,
// or, for a module whose only typed function is its aggregate, its
// declaration (no fields when Fields was not called).
func moduleFields() []byte {
	if why := mixedConventions(); why != "" {
		panic(why)
	}
	if d := typedDecl(); d != nil {
		return d
	}
	if _, ok := aggHandler.(typedAggregator); !ok {
		return nil
	}
	if typed.decl == nil {
		typed.decl = abi.AppendFieldDecls(nil, nil)
	}
	return typed.decl
}

// typedAggProcessor runs the weir_typed_agg_add calls of one module
// instance: it checks a typed add frame and folds each group's records,
// read as Rows from the frame's typed batch, into the group's
// accumulator, answering with the same add output frame as
// aggProcessor.add. Its buffers are reused from call to call. The export
// uses the package-level typedAggProc; tests make their own.
type typedAggProcessor struct {
	agg aggProcessor // its output writer and group helpers
	rd  abi.TypedAddReader
	// tp holds the batch's columns, which Rows read.
	tp  typedProc
	row Row
	// next is the index within the current group of the next record.
	next int
}

// add processes a typed add frame and returns the add output frame, which
// aliases p's buffer until the next call. A malformed frame is an error
// (a host bug), as for aggProcessor.add.
func (p *typedAggProcessor) add(frame []byte) ([]byte, error) {
	if _, err := p.rd.ResetShape(frame); err != nil { // the host checked it as it wrote it
		return nil, err
	}
	b := &p.rd.Batch
	p.tp.cols = p.tp.cols[:0]
	for k := range b.Fields() + abi.TypedFirstFieldColumn {
		p.tp.cols = append(p.tp.cols, b.Column(k))
	}
	p.row.p = &p.tp
	p.agg.w.Reset()
	g, _ := aggHandler.(typedAggregator)
	for {
		acc, first, n, ok := p.rd.NextGroup()
		if !ok {
			return p.agg.w.Bytes(), nil
		}
		p.addGroup(g, acc, first, n)
	}
}

// addGroup folds the group of n records from batch record first into acc
// and writes the group's answer.
func (p *typedAggProcessor) addGroup(g typedAggregator, acc []byte, first, n int) {
	w := &p.agg.w
	w.BeginGroup()
	switch {
	case g == nil && aggHandler == nil:
		p.agg.rejectGroup(acc, n, errNoAggregate)
		return
	case g == nil:
		p.agg.rejectGroup(acc, n, errNoTypedAggregate)
		return
	}
	if err := callBegin(g, acc); err != nil {
		p.agg.rejectGroup(acc, n, accError(err))
		return
	}
	for p.next = 0; p.next < n; {
		p.addFrom(g, first, n)
	}
	if err := p.agg.endGroup(g); err != nil {
		// The records were folded, but the result cannot be encoded: keep
		// the accumulator as it was and reject them all.
		w.Abort()
		w.BeginGroup()
		p.agg.rejectGroup(acc, n, err)
	}
}

// addFrom folds the group's records from p.next to n. A panic rejects the
// record, and addGroup resumes with the next one: one deferred recover
// per group, not per record.
func (p *typedAggProcessor) addFrom(g typedAggregator, first, n int) {
	defer func() {
		if v := recover(); v != nil {
			p.agg.w.GroupError(p.next-1, panicError(v).Error())
		}
	}()
	for p.next < n {
		i := p.next
		p.next++
		p.row.i = first + i
		if err := g.addRow(&p.row); err != nil {
			p.agg.w.GroupError(i, err.Error())
		}
	}
}

// mixedConventions returns why the module cannot load when it registers
// typed and raw functions together, or "". The host calls all of a
// module's functions in the convention its declaration selects, so a raw
// function beside a typed one would never be called.
func mixedConventions() string {
	_, typedAgg := aggHandler.(typedAggregator)
	anyTyped := typedRegistered() || typedAgg
	anyRaw := handlers.mapFn != nil || handlers.mapTo != nil || handlers.flatMap != nil ||
		handlers.filter != nil || aggHandler != nil && !typedAgg
	if anyTyped && anyRaw {
		return "weir: the module registers typed and raw functions: register all of its functions typed (TypedMap, TypedAggregate, ...) or all raw (Map, Aggregate, ...)"
	}
	return ""
}
