package window

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/abi/wjson"
	"github.com/weir-stream/weir/host/internal/record"
)

// The property test feeds random streams, with out-of-order and late
// events and random watermarks, to every kind of window, and checks the
// operator against a brute-force reference: the last result emitted for
// each window equals the aggregate of the records that window should hold,
// no other window is emitted, and the dead letters are exactly the records
// later than the allowed lateness.

// refRec is one input record as the reference sees it.
type refRec struct {
	id  int64 // Origin.Offset: the arrival order
	key string
	nil bool
	ts  int64
	v   int64
	wm  int64 // the watermark when it arrived
}

type winID struct {
	key        string
	start, end int64
}

var propAggs = []Aggregate{
	{Func: AggCount, As: "n"},
	{Func: AggSum, Field: []string{"v"}, As: "sum"},
	{Func: AggMin, Field: []string{"v"}, As: "min"},
	{Func: AggMax, Field: []string{"v"}, As: "max"},
	{Func: AggFirst, Field: []string{"v"}, As: "first"},
	{Func: AggLast, Field: []string{"v"}, As: "last"},
	{Func: AggCountDistinct, Field: []string{"v"}, As: "d"},
	{Func: AggAvg, Field: []string{"v"}, As: "avg"},
}

// refResult formats the result the operator should emit for window w of
// records recs (in arrival order).
func refResult(w winID, isNil bool, recs []refRec) string {
	var sum int64
	minV, maxV := recs[0].v, recs[0].v
	first, last := recs[0], recs[0]
	distinct := map[int64]bool{}
	for _, r := range recs {
		sum += r.v
		minV, maxV = min(minV, r.v), max(maxV, r.v)
		if r.ts < first.ts {
			first = r
		}
		if r.ts >= last.ts {
			last = r
		}
		distinct[r.v] = true
	}
	key := fmt.Sprintf("%q", w.key)
	if isNil {
		key = "null"
	}
	avg := wjson.AppendFloat(nil, float64(sum)/float64(len(recs)))
	return fmt.Sprintf(`{"key":%s,"window_start":%d,"window_end":%d,"n":%d,"sum":%d,"min":%d,"max":%d,"first":%d,"last":%d,"d":%d,"avg":%s}`,
		key, w.start, w.end, len(recs), sum, minV, maxV, first.v, last.v, len(distinct), avg)
}

// propConfig is one operator configuration of the property test.
type propConfig struct {
	kind              Kind
	size, slide, gap  int64 // ms
	count             int64
	late              int64
	emit              EmitMode
	wantPerWindowOnce bool
}

func (c propConfig) String() string {
	return fmt.Sprintf("%v/size=%d/slide=%d/gap=%d/count=%d/late=%d/%v", c.kind, c.size, c.slide, c.gap, c.count, c.late, c.emit)
}

// windowsOf enumerates, by brute force, the time windows holding t.
func (c propConfig) windowsOf(t int64) [][2]int64 {
	var ws [][2]int64
	switch c.kind {
	case Tumbling:
		s := record.FloorDiv(t, c.size) * c.size
		ws = append(ws, [2]int64{s, s + c.size})
	case Sliding:
		for e := record.FloorDiv(t, c.slide) * c.slide; e <= t+c.size; e += c.slide {
			if e-c.size <= t && t < e {
				ws = append(ws, [2]int64{e - c.size, e})
			}
		}
	case Cumulate:
		b := record.FloorDiv(t, c.size) * c.size
		for e := b + c.slide; e <= b+c.size; e += c.slide {
			if t < e {
				ws = append(ws, [2]int64{b, e})
			}
		}
	}
	return ws
}

// reference computes, from the whole input log, the final result of every
// window and which records are late.
type reference struct {
	c     propConfig
	final map[winID]string
	late  map[int64]bool
	// time windows: the records of each window, with its key's nil-ness.
	members map[winID][]refRec
	nilKey  map[winID]bool
	// sessions: the live (accepted, not purged) records of each key.
	live map[string][]refRec
	// sessions: every session span ever finalized, to accept superseded
	// emissions of sessions that later merged.
	// count windows: the records of each key's open window.
	counting map[string][]refRec
}

func newReference(c propConfig) *reference {
	return &reference{c: c, final: map[winID]string{}, late: map[int64]bool{}, members: map[winID][]refRec{},
		nilKey: map[winID]bool{}, live: map[string][]refRec{}, counting: map[string][]refRec{}}
}

func refKey(r refRec) string {
	if r.nil {
		return "\x00nil"
	}
	return r.key
}

// sessions groups recs (any order) into sessions: sorted by time, a record
// joins the current session when it touches its end.
func (ref *reference) sessions(recs []refRec) [][]refRec {
	sorted := slices.Clone(recs)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].ts < sorted[j].ts })
	var out [][]refRec
	var end int64
	for _, r := range sorted {
		if len(out) > 0 && r.ts <= end {
			out[len(out)-1] = append(out[len(out)-1], r)
			end = max(end, r.ts+ref.c.gap)
			continue
		}
		out = append(out, []refRec{r})
		end = r.ts + ref.c.gap
	}
	for _, s := range out { // back to arrival order
		sort.Slice(s, func(i, j int) bool { return s[i].id < s[j].id })
	}
	return out
}

