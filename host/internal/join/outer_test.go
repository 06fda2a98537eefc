package join

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// The outer-join tests drive the operator with generated inputs and compare
// everything it emits with a brute-force reference: pairs, null-padded
// records (and the watermark that emits each), and late records.

// genRec is a generated input record.
type genRec struct {
	side      byte // sideLeft or sideRight
	key       string
	ts        int64
	partition int32
	offset    int64
	value     string // JSON
}

// event is one step of a generated input: a record, or a watermark.
type event struct {
	rec *genRec
	wm  int64
}

// testKeys are the generated inputs' keys: ASCII, empty, Unicode (Cyrillic,
// CJK, an emoji, a combining accent beside its precomposed form) and JSON's
// special characters. Each fourth key gets no records at all, the next
// left ones only, the next right ones only.
var testKeys = func() []string {
	base := []string{"", "a", "ключ", "键", "🔑", "e\u0301", "é", `q"uote`, `back\slash`, "tab\t", "a b", "Ω≈ç√"}
	for i := range 36 {
		base = append(base, fmt.Sprintf("k%02d", i))
	}
	return base
}()

const (
	keyBoth = iota
	keyNone
	keyLeftOnly
	keyRightOnly
)

func keyMode(i int) int { return i % 4 }

// genEvents generates n records on testKeys with event times rising by 1 ms
// every 8 records or so (many ties), each up to disorder ms earlier than that
// (out of order), and a watermark every few records at the highest time
// seen minus disorder minus 1, so that no record is behind the watermark
// when it comes; with stragglers, about 3% of the records come from up to
// 80 ms behind the watermark, which the join takes or refuses as late. The
// last event is the final watermark of a bounded input.
func genEvents(seed uint64, n int, disorder int64, stragglers bool) []event {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var evs []event
	base, maxSeen, wm := int64(-60), int64(math.MinInt64), int64(math.MinInt64)
	offsets := map[byte]int64{}
	nextWM := 1 + r.IntN(20)
	for i := range n {
		var k int
		for {
			k = r.IntN(len(testKeys))
			if keyMode(k) != keyNone {
				break
			}
		}
		side := byte(sideLeft)
		switch keyMode(k) {
		case keyRightOnly:
			side = sideRight
		case keyBoth:
			if r.IntN(2) == 1 {
				side = sideRight
			}
		}
		if r.IntN(8) == 0 {
			base++
		}
		ts := base - r.Int64N(disorder+1)
		if stragglers && wm > math.MinInt64 && r.IntN(32) == 0 {
			ts = wm - r.Int64N(80)
		}
		maxSeen = max(maxSeen, ts)
		offsets[side]++
		v, _ := json.Marshal(map[string]any{"i": i, "k": testKeys[k], "s": string(side)})
		evs = append(evs, event{rec: &genRec{side: side, key: testKeys[k], ts: ts, partition: int32(r.IntN(3)),
			offset: offsets[side], value: string(v)}})
		if nextWM--; nextWM == 0 {
			nextWM = 1 + r.IntN(20)
			if w := maxSeen - disorder - 1; w > wm {
				wm = w
				evs = append(evs, event{wm: wm})
			}
		}
	}
	return append(evs, event{wm: math.MaxInt64})
}

// joinCase is a join's configuration, without its kind and store, and the
// number of records to generate for it (fewer for a regular join, which
// pairs every two records of a key).
type joinCase struct {
	name    string
	cfg     Config
	records int
}

var joinCases = []joinCase{
	{"interval", Config{Bounded: true, Lower: -10, Upper: 5}, 3000},
	{"interval after", Config{Bounded: true, Lower: 3, Upper: 12}, 3000},
	{"interval before", Config{Bounded: true, Lower: -3, Upper: -1}, 3000},
	{"window", Config{Window: 10}, 3000},
	{"regular", Config{}, 1000},
	{"regular with ttl", Config{TTL: 40}, 2000},
}

var kinds = []string{Inner, LeftOuter, RightOuter, FullOuter}

