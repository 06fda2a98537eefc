package window

import (
	"slices"

	"github.com/weir-stream/weir/host/internal/record"
)

// Batched adds. A time window (tumbling, sliding, cumulate) whose Custom
// aggregator is a BatchAggregator, keeping every key in memory, adds the
// records of a Process call in two steps: addTimeBatch first assigns each
// record to its group, its (key, pane), rejecting late, out-of-range and
// unreadable records as addTime does; then one AddBatch call adds every
// group's records, in input order, and the results are applied as if the
// records had been added one by one: a pane is created only when one of
// its records is accepted, the built-in aggregates of a mixed window add
// the accepted records only, keys and panes change (Operator.changed) in
// the order of their first accepted record, and dead letters keep the
// input order. Nothing evicts keys or removes panes between the steps
// (bounded mode, which could, does not batch), so panes are found again
// by key state and start.

// addBatch is the Operator's state for batched adds, reused from call to
// call.
type addBatch struct {
	agg    BatchAggregator
	byKS   map[*keyState]int32 // batchKey of keys in memory
	byKey  map[string]int32    // batchKey of keys not (yet) in memory
	nilKey int32               // batchKey of the nil key, or -1
	keys   []batchKey
	groups []batchGroup
	recs   []batchRec  // the records added, in input order
	dead   []batchDead // the records rejected
	order  []int32     // groups with an accepted record, in apply order
	add    []AddGroup
	flat   []record.Record // the groups' records, group after group
	errs   []error
	idx    []int32 // input index of each record of flat
}

// batchKey is a record key of the call.
type batchKey struct {
	ks   *keyState // nil until the key is in memory
	key  []byte    // the key, as an input record holds it
	head int32     // the key's first group; groups link by next
}

// batchGroup is the records of the call of one key and pane.
type batchGroup struct {
	key    int32
	next   int32 // the key's next group, or -1
	p      int64 // pane start
	acc    []byte
	off, n int32 // the group's records: flat[off:off+n]
	fill   int32
	first  int32 // input index of the first accepted record, or -1
	exists bool  // the pane existed when the call began
}

type batchRec struct{ i, g int32 }

type batchDead struct {
	i      int32
	reason string
}

// reset empties b for a new call.
func (b *addBatch) reset() {
	if b.byKS == nil {
		b.byKS, b.byKey = make(map[*keyState]int32), make(map[string]int32)
	}
	clear(b.byKS)
	clear(b.byKey)
	b.nilKey = -1
	clear(b.keys)
	b.keys = b.keys[:0]
	clear(b.groups)
	b.groups = b.groups[:0]
	b.recs = b.recs[:0]
	clear(b.dead)
	b.dead = b.dead[:0]
	b.order = b.order[:0]
	clear(b.add)
	b.add = b.add[:0]
	clear(b.flat)
	b.flat = b.flat[:0]
	clear(b.errs)
	b.errs = b.errs[:0]
	b.idx = b.idx[:0]
}

// addTimeBatch adds in to its panes through one AddBatch call.
func (o *Operator) addTimeBatch(in []record.Record, out *record.Output) error {
	b := &o.batch
	b.reset()
	defer b.reset() // keep no record or accumulator alive between calls
	for i := range in {
		rec := &in[i]
		p, reason := o.timePane(rec)
		if reason != "" {
			b.dead = append(b.dead, batchDead{int32(i), reason})
			continue
		}
		g := o.batchGroup(rec, p)
		b.recs = append(b.recs, batchRec{int32(i), g})
		b.groups[g].n++
	}
	if len(b.recs) > 0 {
		o.applyBatch(in)
	}
	slices.SortStableFunc(b.dead, func(x, y batchDead) int { return int(x.i - y.i) })
	for _, d := range b.dead {
		o.dead(&in[d.i], d.reason, out)
	}
	return nil
}