func sessionSpan(s []refRec, gap int64) (int64, int64) {
	start, end := s[0].ts, s[0].ts+gap
	for _, r := range s {
		start, end = min(start, r.ts), max(end, r.ts+gap)
	}
	return start, end
}

// add processes one record arriving at watermark r.wm.
func (ref *reference) add(r refRec) {
	c := ref.c
	switch c.kind {
	case Count:
		k := refKey(r)
		ref.counting[k] = append(ref.counting[k], r)
		if int64(len(ref.counting[k])) == c.count {
			recs := ref.counting[k]
			start, end := recs[0].ts, recs[0].ts+1
			for _, x := range recs {
				start, end = min(start, x.ts), max(end, x.ts+1)
			}
			w := winID{key: k, start: start, end: end}
			ref.final[w] = refResult(winID{key: r.key, start: start, end: end}, r.nil, recs)
			ref.counting[k] = nil
		}
	case Session:
		k := refKey(r)
		for _, s := range ref.sessions(append(slices.Clone(ref.live[k]), r)) {
			if !slices.ContainsFunc(s, func(x refRec) bool { return x.id == r.id }) {
				continue
			}
			if _, end := sessionSpan(s, c.gap); end-1+c.late <= r.wm {
				ref.late[r.id] = true
				return
			}
		}
		ref.live[k] = append(ref.live[k], r)
	default:
		ws := c.windowsOf(r.ts)
		lateAll := true
		for _, w := range ws {
			if w[1]-1+c.late > r.wm {
				lateAll = false
				id := winID{key: refKey(r), start: w[0], end: w[1]}
				ref.members[id] = append(ref.members[id], r)
				ref.nilKey[id] = r.nil
			}
		}
		if lateAll {
			ref.late[r.id] = true
		}
	}
}

// watermark purges the sessions that wm closes past their lateness.
func (ref *reference) watermark(wm int64) {
	if ref.c.kind != Session {
		return
	}
	for k, recs := range ref.live {
		var keep []refRec
		for _, s := range ref.sessions(recs) {
			start, end := sessionSpan(s, ref.c.gap)
			if record.AddTime(end-1, ref.c.late) <= wm {
				ref.final[winID{key: k, start: start, end: end}] = refResult(winID{key: s[0].key, start: start, end: end}, s[0].nil, s)
				continue
			}
			keep = append(keep, s...)
		}
		ref.live[k] = keep
	}
}

func (ref *reference) finish() {
	ref.watermark(math.MaxInt64)
	for id, recs := range ref.members {
		w := id
		if ref.nilKey[id] {
			w.key = ""
		}
		ref.final[id] = refResult(w, ref.nilKey[id], recs)
	}
}

func TestProperty(t *testing.T) {
	var configs []propConfig
	for _, late := range []int64{0, 700} {
		for _, emit := range []EmitMode{OnClose, OnUpdate, Every} {
			for _, c := range []propConfig{
				{kind: Tumbling, size: 1000},
				{kind: Sliding, size: 1000, slide: 400},
				{kind: Sliding, size: 900, slide: 300},
				{kind: Session, gap: 300},
				{kind: Cumulate, size: 1200, slide: 400},
			} {
				c.late, c.emit = late, emit
				configs = append(configs, c)
			}
		}
	}
	configs = append(configs, propConfig{kind: Count, count: 4, emit: OnClose, wantPerWindowOnce: true})
	seeds := 40
	if testing.Short() {
		seeds = 8
	}
	for _, c := range configs {
		t.Run(c.String(), func(t *testing.T) {
			for seed := range seeds {
				want := runProperty(t, c, uint64(seed), 0)
				// Bounded mode, with keys evicted and read back all the
				// time, emits exactly what the unbounded operator does.
				for _, bound := range []int{1, 3} {
					got := runProperty(t, c, uint64(seed), bound)
					equalStrings(t, fmt.Sprintf("seed %d, MaxKeysInMemory %d", seed, bound), got, want)
				}
			}
		})
	}
}