// outRow is an output record as the tests compare it: its key, value,
// event time and origin, and for a padded record the index of the
// watermark that emitted it (-1 for a pair, which comes with its later
// record).
type outRow struct {
	key, value string
	ts         int64
	source     string
	partition  int32
	offset     int64
	atWM       int
}

func (r outRow) String() string {
	return fmt.Sprintf("%q %s @%d from %s[%d] %d wm#%d", r.key, r.value, r.ts, r.source, r.partition, r.offset, r.atWM)
}

func (r outRow) compare(o outRow) int {
	return cmp.Or(strings.Compare(r.key, o.key), strings.Compare(r.value, o.value), cmp.Compare(r.ts, o.ts),
		strings.Compare(r.source, o.source), cmp.Compare(r.partition, o.partition), cmp.Compare(r.offset, o.offset),
		cmp.Compare(r.atWM, o.atWM))
}

// result is what a join emitted for an input: its rows and the late records
// (dead letters), each as "side key ts offset", both sorted.
type result struct {
	rows []outRow
	late []string
}

func (r result) sort() result {
	slices.SortFunc(r.rows, outRow.compare)
	slices.Sort(r.late)
	return r
}

func lateID(side byte, key string, ts, offset int64) string {
	return fmt.Sprintf("%c %q %d %d", side, key, ts, offset)
}

// quote is a source name as JSON.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// reference computes the join of evs by brute force, event by event: a
// record is late when it is behind the watermark and the watermark has
// passed what it could match; otherwise it pairs with every earlier record of the other side and its
// key that is not late, not dropped yet (its own last match is after the
// watermark) and in its interval or window; an outer side's record that
// pairs with nothing is padded at the first watermark at or past its last
// match (for a join that keeps its records, the final one), or at once
// when the watermark has passed that already.
func reference(c Config, evs []event) result {
	type kept struct {
		*genRec
		last    int64 // the watermark that drops it
		matched bool
		gone    bool
	}
	last := func(g *genRec) int64 {
		switch {
		case c.Window > 0:
			return record.FloorDiv(g.ts, c.Window)*c.Window + c.Window - 1
		case c.TTL > 0:
			return g.ts + c.TTL
		case !c.Bounded:
			return math.MaxInt64
		case g.side == sideLeft:
			return g.ts + c.Upper
		default:
			return g.ts - c.Lower
		}
	}
	matches := func(a, b *genRec) bool {
		l, r := a, b
		if a.side == sideRight {
			l, r = b, a
		}
		switch {
		case c.Bounded:
			return r.ts >= l.ts+c.Lower && r.ts <= l.ts+c.Upper
		case c.Window > 0:
			return record.FloorDiv(l.ts, c.Window) == record.FloorDiv(r.ts, c.Window)
		}
		return true
	}
	expiring := c.Bounded || c.Window > 0 || c.TTL > 0
	var res result
	var all []*kept
	wm, wmIndex := int64(math.MinInt64), -1
	source := func(side byte) string {
		if side == sideLeft {
			return c.Left
		}
		return c.Right
	}
	pad := func(k *kept) {
		v := "{" + quote(c.Left) + ":" + k.value + "," + quote(c.Right) + ":null}"
		if k.side == sideRight {
			v = "{" + quote(c.Left) + ":null," + quote(c.Right) + ":" + k.value + "}"
		}
		res.rows = append(res.rows, outRow{key: k.key, value: v, ts: k.ts,
			source: source(k.side), partition: k.partition, offset: k.offset, atWM: wmIndex})
	}
	for _, ev := range evs {
		if ev.rec == nil {
			if ev.wm <= wm {
				continue
			}
			wm = ev.wm
			wmIndex++
			for _, k := range all {
				if k.gone || k.last > wm {
					continue
				}
				if !expiring && wm != math.MaxInt64 {
					continue
				}
				if !k.matched && outerSide(c.Kind, k.side) {
					pad(k)
				}
				if expiring {
					k.gone = true
				} else {
					k.matched = true // padded once, kept
				}
			}
			continue
		}
		g := ev.rec
		n := &kept{genRec: g, last: last(g)}
		if expiring && n.last <= wm && g.ts <= wm {
			res.late = append(res.late, lateID(g.side, g.key, g.ts, g.offset))
			continue
		}
		for _, k := range all {
			if k.gone || k.key != g.key || k.side == g.side || !matches(k.genRec, g) {
				continue
			}
			k.matched, n.matched = true, true
			lv, rv := k.value, g.value
			if g.side == sideLeft {
				lv, rv = g.value, k.value
			}
			res.rows = append(res.rows, outRow{key: g.key, value: "{" + quote(c.Left) + ":" + lv + "," + quote(c.Right) + ":" + rv + "}",
				ts: max(k.ts, g.ts), source: source(g.side), partition: g.partition, offset: g.offset, atWM: -1})
		}
		if expiring && n.last <= wm {
			// Ahead of the watermark, its interval behind it: it is not
			// kept, and padded at once if it matched nothing.
			if !n.matched && outerSide(c.Kind, g.side) {
				at := wmIndex
				wmIndex = -1
				pad(n)
				wmIndex = at
			}
			continue
		}
		all = append(all, n)
	}
	return res.sort()
}

