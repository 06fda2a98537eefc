package wasm

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero/api"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/record"
)

// The aggregate operation (abi.OpAggregate): a plugin loaded with that Op
// runs through AggCreate, AggAdd, AggMerge and AggResult instead of
// Process. The host owns the accumulators, as opaque bytes; the guest only
// transforms them.

// AggGroup is one group of an AggAdd call: the group's accumulator and the
// records to fold into it, in order. Acc is only read.
type AggGroup struct {
	Acc     []byte
	Records []record.Record
}

// AggPair is two accumulators of one group for AggMerge. They are only
// read.
type AggPair struct {
	A, B []byte
}

// AggContext is the context of a group whose result is due, which
// AggResult passes to a module that exports weir_agg_result_ctx: the
// group's key (nil for none) and window. See abi.AggContext.
type AggContext = abi.AggContext

// AggValue is AggMerge's or AggResult's answer for one input.
type AggValue struct {
	// Value is the merged accumulator, or the result value (nil when the
	// guest gave an absent value). It is nil when Err is set.
	Value []byte
	// Err is "" on success. Otherwise it says why there is no value:
	// "aggregate error: <the guest's message>", or the reason of a guest
	// failure ("trap: wasm error: unreachable", "timed out after 1s").
	Err string
}

// AggOutput receives what the aggregate calls produce. Like record.Output, the
// caller owns it and reuses it: the calls append to it and copy the bytes
// the guest produced into Arena, and Reset makes that memory reusable.
type AggOutput struct {
	// Accs gets AggAdd's new accumulators, one per group, in group order.
	Accs [][]byte
	// Dead gets the records AggAdd rejected: those the guest rejected,
	// with Reason "aggregate error: <message>", and those it failed on
	// alone, with the failure's reason.
	Dead []record.DeadLetter
	// DeadAt locates each of Dead's records in AggAdd's input: DeadAt[i]
	// is the group (its index in the groups of the call) and the record
	// (its index in the group's Records) of Dead[i].
	DeadAt []AggIndex
	// Values gets AggMerge's and AggResult's answers, one per input.
	Values []AggValue
	Arena  record.Arena
}

// AggIndex locates a record in AggAdd's input: Records[Record] of
// groups[Group].
type AggIndex struct{ Group, Record int }

// shiftDead adds dg to the group and dr to the record index of the dead
// letters from the nd-th on: they were located in a part of the input
// that starts there.
func (o *AggOutput) shiftDead(nd, dg, dr int) {
	for i := nd; i < len(o.DeadAt); i++ {
		o.DeadAt[i].Group += dg
		o.DeadAt[i].Record += dr
	}
}

// Reset empties o, keeping its memory for reuse.
func (o *AggOutput) Reset() {
	clear(o.Accs)
	o.Accs = o.Accs[:0]
	clear(o.Dead)
	o.Dead = o.Dead[:0]
	o.DeadAt = o.DeadAt[:0]
	clear(o.Values)
	o.Values = o.Values[:0]
	o.Arena.Reset()
}

// rollback drops what was appended to o since it had na accumulators, nd
// dead letters and nv values.
func (o *AggOutput) rollback(na, nd, nv int) {
	clear(o.Accs[na:])
	o.Accs = o.Accs[:na]
	clear(o.Dead[nd:])
	o.Dead = o.Dead[:nd]
	o.DeadAt = o.DeadAt[:nd]
	clear(o.Values[nv:])
	o.Values = o.Values[:nv]
}

// aggExports are an instance's aggregate exports beside weir_agg_add,
// which is instance.op. result is weir_agg_result_ctx when the module
// exports it (withCtx), else weir_agg_result.
type aggExports struct {
	create, merge, result api.Function
	withCtx               bool
}

// aggWorker is a Worker's aggregate state.
type aggWorker struct {
	// initial is weir_agg_create's accumulator, copied when the worker's
	// first instance is made.
	initial []byte
	add     abi.AggAddOutputReader
	group   abi.AggGroupOutput
	values  abi.AggValueReader
	value   abi.AggValue
}

