package wasm

import (
	"context"
	"errors"
	"sort"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/fields"
	"github.com/weir-stream/weir/host/internal/record"
)

// The typed convention (ABI.md §14, package fields): a module exporting
// abi.ExportFields declares the JSON fields it reads; the host extracts
// them from each record, passes the batch as a typed batch frame to the
// operator's typed export, and applies the patches of the typed output
// frame to the records' values. Load compiles the declaration into
// Plugin.decl; each Worker keeps its own Extractor and Patcher.

// typedWorker is a Worker's typed-convention state, reused from call to
// call. Like the Worker, it is used by one goroutine at a time.
type typedWorker struct {
	x       *fields.Extractor // made on the first call
	patcher fields.Patcher
	kept    []record.Record // the records of the typed batch frame
	keptBuf []record.Record // kept, when some records are rejected
	spans   []fields.Span   // where their declared fields lie (Batch.Spans)
	decl    *fields.Decl
	all     []record.Record // an add call's records, group after group
	groups  []AggGroup      // and its groups, of kept records
	// typedAddFrame's: where each group starts in all and in kept, and
	// the index in all of each kept record (empty when all are kept).
	aggStarts, aggKeptAt, aggKept []int
	reader                        abi.TypedOutputReader
	entry                         abi.TypedEntry
}

// selectConvention asks the first instance w of a module exporting
// abi.ExportFields for its declaration: one that declares fields selects
// the typed convention, whose exports w then calls, and the empty region
// leaves the module a raw one. Either way the module must export what
// its convention needs for the operator; s is its shape.
func (p *Plugin) selectConvention(ctx context.Context, w *Worker, s *shape) error {
	d, err := w.declareFields(ctx)
	if err != nil {
		return err
	}
	if msg := s.conventionProblem(p.cfg.Op, d != nil); msg != "" {
		return p.cfg.errorf(ErrInvalidModule, nil, "not a valid weir ABI v%d %s plugin: %s", abi.Version, p.cfg.Op, msg)
	}
	if d != nil {
		p.decl = d
		w.opExport = p.cfg.Op.TypedExport()
		w.inst.op = w.inst.mod.ExportedFunction(w.opExport)
	}
	return nil
}

// declareFields calls abi.ExportFields on the first instance and compiles
// the declaration it returns, or returns nil for the empty region. A
// failure of the call fails the load with ErrInit; an invalid declaration
// with ErrInvalidModule, naming the field.
func (w *Worker) declareFields(ctx context.Context) (*fields.Decl, error) {
	cfg, inst := &w.p.cfg, w.inst
	inst.out.beginCall()
	if err := w.call(ctx, inst.mod.ExportedFunction(abi.ExportFields)); err != nil {
		return nil, cfg.errorf(ErrInit, nil, "%s failed: %s", abi.ExportFields, w.describe(err))
	}
	ptr, n := abi.Unpack(w.stack[0])
	if n == 0 {
		return nil, nil
	}
	frame, ok := inst.mem.Read(ptr, n)
	if !ok {
		return nil, cfg.errorf(ErrInvalidModule, nil, "%s returned a declaration (%d bytes at %d) outside the guest's %d bytes of memory",
			abi.ExportFields, n, ptr, inst.mem.Size())
	}
	d, err := fields.Compile(frame)
	if err != nil {
		return nil, cfg.errorf(ErrInvalidModule, err, "invalid field declaration from %s", abi.ExportFields)
	}
	return d, nil
}

// declared returns the fields the module declares, or nil for a raw
// module.
func (p *Plugin) declared() []abi.FieldDecl {
	if p.decl == nil {
		return nil
	}
	fs := make([]abi.FieldDecl, p.decl.Len())
	for k := range fs {
		fs[k] = p.decl.Field(k)
	}
	return fs
}