// timeReference is the join by event times alone, with no regard to
// arrival: every pair of records of a key in its interval or window (any
// pair, for a regular join), and each record of an outer side that has no
// pair. For inputs that never come behind the watermark it is what the
// join emits, and so a check on reference.
func timeReference(c Config, evs []event) (pairs, padded []string) {
	var recs []*genRec
	for _, ev := range evs {
		if ev.rec != nil {
			recs = append(recs, ev.rec)
		}
	}
	matched := map[*genRec]bool{}
	for _, l := range recs {
		if l.side != sideLeft {
			continue
		}
		for _, r := range recs {
			if r.side != sideRight || r.key != l.key {
				continue
			}
			if c.Bounded && (r.ts < l.ts+c.Lower || r.ts > l.ts+c.Upper) {
				continue
			}
			if c.Window > 0 && record.FloorDiv(l.ts, c.Window) != record.FloorDiv(r.ts, c.Window) {
				continue
			}
			matched[l], matched[r] = true, true
			pairs = append(pairs, l.value+r.value)
		}
	}
	for _, g := range recs {
		if !matched[g] && outerSide(c.Kind, g.side) {
			padded = append(padded, g.value)
		}
	}
	slices.Sort(pairs)
	slices.Sort(padded)
	return pairs, padded
}

// owner routes a key to one of par instances, as the engine's key_by does.
func owner(key []byte, par int) int {
	h := fnv.New32a()
	h.Write(key)
	return int(h.Sum32() % uint32(par))
}