// runProperty runs one random stream through an operator with the given
// MaxKeysInMemory, checks it against the reference, and returns what the
// operator emitted, in order.
func runProperty(t *testing.T, c propConfig, seed uint64, bound int) []string {
	rng := rand.New(rand.NewPCG(seed, uint64(c.kind)))
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := Config{Kind: c.kind, Size: time.Duration(c.size) * time.Millisecond, Slide: time.Duration(c.slide) * time.Millisecond,
		Gap: time.Duration(c.gap) * time.Millisecond, Count: c.count, AllowedLateness: time.Duration(c.late) * time.Millisecond,
		Emit: c.emit, TimeFormat: EpochMillis, Aggregates: propAggs, Clock: func() time.Time { return now },
		MaxKeysInMemory: bound}
	if c.emit == Every {
		cfg.EmitInterval = 200 * time.Millisecond
	}
	h := newHarness(t, cfg)
	ref := newReference(c)
	wm := int64(math.MinInt64)
	cur := rng.Int64N(20000) - 10000 // negative times too
	keys := []string{"a", "b", "c", ""}
	var id int64
	n := 200 + rng.IntN(200)
	for id < int64(n) {
		batch := make([]record.Record, 1+rng.IntN(15))
		for i := range batch {
			cur += rng.Int64N(60)
			ts := cur - rng.Int64N(1200)
			if rng.IntN(20) == 0 {
				ts = cur - 3000 - rng.Int64N(3000) // very late
			}
			k := keys[rng.IntN(len(keys))]
			v := rng.Int64N(21) - 10
			batch[i] = ev(k, ts, fmt.Sprintf(`{"v":%d,"pad":"%s"}`, v, strings.Repeat("x", rng.IntN(4))))
			batch[i].Origin.Offset = id
			ref.add(refRec{id: id, key: k, nil: k == "", ts: ts, v: v, wm: wm})

			id++
		}
		h.process(batch...)
		now = now.Add(time.Duration(rng.IntN(150)) * time.Millisecond)
		switch rng.IntN(10) {
		case 0, 1, 2, 3:
			next := max(wm, cur-rng.Int64N(1500))
			h.watermark(next)
			if next > wm {
				wm = next
				ref.watermark(wm)
			}
		case 4:
			if wm > math.MinInt64+100 {
				h.watermark(wm - 100) // a watermark going back is ignored
			}
		}
	}
	h.watermark(math.MaxInt64)
	ref.finish()

	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d, MaxKeysInMemory %d: "+format, append([]any{seed, bound}, args...)...)
	}
	var log []string
	for _, d := range h.dead {
		log = append(log, fmt.Sprintf("dead #%d %s", d.Record.Origin.Offset, d.Reason))
	}
	// Dead letters: exactly the late records.
	gotLate := map[int64]bool{}
	for _, d := range h.dead {
		if !strings.HasPrefix(d.Reason, "late: ") {
			fail("dead letter %q", d.Reason)
		}
		gotLate[d.Record.Origin.Offset] = true
	}
	for id := range ref.late {
		if !gotLate[id] {
			fail("record %d is late but was not rejected", id)
		}
	}
	for id := range gotLate {
		if !ref.late[id] {
			fail("record %d was rejected as late but is not", id)
		}
	}
	// Results: the last per window equals the reference.
	last := map[winID]string{}
	emissions := map[winID]int{}
	lastN := map[winID]int64{}
	for _, r := range h.take() {
		log = append(log, fmt.Sprintf("%q nil=%v @%d %s", r.Key, r.NilKey, r.TS, r.Value))
		v := []byte(r.Value)
		s, _ := wjson.Get(v, "window_start")
		e, _ := wjson.Get(v, "window_end")
		si, _ := s.Int()
		ei, _ := e.Int()
		k := r.Key
		if r.NilKey {
			k = "\x00nil"
		}
		if r.TS != ei-1 {
			fail("result %s has timestamp %d", r.Value, r.TS)
		}
		w := winID{key: k, start: si, end: ei}
		// Outside mode Every, a window is emitted again only once it has
		// changed, and then it has more records.
		nv, _ := wjson.Get(v, "n")
		n, _ := nv.Int()
		if prev, ok := lastN[w]; ok && c.emit != Every && n <= prev {
			fail("window %+v emitted again without a change: %s", w, r.Value)
		}
		lastN[w] = n
		last[w] = r.Value
		emissions[w]++
	}
	for w, want := range ref.final {
		got, ok := last[w]
		if !ok {
			fail("window %+v was not emitted; want %s", w, want)
		}
		if got != want {
			fail("window %+v: last result\n  %s\nwant\n  %s", w, got, want)
		}
		if c.wantPerWindowOnce && emissions[w] != 1 {
			fail("window %+v emitted %d times", w, emissions[w])
		}
	}
	for w, got := range last {
		if _, ok := ref.final[w]; ok {
			continue
		}
		// A session emitted before a late record merged it into a larger
		// one is superseded by that one.
		superseded := false
		if c.kind == Session {
			for f := range ref.final {
				if f.key == w.key && f.start <= w.start && w.end <= f.end && f != w {
					superseded = true
				}
			}
		}
		if !superseded {
			fail("window %+v was emitted (%s) but should not be", w, got)
		}
	}
	// In mode Every the operator entry stays, holding the EmitInterval
	// schedule.
	if n, entry := h.store.Len(), c.emit == Every; c.kind != Count && n != 0 && !(entry && n == 1) {
		fail("store holds %d keys after the final watermark", n)
	}
	if bound > 0 && len(h.op.keys) > bound {
		fail("%d keys in memory", len(h.op.keys))
	}
	return log
}