// extract extracts the declared fields of in (fields.Extractor.Extract)
// and sets t.kept to the records it keeps, in order: in itself when it
// keeps them all. The result aliases the Extractor's buffers until the
// next call.
func (t *typedWorker) extract(d *fields.Decl, in []record.Record) (fields.Batch, error) {
	if t.x == nil {
		t.x, t.decl = fields.NewExtractor(d), d
	}
	b, err := t.x.Extract(in)
	if err != nil {
		return b, err
	}
	t.spans = b.Spans
	if len(b.Rejects) == 0 {
		t.kept = in
		return b, nil
	}
	clear(t.keptBuf) // keep no record bytes alive between calls
	t.keptBuf = t.keptBuf[:0]
	for _, i := range b.Kept {
		t.keptBuf = append(t.keptBuf, in[i])
	}
	t.kept = t.keptBuf
	return b, nil
}

// runTyped is run for a typed module: the records whose fields break the
// declaration are dead letters, and the others go to the guest as a typed
// batch frame, whose record indexes are also those of state calls.
func (w *Worker) runTyped(ctx context.Context, in []record.Record, out *record.Output) error {
	t := &w.typed
	b, err := t.extract(w.p.decl, in)
	if err != nil {
		return w.p.cfg.errorf(ErrConfig, err, "cannot pass the batch as a typed batch")
	}
	for _, rj := range b.Rejects {
		out.Dead = append(out.Dead, w.dec.deadLetter(&in[rj.Index], rj.Reason))
	}
	if len(t.kept) == 0 {
		w.stats.errors.Add(uint64(len(b.Rejects)))
		return nil
	}
	kept := t.kept
	t.kept = nil // it may be in, the caller's
	frame, err := w.batchCall(ctx, kept, b.Frame)
	if err != nil {
		return err
	}
	nrej, err := t.decode(&w.dec, frame, kept, out, w.rejected)
	return w.batchDone(ctx, len(b.Rejects)+nrej, err)
}

// decode is decoder.decode for a typed output frame (abi.TypedOutputReader,
// abi.CheckTypedOrder): keep and error entries as there, and a patch entry
// emits its input with the patch applied to its value (or to {}, for
// abi.PatchFlagNew), and its key and timestamp where flagged. A patch that
// cannot apply to its input's value rejects the input with the reason;
// one whose raw value is not JSON breaks the ABI.
func (t *typedWorker) decode(d *decoder, frame []byte, in []record.Record, out *record.Output, rejected []bool) (int, error) {
	if _, err := t.reader.Reset(frame); err != nil {
		return 0, &outputError{msg: "malformed typed output frame", err: err}
	}
	e := &t.entry
	a := d.begin(in, out, rejected)
	for {
		ok, err := t.reader.Next(e)
		if err != nil {
			return a.nrej, &outputError{msg: "malformed typed output frame", err: err}
		}
		if !ok {
			break
		}
		live, err := d.next(&a, e.Index, abi.CheckTypedOrder(d.op, len(in), a.prev, e), typedEntrySize(e))
		if err != nil {
			return a.nrej, err
		}
		if !live {
			continue
		}
		switch e.Kind {
		case abi.KindKeep:
			out.Records = append(out.Records, in[e.Index])
		case abi.KindError:
			d.reject(&a, e.Index, guestText(e.Message, maxErrorMessage))
		case abi.KindPatch:
			err = t.patch(d, &a, e)
		}
		if err != nil {
			return a.nrej, err
		}
	}
	return a.nrej, d.end(&a)
}

// emptyObject is the value a patch with abi.PatchFlagNew starts from.
var emptyObject = []byte("{}")

// patch appends the record the patch entry e emits, copying its value out
// of the Patcher's buffers, or rejects its input when the patch cannot
// apply.
func (t *typedWorker) patch(d *decoder, a *answers, e *abi.TypedEntry) error {
	src := &a.in[e.Index]
	var v []byte
	var err error
	if e.Flags&abi.PatchFlagNew != 0 {
		v, err = t.patcher.ApplyPatch(emptyObject, e.Ops)
	} else {
		n := t.decl.Len()
		v, err = t.patcher.ApplyPatchAt(src.Value, e.Ops, t.decl, t.spans[e.Index*n:(e.Index+1)*n])
	}
	if err != nil {
		return patchFailed(d, a, e.Index, err)
	}
	if err := d.charge(a, len(v)); err != nil {
		return err
	}
	out := a.out
	r := record.Record{Key: src.Key, Value: v, Timestamp: src.Timestamp, Headers: src.Headers, Origin: src.Origin}
	if e.Ops.Len() > 0 || e.Flags&abi.PatchFlagNew != 0 {
		r.Value = out.Arena.Copy(v) // v aliases the Patcher, or emptyObject
	}
	if e.Flags&abi.PatchFlagKey != 0 {
		r.Key = out.Arena.Copy(e.Key)
	}
	if e.Flags&abi.PatchFlagTimestamp != 0 {
		r.Timestamp = e.Time
	}
	out.Records = append(out.Records, r)
	return nil
}