// runJoin runs evs through par instances of the join c on store, each
// owning the keys owner gives it, the records between two watermarks in
// Process calls of at most batch records; every instance gets every
// watermark. With restartAt >= 0 the instances are replaced by new ones
// (on the same store, told the watermark they had, as a run restored from
// a checkpoint) after the restartAt-th watermark, and the new ones run on
// restartPar instances.
func runJoin(t *testing.T, c Config, store state.Store, evs []event, par, batch, restartAt, restartPar int) result {
	t.Helper()
	ctx := context.Background()
	newOps := func(par int, wm int64, restore bool) []*Operator {
		ops := make([]*Operator, par)
		for w := range par {
			cfg := c
			cfg.Store = store
			cfg.Owns = func(key []byte) bool { return owner(key, par) == w }
			o, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if restore {
				if err := o.Restore(ctx, wm, cfg.Owns); err != nil {
					t.Fatal(err)
				}
			}
			ops[w] = o
		}
		return ops
	}
	ops := newOps(par, 0, false)
	var res result
	collect := func(out *record.Output, atWM int) {
		for _, r := range out.Records {
			res.rows = append(res.rows, outRow{key: string(r.Key), value: string(r.Value), ts: r.Timestamp,
				source: r.Origin.Source, partition: r.Origin.Partition, offset: r.Origin.Offset, atWM: atWM})
		}
		for _, d := range out.Dead {
			if !strings.Contains(d.Reason, "late") {
				t.Fatalf("dead letter %q", d.Reason)
			}
			side := byte(sideLeft)
			if d.Record.Origin.Source == c.Right {
				side = sideRight
			}
			res.late = append(res.late, lateID(side, string(d.Record.Key), d.Record.Timestamp, d.Record.Origin.Offset))
		}
	}
	var pending []record.Record
	process := func() {
		for start := 0; start < len(pending); start += batch {
			chunk := pending[start:min(start+batch, len(pending))]
			parts := make([][]record.Record, len(ops))
			for _, r := range chunk {
				w := owner(r.Key, len(ops))
				parts[w] = append(parts[w], r)
			}
			for w, o := range ops {
				if len(parts[w]) == 0 {
					continue
				}
				var out record.Output
				if err := o.Process(ctx, parts[w], &out); err != nil {
					t.Fatal(err)
				}
				collect(&out, -1)
			}
		}
		pending = pending[:0]
	}
	wmIndex, last := -1, int64(math.MinInt64)
	for _, ev := range evs {
		if g := ev.rec; g != nil {
			src := c.Left
			if g.side == sideRight {
				src = c.Right
			}
			pending = append(pending, record.Record{Key: []byte(g.key), Value: []byte(g.value), Timestamp: g.ts,
				Origin: record.Origin{Source: src, Partition: g.partition, Offset: g.offset}})
			continue
		}
		process()
		if ev.wm <= last {
			continue
		}
		last = ev.wm
		wmIndex++
		for _, o := range ops {
			var out record.Output
			if err := o.OnWatermark(ctx, ev.wm, &out); err != nil {
				t.Fatal(err)
			}
			collect(&out, wmIndex)
		}
		if wmIndex == restartAt {
			ops = newOps(restartPar, ev.wm, true)
		}
	}
	process()
	return res.sort()
}

// TestOuterJoinReference runs every join kind (inner, left, right, full)
// of interval, window and regular joins (with and without a TTL) on
// generated inputs, on one and two instances and with several batch
// sizes, and requires exactly the reference's pairs, padded records (each
// at the watermark that passes its last match) and late records. Without
// stragglers, the reference must also be the join by event time alone.
func TestOuterJoinReference(t *testing.T) {
	for _, stragglers := range []bool{false, true} {
		for i, jc := range joinCases {
			evs := genEvents(uint64(2*i)+map[bool]uint64{false: 1, true: 2}[stragglers], jc.records, 8, stragglers)
			for _, kind := range kinds {
				c := jc.cfg
				c.Name, c.Left, c.Right, c.Kind = "j", "a", "p", kind
				want := reference(c, evs)
				name := jc.name + "/" + kind
				if stragglers {
					name += "/stragglers"
				}
				t.Run(name, func(t *testing.T) {
					checkReference(t, c, evs, want, stragglers)
					// One record a call, a few, many, and all between two
					// watermarks; parallelism 2 with a few and all.
					for _, run := range []struct{ par, batch int }{{1, 1}, {1, 64}, {1, 1 << 20}, {2, 7}, {2, 1 << 20}} {
						store := state.NewMemory()
						got := runJoin(t, c, store, evs, run.par, run.batch, -1, 0)
						compare(t, fmt.Sprintf("parallelism %d, batch %d", run.par, run.batch), got, want)
						checkFinalState(t, c, store)
					}
				})
			}
		}
	}
}