// aggCallRecords bounds the records of one weir_agg_add call. Tests lower
// it.
var aggCallRecords = abi.MaxAggCount

// aggInstantiated looks up the aggregate exports of the instance just made
// and, for the worker's first instance, calls weir_agg_create and keeps
// its accumulator. A failure there fails the instantiation with ErrInit.
func (w *Worker) aggInstantiated(ctx context.Context) error {
	cfg, inst := &w.p.cfg, w.inst
	inst.agg = aggExports{
		create: inst.mod.ExportedFunction(abi.ExportAggCreate),
		merge:  inst.mod.ExportedFunction(abi.ExportAggMerge),
		result: inst.mod.ExportedFunction(abi.ExportAggResult),
	}
	if f := inst.mod.ExportedFunction(abi.ExportAggResultCtx); f != nil {
		inst.agg.result, inst.agg.withCtx = f, true
	}
	if w.agg.initial != nil {
		return nil
	}
	inst.out.beginCall()
	if err := w.call(ctx, inst.agg.create); err != nil {
		return cfg.errorf(ErrInit, nil, "%s failed: %s", abi.ExportAggCreate, w.describe(err))
	}
	ptr, n := abi.Unpack(w.stack[0])
	acc, ok := inst.mem.Read(ptr, n)
	if !ok {
		return cfg.errorf(ErrInit, nil, "%s returned an accumulator (%d bytes at %d) outside the guest's %d bytes of memory",
			abi.ExportAggCreate, n, ptr, inst.mem.Size())
	}
	w.agg.initial = append(make([]byte, 0, len(acc)), acc...)
	return nil
}

// aggReady checks that w can make aggregate calls.
func (w *Worker) aggReady(ctx context.Context) error {
	cfg := &w.p.cfg
	switch {
	case w.closed:
		return cfg.errorf(ErrClosed, nil, "worker closed")
	case cfg.Op != abi.OpAggregate:
		return cfg.errorf(ErrConfig, nil, "aggregate calls need a plugin loaded as %s, not %s", abi.OpAggregate, cfg.Op)
	}
	if err := ctx.Err(); err != nil {
		return cfg.errorf(err, nil, "aggregate call not run")
	}
	return nil
}

// AggCreate returns the accumulator of a new group: the bytes the module's
// weir_agg_create returned when the worker was made. The ABI requires
// create to be pure, so the host calls it once per worker. The slice is
// shared by every call: do not modify it (AggAdd only reads it).
func (w *Worker) AggCreate(ctx context.Context) ([]byte, error) {
	if err := w.aggReady(ctx); err != nil {
		return nil, err
	}
	return w.agg.initial, nil
}

// AggAdd folds each group's records into the group's accumulator through
// the guest, and appends to out.Accs the new accumulators, one per group in
// group order, and to out.Dead the records that were rejected. Groups may
// be empty.
//
// A record the guest rejects is skipped (the guest folds the group's other
// records) and becomes a dead letter with Stage the operator and Reason
// "aggregate error: <message>".
//
// When the call fails (a trap, a WASI exit, a timeout, an output frame
// that breaks the ABI), nothing of it is kept: the instance is replaced
// and the call is run again one group at a time. A group that fails alone
// is run again one record at a time, threading its accumulator through: a
// record that fails alone becomes a dead letter naming the failure and
// leaves the accumulator unchanged, and the group's other records are
// folded in as if nothing had happened.
//
// A call carries at most abi.MaxAggCount groups and records; AggAdd splits
// larger inputs, and a larger group is folded over consecutive calls.
//
// A non-nil error is fatal, as for Process: a replacement instance could
// not be made, or ctx was canceled. out may then hold part of the results.
func (w *Worker) AggAdd(ctx context.Context, groups []AggGroup, out *AggOutput) error {
	if err := w.aggReady(ctx); err != nil {
		return err
	}
	total := 0
	for i := range groups {
		total += len(groups[i].Records)
	}
	if total > 0 {
		w.stats.batches.Add(1)
		w.stats.records.Add(uint64(total))
	}
	for base := 0; len(groups) > 0; {
		n, recs := 0, 0
		for n < len(groups) && n < abi.MaxAggCount && recs+len(groups[n].Records) <= aggCallRecords {
			recs += len(groups[n].Records)
			n++
		}
		var err error
		nd := len(out.Dead)
		if n == 0 {
			err, n = w.aggAddLarge(ctx, groups[0], out), 1
		} else {
			err = w.aggAdd(ctx, groups[:n], out)
		}
		if err != nil {
			return err
		}
		out.shiftDead(nd, base, 0)
		groups = groups[n:]
		base += n
	}
	return nil
}