// batchGroup returns the group of rec, whose pane starts at p, making it.
func (o *Operator) batchGroup(rec *record.Record, p int64) int32 {
	b := &o.batch
	ks := o.lookup(rec.Key)
	var k int32
	var ok bool
	switch {
	case ks != nil:
		k, ok = b.byKS[ks]
	case rec.Key == nil:
		k, ok = b.nilKey, b.nilKey >= 0
	default:
		k, ok = b.byKey[string(rec.Key)]
	}
	if !ok {
		k = int32(len(b.keys))
		b.keys = append(b.keys, batchKey{ks: ks, key: rec.Key, head: -1})
		switch {
		case ks != nil:
			b.byKS[ks] = k
		case rec.Key == nil:
			b.nilKey = k
		default:
			b.byKey[string(rec.Key)] = k
		}
	}
	bk := &b.keys[k]
	for g := bk.head; g >= 0; g = b.groups[g].next {
		if b.groups[g].p == p {
			return g
		}
	}
	g := batchGroup{key: k, next: bk.head, p: p, first: -1}
	if ks != nil {
		if i, found := ks.find(p); found {
			g.acc, g.exists = ks.units[i].acc.custom, true
		}
	}
	if !g.exists {
		g.acc = o.custom.Create()
	}
	bk.head = int32(len(b.groups))
	b.groups = append(b.groups, g)
	return bk.head
}

// applyBatch adds the records collected, through one AddBatch call, and
// applies its results.
func (o *Operator) applyBatch(in []record.Record) {
	b := &o.batch
	// Lay the records out group after group, in input order.
	var off int32
	for g := range b.groups {
		b.groups[g].off = off
		off += b.groups[g].n
	}
	b.flat = slices.Grow(b.flat, int(off))[:off]
	b.idx = slices.Grow(b.idx, int(off))[:off]
	b.errs = slices.Grow(b.errs, int(off))[:off]
	for _, r := range b.recs {
		g := &b.groups[r.g]
		k := g.off + g.fill
		g.fill++
		b.flat[k], b.idx[k] = in[r.i], r.i
	}
	for g := range b.groups {
		gr := &b.groups[g]
		b.add = append(b.add, AddGroup{Acc: gr.acc, Records: b.flat[gr.off : gr.off+gr.n], Errs: b.errs[gr.off : gr.off+gr.n]})
	}
	if err := b.agg.AddBatch(b.add); err != nil {
		// As Add's errors: every record is rejected.
		for k := range b.errs {
			b.errs[k] = err
		}
	} else {
		for g := range b.groups {
			b.groups[g].acc = b.add[g].Acc
		}
	}
	for g := range b.groups {
		gr := &b.groups[g]
		for k := gr.off; k < gr.off+gr.n; k++ {
			if err := b.errs[k]; err != nil {
				b.dead = append(b.dead, batchDead{b.idx[k], "aggregate: " + err.Error()})
			} else if gr.first < 0 {
				gr.first = b.idx[k]
			}
		}
		if gr.first >= 0 {
			b.order = append(b.order, int32(g))
		}
	}
	slices.SortFunc(b.order, func(x, y int32) int { return int(b.groups[x].first - b.groups[y].first) })
	for _, g := range b.order {
		o.applyGroup(&b.groups[g], in)
	}
}

// applyGroup applies to its pane the result of group g, one of whose
// records was accepted.
func (o *Operator) applyGroup(g *batchGroup, in []record.Record) {
	b := &o.batch
	bk := &b.keys[g.key]
	if bk.ks == nil {
		bk.ks = o.create(bk.key)
	}
	ks := bk.ks
	i, found := ks.find(g.p)
	var a *acc
	if found {
		a = &ks.units[i].acc
		a.custom = g.acc
	} else {
		na := acc{custom: g.acc}
		if o.mixed {
			na.vals = o.newVals()
		}
		o.insertPane(ks, i, g.p, na)
		a = &ks.units[i].acc
	}
	if o.mixed {
		for k := g.off; k < g.off+g.n; k++ {
			if b.errs[k] != nil {
				continue
			}
			rec := &in[b.idx[k]]
			o.read(rec) // it read before
			for j := range o.specs {
				a.vals[j].add(&o.specs[j], &o.inputs[j], rec.Timestamp)
			}
		}
	}
	if found {
		o.changed(ks, &ks.units[i])
	}
}