// checkReference checks the reference on itself: it pairs and pads some
// records (of every key kind), refuses the late ones only with stragglers,
// and without them is the join by event time.
func checkReference(t *testing.T, c Config, evs []event, want result, stragglers bool) {
	t.Helper()
	var pairs, padded []outRow
	for _, row := range want.rows {
		if strings.Contains(row.value, ":null") {
			padded = append(padded, row)
		} else {
			pairs = append(pairs, row)
		}
	}
	t.Logf("%d pairs, %d padded, %d late", len(pairs), len(padded), len(want.late))
	if len(pairs) < 100 {
		t.Fatalf("only %d pairs: a weak test", len(pairs))
	}
	if outer := c.Kind != Inner; outer != (len(padded) > 20) {
		t.Fatalf("%d padded records for a %s join", len(padded), c.Kind)
	}
	expiring := c.Bounded || c.Window > 0 || c.TTL > 0
	if expiring && stragglers != (len(want.late) > 0) {
		t.Fatalf("%d late records (stragglers %v)", len(want.late), stragglers)
	}
	if stragglers || c.TTL > 0 {
		return // both depend on when records come, not on their times alone
	}
	tp, tpad := timeReference(c, evs)
	if len(tp) != len(pairs) || len(tpad) != len(padded) {
		t.Fatalf("reference: %d pairs and %d padded, by event time %d and %d", len(pairs), len(padded), len(tp), len(tpad))
	}
	var gotPad []string
	for _, row := range padded {
		var v map[string]json.RawMessage
		if err := json.Unmarshal([]byte(row.value), &v); err != nil {
			t.Fatal(err)
		}
		side := v["a"]
		if string(side) == "null" {
			side = v["p"]
		}
		gotPad = append(gotPad, string(side))
	}
	slices.Sort(gotPad)
	if !slices.Equal(gotPad, tpad) {
		t.Fatalf("reference pads\n%v\nby event time\n%v", gotPad, tpad)
	}
}