// aggAddLarge folds a group of more than aggCallRecords records over
// consecutive calls.
func (w *Worker) aggAddLarge(ctx context.Context, g AggGroup, out *AggOutput) error {
	acc := g.Acc
	for rs, off := g.Records, 0; len(rs) > 0; {
		n := min(len(rs), aggCallRecords)
		na, nd := len(out.Accs), len(out.Dead)
		if err := w.aggAdd(ctx, []AggGroup{{Acc: acc, Records: rs[:n]}}, out); err != nil {
			return err
		}
		out.shiftDead(nd, 0, off)
		acc = out.Accs[na]
		out.Accs = out.Accs[:na]
		rs = rs[n:]
		off += n
	}
	out.Accs = append(out.Accs, acc)
	return nil
}

// aggAdd makes one add call for groups and, when it fails, recovers as
// AggAdd describes.
func (w *Worker) aggAdd(ctx context.Context, groups []AggGroup, out *AggOutput) error {
	na, nd, nv := len(out.Accs), len(out.Dead), len(out.Values)
	err := w.aggAddCall(ctx, groups, out)
	t, ok := err.(*trapError)
	if !ok {
		return err // nil or fatal
	}
	out.rollback(na, nd, nv)
	if len(groups) == 1 {
		return w.aggAddRecords(ctx, groups[0], t, out)
	}
	w.log.Warn("guest failed on an aggregate add call; running its groups one at a time",
		"reason", t.reason, "groups", len(groups))
	for i := range groups {
		if err := ctx.Err(); err != nil {
			return w.p.cfg.errorf(err, nil, "aggregate call interrupted")
		}
		na, nd, nv = len(out.Accs), len(out.Dead), len(out.Values)
		err := w.aggAddCall(ctx, groups[i:i+1], out)
		if t, ok := err.(*trapError); ok {
			out.rollback(na, nd, nv)
			if err := w.aggAddRecords(ctx, groups[i], t, out); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		out.shiftDead(nd, i, 0)
	}
	return nil
}

// aggAddRecords runs the group g, which failed alone with t, one record at
// a time.
func (w *Worker) aggAddRecords(ctx context.Context, g AggGroup, t *trapError, out *AggOutput) error {
	if len(g.Records) <= 1 {
		for i, r := range g.Records {
			w.aggDeadLetter(r, i, t, out)
		}
		out.Accs = append(out.Accs, g.Acc)
		return nil
	}
	w.log.Warn("guest failed on an aggregate group; running its records one at a time",
		"reason", t.reason, "records", len(g.Records))
	acc := g.Acc
	for i := range g.Records {
		if err := ctx.Err(); err != nil {
			return w.p.cfg.errorf(err, nil, "aggregate call interrupted")
		}
		na, nd, nv := len(out.Accs), len(out.Dead), len(out.Values)
		err := w.aggAddCall(ctx, []AggGroup{{Acc: acc, Records: g.Records[i : i+1]}}, out)
		if t, ok := err.(*trapError); ok {
			out.rollback(na, nd, nv)
			w.aggDeadLetter(g.Records[i], i, t, out)
			continue
		}
		if err != nil {
			return err
		}
		out.shiftDead(nd, 0, i)
		acc = out.Accs[na]
		out.Accs = out.Accs[:na]
	}
	out.Accs = append(out.Accs, acc)
	return nil
}

// aggDeadLetter dead-letters rec, record i of the group of the call, which
// the guest failed on alone with t.
func (w *Worker) aggDeadLetter(rec record.Record, i int, t *trapError, out *AggOutput) {
	out.Dead = append(out.Dead, record.DeadLetter{Record: rec, Stage: w.p.cfg.Operator, Reason: t.reason})
	out.DeadAt = append(out.DeadAt, AggIndex{Record: i})
	w.stats.trapped.Add(1)
	w.log.Warn("record dead-lettered: the guest failed on it alone",
		"origin", rec.Origin.String(), "reason", t.reason)
}

// aggAddCall makes one weir_agg_add call (weir_typed_agg_add for a typed
// module) for groups and appends its results to out. It returns nil, a *trapError (the instance has been
// dropped; out may hold partial results), or a fatal error.
func (w *Worker) aggAddCall(ctx context.Context, groups []AggGroup, out *AggOutput) error {
	if w.inst == nil {
		if err := w.instantiate(ctx); err != nil {
			return err
		}
	}
	var nrej int
	typed := w.p.decl != nil
	if typed {
		var err error
		if groups, nrej, err = w.typedAddFrame(groups, out); err != nil {
			return err
		}
	} else {
		w.frame = abi.AppendAggCount(w.frame[:0], len(groups))
		for i := range groups {
			g := &groups[i]
			w.frame = appendRecords(abi.AppendAggGroup(w.frame, g.Acc, len(g.Records)), g.Records)
		}
	}
	frame, err := w.aggCall(ctx, w.inst.op, w.frame)
	if err != nil {
		return err
	}
	nd := len(out.Dead)
	n, err := w.aggDecodeAdd(frame, groups, out)
	if err != nil {
		return w.trapped(ctx, &trapError{reason: "invalid output: " + err.Error(), cause: err})
	}
	if typed {
		w.typed.locateKept(out.DeadAt[nd:])
	}
	if nrej += n; nrej > 0 {
		w.stats.errors.Add(uint64(nrej))
	}
	w.aggDone(ctx)
	return nil
}

// aggDecodeAdd appends to out what an add output frame says about groups.
// It returns an *outputError at the first violation of the ABI.
func (w *Worker) aggDecodeAdd(frame []byte, groups []AggGroup, out *AggOutput) (nrejected int, err error) {
	r, g := &w.agg.add, &w.agg.group
	n, err := r.Reset(frame)
	if err != nil {
		return 0, &outputError{msg: "malformed add output frame", err: err}
	}
	if n != len(groups) {
		return 0, &outputError{msg: fmt.Sprintf("add output answers %d groups, but the call had %d", n, len(groups))}
	}
	for i := range groups {
		if _, err := r.Next(g); err != nil {
			return nrejected, &outputError{msg: "malformed add output frame", err: err}
		}
		recs := groups[i].Records
		if last := g.Errors.Last(); last >= len(recs) {
			return nrejected, &outputError{msg: fmt.Sprintf("add output rejects record %d of group %d, which has %d records", last, i, len(recs))}
		}
		if g.Errors.Len() > 0 {
			nrejected += g.Errors.Len()
			g.Errors.Each(func(index int, msg []byte) {
				out.Dead = append(out.Dead, record.DeadLetter{
					Record: recs[index],
					Stage:  w.p.cfg.Operator,
					Reason: abi.OpAggregate.String() + " error: " + guestText(msg, maxErrorMessage),
				})
				out.DeadAt = append(out.DeadAt, AggIndex{Group: i, Record: index})
			})
		}
		out.Accs = append(out.Accs, out.Arena.Copy(g.Acc))
	}
	if _, err := r.Next(g); err != nil {
		return nrejected, &outputError{msg: "malformed add output frame", err: err}
	}
	return nrejected, nil
}

// AggMerge merges each pair of accumulators through the guest, appending
// one AggValue per pair to out.Values, in order: the merged accumulator,
// or the guest's error. A failed call is recovered as AggAdd's are: the
// pairs are run again one at a time, and a pair that fails alone gets the
// failure's reason as its Err. A non-nil error is fatal, as for AggAdd.
func (w *Worker) AggMerge(ctx context.Context, pairs []AggPair, out *AggOutput) error {
	if err := w.aggReady(ctx); err != nil {
		return err
	}
	for len(pairs) > 0 {
		n := min(len(pairs), abi.MaxAggCount)
		if err := w.aggValues(ctx, pairs[:n], nil, nil, out); err != nil {
			return err
		}
		pairs = pairs[n:]
	}
	return nil
}

// AggResult turns each accumulator into its result value through the
// guest, appending one AggValue per accumulator to out.Values, in order: the
// value (nil when absent), or the guest's error. Failures are recovered as
// in AggMerge.
//
// ctxs is nil, or holds the context of each accumulator, in order: the
// group's key and window, which a module that exports
// weir_agg_result_ctx gets with its accumulator (ABI.md §12.5). With nil,
// such a module gets an empty context (no key, not windowed); a module
// without it gets the accumulators alone, through weir_agg_result.
func (w *Worker) AggResult(ctx context.Context, accs [][]byte, ctxs []AggContext, out *AggOutput) error {
	if err := w.aggReady(ctx); err != nil {
		return err
	}
	if ctxs != nil && len(ctxs) != len(accs) {
		return w.p.cfg.errorf(ErrConfig, nil, "AggResult has %d contexts for %d accumulators", len(ctxs), len(accs))
	}
	for len(accs) > 0 {
		n := min(len(accs), abi.MaxAggCount)
		var c []AggContext
		if ctxs != nil {
			c, ctxs = ctxs[:n], ctxs[n:]
		}
		if err := w.aggValues(ctx, nil, accs[:n], c, out); err != nil {
			return err
		}
		accs = accs[n:]
	}
	return nil
}

// aggValues makes one merge call (for pairs) or result call (for accs,
// with their contexts ctxs, nil for none; pairs or accs is nil) and, when
// it fails, runs the inputs one at a time.
func (w *Worker) aggValues(ctx context.Context, pairs []AggPair, accs [][]byte, ctxs []AggContext, out *AggOutput) error {
	n := len(pairs) + len(accs)
	nv := len(out.Values)
	err := w.aggValuesCall(ctx, pairs, accs, ctxs, out)
	t, ok := err.(*trapError)
	if !ok {
		return err
	}
	out.rollback(len(out.Accs), len(out.Dead), nv)
	if n == 1 {
		out.Values = append(out.Values, AggValue{Err: t.reason})
		return nil
	}
	w.log.Warn("guest failed on an aggregate call; running its inputs one at a time",
		"reason", t.reason, "inputs", n)
	for i := range n {
		if err := ctx.Err(); err != nil {
			return w.p.cfg.errorf(err, nil, "aggregate call interrupted")
		}
		nv = len(out.Values)
		var err error
		switch {
		case pairs != nil:
			err = w.aggValuesCall(ctx, pairs[i:i+1], nil, nil, out)
		case ctxs != nil:
			err = w.aggValuesCall(ctx, nil, accs[i:i+1], ctxs[i:i+1], out)
		default:
			err = w.aggValuesCall(ctx, nil, accs[i:i+1], nil, out)
		}
		if t, ok := err.(*trapError); ok {
			out.rollback(len(out.Accs), len(out.Dead), nv)
			out.Values = append(out.Values, AggValue{Err: t.reason})
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// aggValuesCall makes one weir_agg_merge call (for pairs) or result call
// (for accs: weir_agg_result_ctx, with ctxs or empty contexts, when the
// module exports it, else weir_agg_result) and appends its answers to
// out.Values. It returns nil, a *trapError, or a fatal error.
func (w *Worker) aggValuesCall(ctx context.Context, pairs []AggPair, accs [][]byte, ctxs []AggContext, out *AggOutput) error {
	if w.inst == nil {
		if err := w.instantiate(ctx); err != nil {
			return err
		}
	}
	merge := pairs != nil
	var f []byte
	var fn api.Function
	if merge {
		f = abi.AppendAggCount(w.frame[:0], len(pairs))
		for _, p := range pairs {
			f = abi.AppendAcc(abi.AppendAcc(f, p.A), p.B)
		}
		fn = w.inst.agg.merge
	} else {
		f = abi.AppendAggCount(w.frame[:0], len(accs))
		switch {
		case !w.inst.agg.withCtx:
			for _, a := range accs {
				f = abi.AppendAcc(f, a)
			}
		case ctxs != nil:
			for i, a := range accs {
				f = abi.AppendAccContext(f, ctxs[i], a)
			}
		default:
			for _, a := range accs {
				f = abi.AppendAccContext(f, AggContext{}, a)
			}
		}
		fn = w.inst.agg.result
	}
	w.frame = f
	frame, err := w.aggCall(ctx, fn, f)
	if err != nil {
		return err
	}
	if err := w.aggDecodeValues(frame, merge, w.inst.agg.withCtx, len(pairs)+len(accs), out); err != nil {
		return w.trapped(ctx, &trapError{reason: "invalid output: " + err.Error(), cause: err})
	}
	w.aggDone(ctx)
	return nil
}

// aggDecodeValues appends to out.Values the n answers of a value output
// frame. It returns an *outputError at the first violation of the ABI.
func (w *Worker) aggDecodeValues(frame []byte, merge, withCtx bool, n int, out *AggOutput) error {
	r, v := &w.agg.values, &w.agg.value
	call := abi.ExportAggResult
	switch {
	case merge:
		call = abi.ExportAggMerge
	case withCtx:
		call = abi.ExportAggResultCtx
	}
	count, err := r.Reset(frame)
	if err != nil {
		return &outputError{msg: "malformed " + call + " output frame", err: err}
	}
	if count != n {
		return &outputError{msg: fmt.Sprintf("%s output has %d entries for %d inputs", call, count, n)}
	}
	for i := 0; ; i++ {
		ok, err := r.Next(v)
		if err != nil {
			return &outputError{msg: "malformed " + call + " output frame", err: err}
		}
		if !ok {
			return nil
		}
		switch {
		case v.Status == abi.AggError:
			out.Values = append(out.Values, AggValue{
				Err: abi.OpAggregate.String() + " error: " + guestText(v.Message, maxErrorMessage),
			})
		case merge && v.Value == nil:
			return &outputError{msg: fmt.Sprintf("%s output entry %d is an absent accumulator", call, i)}
		default:
			out.Values = append(out.Values, AggValue{Value: out.Arena.Copy(v.Value)})
		}
	}
}

// aggCall writes input into the guest's input region, calls fn with it,
// and returns the output frame, a view of guest memory valid until the
// next call. Errors are a *trapError (the instance has been dropped) or a
// fatal error.
func (w *Worker) aggCall(ctx context.Context, fn api.Function, input []byte) ([]byte, error) {
	inst, cfg := w.inst, &w.p.cfg
	inst.out.beginCall()
	ptr, err := w.writeInput(ctx, input)
	if err == nil {
		w.stack[0], w.stack[1] = uint64(ptr), uint64(len(input))
		err = w.call(ctx, fn)
	}
	w.stats.calls.Add(1)
	if err != nil {
		if interrupted(ctx, err) {
			w.dropInstance(ctx)
			return nil, cfg.errorf(ctx.Err(), nil, "aggregate call interrupted")
		}
		return nil, w.trapped(ctx, err)
	}
	optr, olen := abi.Unpack(w.stack[0])
	frame, ok := inst.mem.Read(optr, olen)
	if !ok {
		return nil, w.trapped(ctx, &trapError{reason: fmt.Sprintf(
			"invalid output: the output frame (%d bytes at %d) lies outside the guest's %d bytes of memory",
			olen, optr, inst.mem.Size())})
	}
	return frame, nil
}

// aggDone counts a successful call towards the weir_gc cadence.
func (w *Worker) aggDone(ctx context.Context) {
	w.sinceGC++
	if w.sinceGC >= abi.GCEveryCalls {
		w.collect(ctx)
	}
}