// patchFailed handles a patch of input index that did not apply: a raw
// value that is not JSON is a guest bug (an *outputError); anything else
// is about the record, which is rejected with the reason.
func patchFailed(d *decoder, a *answers, index int, err error) error {
	var pe *fields.PatchError
	if errors.Is(err, fields.ErrBadRawValue) || !errors.As(err, &pe) {
		return &outputError{msg: "invalid patch", err: err}
	}
	d.reject(a, index, pe.Error())
	return nil
}

// typedEntrySize is what the typed entry e costs the host before its
// patched value, which patch charges: its record and the bytes copied for
// it.
func typedEntrySize(e *abi.TypedEntry) int {
	n := recordSize
	switch e.Kind {
	case abi.KindPatch:
		if e.Flags&abi.PatchFlagKey != 0 {
			n += len(e.Key)
		}
	case abi.KindError:
		n += min(len(e.Message), maxErrorMessage)
	}
	return n
}

// typedAddFrame writes into w.frame the typed add frame (ABI.md §14.5) of
// groups: their records whose fields break the declaration become dead
// letters in out, and the others the typed batch. It returns the groups
// of the records kept, which the add output frame answers for, and the
// number of dead letters.
func (w *Worker) typedAddFrame(groups []AggGroup, out *AggOutput) ([]AggGroup, int, error) {
	t := &w.typed
	clear(t.all)
	t.all = t.all[:0]
	for i := range groups {
		t.all = append(t.all, groups[i].Records...)
	}
	b, err := t.extract(w.p.decl, t.all)
	if err != nil {
		return nil, 0, w.p.cfg.errorf(ErrConfig, err, "cannot pass the records as a typed batch")
	}
	t.aggStarts = t.aggStarts[:0]
	for i, end := 0, 0; i < len(groups); i++ {
		t.aggStarts = append(t.aggStarts, end)
		end += len(groups[i].Records)
	}
	for _, rj := range b.Rejects {
		out.Dead = append(out.Dead, w.dec.deadLetter(&t.all[rj.Index], rj.Reason))
		g := sort.Search(len(groups), func(g int) bool { return t.aggStarts[g] > rj.Index }) - 1
		out.DeadAt = append(out.DeadAt, AggIndex{Group: g, Record: rj.Index - t.aggStarts[g]})
	}
	clear(t.groups)
	t.groups = t.groups[:0]
	t.aggKept, t.aggKeptAt = t.aggKept[:0], t.aggKeptAt[:0]
	if len(b.Rejects) > 0 {
		t.aggKept = append(t.aggKept, b.Kept...)
	}
	f := abi.AppendAggCount(w.frame[:0], len(groups))
	end, k := 0, 0 // the groups' end in t.all, and in t.kept
	for i := range groups {
		end += len(groups[i].Records)
		first := k
		for k < len(b.Kept) && b.Kept[k] < end {
			k++
		}
		t.aggKeptAt = append(t.aggKeptAt, first)
		t.groups = append(t.groups, AggGroup{Acc: groups[i].Acc, Records: t.kept[first:k]})
		f = abi.AppendAggGroup(f, groups[i].Acc, k-first)
	}
	for len(f)%abi.TypedAlign != 0 {
		f = append(f, 0)
	}
	w.frame = append(f, b.Frame...)
	return t.groups, len(b.Rejects), nil
}

// locateKept turns the locations at, of records in the groups of kept
// records that typedAddFrame returned, into their locations in the groups
// it was given.
func (t *typedWorker) locateKept(at []AggIndex) {
	if len(t.aggKept) == 0 {
		return // every record was kept
	}
	for i := range at {
		g := at[i].Group
		at[i].Record = t.aggKept[t.aggKeptAt[g]+at[i].Record] - t.aggStarts[g]
	}
}