// checkFinalState: after the final watermark a join that drops its records
// keeps nothing, marks included; one that keeps them (a regular join
// without a TTL) keeps each record, and a mark for each record of an outer
// side (matched or padded).
func checkFinalState(t *testing.T, c Config, store state.Scanner) {
	t.Helper()
	records, marks := map[byte]int{}, map[byte]int{}
	err := store.Scan(state.OperatorPrefix(nil, c.Name), func(k, _ []byte) error {
		switch side := k[len(k)-userKeyLen]; side {
		case sideLeft, sideRight:
			records[side]++
		default:
			marks[side&^markBit]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, side := range []byte{sideLeft, sideRight} {
		want := 0
		if !c.Bounded && c.Window == 0 && c.TTL == 0 && outerSide(c.Kind, side) {
			want = records[side]
		}
		if c.Bounded || c.Window > 0 || c.TTL > 0 {
			if records[side] != 0 {
				t.Errorf("after the final watermark, %d records of side %c stored", records[side], side)
			}
		}
		if marks[side] != want {
			t.Errorf("a %s join keeps %d records and %d marks of side %c, want %d marks", c.Kind, records[side], marks[side], side, want)
		}
	}
}

// outerSide reports whether side is an outer side of a join of kind.
func outerSide(kind string, side byte) bool {
	return kind == FullOuter || (kind == LeftOuter && side == sideLeft) || (kind == RightOuter && side == sideRight)
}

func compare(t *testing.T, what string, got, want result) {
	t.Helper()
	if !slices.Equal(got.rows, want.rows) {
		t.Errorf("%s: %d rows, want %d\n%s", what, len(got.rows), len(want.rows), diff(got.rows, want.rows))
	}
	if !slices.Equal(got.late, want.late) {
		t.Errorf("%s: late %v\nwant %v", what, got.late, want.late)
	}
}

// diff lists the first rows only one of got and want has.
func diff(got, want []outRow) string {
	count := map[outRow]int{}
	for _, r := range got {
		count[r]++
	}
	for _, r := range want {
		count[r]--
	}
	var b strings.Builder
	n := 0
	for _, r := range slices.SortedFunc(maps.Keys(count), outRow.compare) {
		if c := count[r]; c != 0 && n < 10 {
			n++
			fmt.Fprintf(&b, "%+d %s\n", c, r)
		}
	}
	return b.String()
}

// TestOuterJoinRestart stops the join after some watermarks and continues
// on new instances (one more or one fewer) on the same store, told the
// watermark they had, as a run restored from a checkpoint does: the output
// is the uninterrupted run's, so unmatched records are tracked in the
// store, neither padded twice nor padded after a match before the restart,
// nor lost. Both the memory and the badger store.
func TestOuterJoinRestart(t *testing.T) {
	for i, jc := range joinCases {
		evs := genEvents(99+uint64(i), jc.records/2, 8, true)
		for _, kind := range []string{LeftOuter, RightOuter, FullOuter} {
			c := jc.cfg
			c.Name, c.Left, c.Right, c.Kind = "j", "a", "p", kind
			want := reference(c, evs)
			t.Run(jc.name+"/"+kind, func(t *testing.T) {
				for _, at := range []int{3, 17, 40} {
					for _, pars := range [][2]int{{1, 2}, {2, 1}} {
						got := runJoin(t, c, state.NewMemory(), evs, pars[0], 16, at, pars[1])
						compare(t, fmt.Sprintf("restart after watermark %d, parallelism %d then %d", at, pars[0], pars[1]), got, want)
					}
				}
				s, err := state.OpenBadger(state.BadgerOptions{Dir: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				compare(t, "badger, restart after watermark 10", runJoin(t, c, s, evs, 2, 32, 10, 2), want)
			})
		}
	}
}

// TestOuterJoinSteps drives a left interval join and a full window join
// step by step: a padded record comes at the watermark that passes its
// last match, with its own time, key and origin, and never after a match.
func TestOuterJoinSteps(t *testing.T) {
	ctx := context.Background()
	store := state.NewMemory()
	o, err := New(Config{Name: "j", Left: "a", Right: "p", Bounded: true, Lower: -10, Upper: 5, Kind: LeftOuter, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	var out record.Output
	step := func(in []record.Record, wm int64) []string {
		t.Helper()
		out.Reset()
		if err := o.Process(ctx, in, &out); err != nil {
			t.Fatal(err)
		}
		if wm != 0 {
			if err := o.OnWatermark(ctx, wm, &out); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		for _, r := range out.Records {
			got = append(got, fmt.Sprintf("%s %s@%d %s", r.Key, r.Value, r.Timestamp, r.Origin))
		}
		return got
	}
	l1, l2, r1 := rec("a", "k", 100, 1, `"L1"`), rec("a", "k", 102, 2, `"L2"`), rec("p", "k", 95, 1, `"R1"`)
	l2.Origin.Partition = 3
	if got := step([]record.Record{l1, l2}, 104); len(got) != 0 {
		t.Fatalf("before 105: %v", got)
	}
	if got := step([]record.Record{r1}, 0); strings.Join(got, "|") != `k {"a":"L1","p":"R1"}@100 p[0] offset 1|k {"a":"L2","p":"R1"}@102 p[0] offset 1` {
		t.Fatalf("pairs %v", got)
	}
	if got := step([]record.Record{rec("a", "k", 200, 3, `"L3"`)}, 206); strings.Join(got, "|") != `k {"a":"L3","p":null}@200 a[0] offset 3` {
		t.Fatalf("at 206: %v (L1 and L2 matched, L3 did not)", got)
	}
	if n := storedEntries(t, store); n != 0 {
		t.Fatalf("%d entries stored after every record expired", n)
	}

	f, err := New(Config{Name: "w", Left: "a", Right: "p", Window: 10, Kind: FullOuter, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := f.Process(ctx, []record.Record{rec("a", "x", 3, 1, `"A"`), rec("p", "y", 4, 1, `"B"`), rec("a", "x", 12, 2, `"C"`)}, &out); err != nil {
		t.Fatal(err)
	}
	if err := f.OnWatermark(ctx, 9, &out); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range out.Records {
		got = append(got, string(r.Key)+" "+string(r.Value)+"@"+strconv.FormatInt(r.Timestamp, 10))
	}
	if strings.Join(got, "|") != `x {"a":"A","p":null}@3|y {"a":null,"p":"B"}@4` {
		t.Fatalf("window [0,10) closed: %v", got)
	}
	if _, err := New(Config{Name: "j", Left: "a", Right: "p", Kind: "outer", Store: store}); err == nil ||
		!strings.Contains(err.Error(), `unknown join type "outer"`) {
		t.Errorf("kind outer: %v", err)
	}
}
