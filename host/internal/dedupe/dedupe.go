package dedupe

import (
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// Config configures an Operator.
type Config struct {
	// Name names the operator: its state namespace and the Stage of its
	// dead letters.
	Name string
	// Within is, in event-time milliseconds, how near to one of its
	// key's passed records a record is a repeat; 0 means every record of
	// a key after its first is.
	Within int64
	// Store holds the passed records' times; it must be a state.Scanner,
	// to load them when the operator starts.
	Store state.Store
	// Owns, when set, says which record keys this instance owns: it loads
	// only their times.
	Owns func(key []byte) bool
	// ProcessingTime times records by Clock, not by their timestamps.
	ProcessingTime bool
	Clock          func() time.Time // default time.Now
}

// Operator is one worker's dedupe instance. It is used by one goroutine,
// from New to Close.
type Operator struct {
	cfg     Config
	scan    state.Scanner
	passed  map[string][]int64 // key → times of its passed records held, ascending
	expiry  expiries           // with Within: when each held time may go
	wm      int64
	indexed bool
	muts    []state.Mutation
	arena   record.Arena // the bytes of muts, until they are applied (the Store copies what it keeps)
	scratch []byte
}

// New returns an Operator for cfg.
func New(cfg Config) (*Operator, error) {
	var errs []error
	if cfg.Name == "" {
		errs = append(errs, errors.New("Name is required"))
	}
	if cfg.Within < 0 {
		errs = append(errs, fmt.Errorf("Within is negative (%d)", cfg.Within))
	}
	sc, ok := cfg.Store.(state.Scanner)
	if !ok {
		errs = append(errs, errors.New("Store is required and must be a state.Scanner"))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("dedupe %q: %w", cfg.Name, errors.Join(errs...))
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return &Operator{cfg: cfg, scan: sc, passed: map[string][]int64{}, wm: minTime}, nil
}

const minTime = -1 << 63

// Name implements engine.Operator.
func (o *Operator) Name() string { return o.cfg.Name }

// Close implements engine.Operator.
func (o *Operator) Close(context.Context) error { return nil }

// Process implements engine.Operator: it passes each record whose key
// passed no record near its time, and holds its time.
func (o *Operator) Process(_ context.Context, in []record.Record, out *record.Output) error {
	if err := o.index(); err != nil {
		return err
	}
	for i := range in {
		rec := &in[i]
		if rec.Key == nil {
			out.Dead = append(out.Dead, record.DeadLetter{Record: *rec, Stage: o.cfg.Name,
				Reason: "dedupe needs a record key to tell repeats apart: put a key_by before it"})
			continue
		}
		t := rec.Timestamp
		if o.cfg.ProcessingTime {
			t = o.cfg.Clock().UnixMilli()
		}
		times := o.passed[string(rec.Key)]
		at, repeat := o.place(times, t)
		if repeat {
			continue
		}
		o.hold(string(rec.Key), times, at, t)
		o.muts = append(o.muts, state.Mutation{Key: o.entryKey(rec.Key, t), Value: []byte{}})
		out.Records = append(out.Records, *rec)
	}
	return o.flush()
}

// place returns where t goes among a key's held times, and whether one
// of them makes a record at t a repeat.
func (o *Operator) place(times []int64, t int64) (int, bool) {
	if o.cfg.Within == 0 {
		return len(times), len(times) > 0
	}
	i, _ := slices.BinarySearch(times, t)
	near := i < len(times) && distance(times[i], t) < o.cfg.Within ||
		i > 0 && distance(t, times[i-1]) < o.cfg.Within
	return i, near
}

// hold inserts t into key's held times at index at.
func (o *Operator) hold(key string, times []int64, at int, t int64) {
	o.passed[key] = slices.Insert(times, at, t)
	if o.cfg.Within > 0 {
		heap.Push(&o.expiry, expiry{at: record.AddTime(t, o.cfg.Within), key: key, t: t})
	}
}

// OnWatermark implements engine.Watermarker: it drops the held times no
// record on time can come near any more.
func (o *Operator) OnWatermark(_ context.Context, wm int64, _ *record.Output) error {
	if err := o.index(); err != nil {
		return err
	}
	o.wm = max(o.wm, wm)
	for len(o.expiry) > 0 && o.expiry[0].at <= o.wm {
		e := heap.Pop(&o.expiry).(expiry)
		times := o.passed[e.key]
		if i, ok := slices.BinarySearch(times, e.t); ok {
			times = slices.Delete(times, i, i+1)
		}
		if len(times) == 0 {
			delete(o.passed, e.key)
		} else {
			o.passed[e.key] = times
		}
		o.muts = append(o.muts, state.Mutation{Key: o.entryKey([]byte(e.key), e.t), Delete: true})
	}
	return o.flush()
}

// Restore implements engine.Restorer: it loads the held times of the
// keys the instance owns.
func (o *Operator) Restore(_ context.Context, wm int64, owns func(key []byte) bool) error {
	if o.cfg.Owns == nil {
		o.cfg.Owns = owns
	}
	o.wm = max(o.wm, wm)
	return o.index()
}

// ResumeWatermark implements engine.WatermarkResumer: a dedupe restored
// ahead of its run goes on from wm, as if Restore had been given it.
func (o *Operator) ResumeWatermark(wm int64) { o.wm = max(o.wm, wm) }

// Forget implements engine.Forgetter: the keys owns rejects leave
// memory, as for the tasks the group took from the instance, their times
// staying in the store for whichever instance owns them next.
func (o *Operator) Forget(owns func(key []byte) bool) {
	for k := range o.passed {
		if !owns([]byte(k)) {
			delete(o.passed, k)
		}
	}
	o.expiry = slices.DeleteFunc(o.expiry, func(e expiry) bool { return !owns([]byte(e.key)) })
	heap.Init(&o.expiry)
	o.cfg.Owns = owns
}

// index loads the owned held times from the store, once. The store lists
// each key's times in ascending order.
func (o *Operator) index() error {
	if o.indexed {
		return nil
	}
	o.indexed = true
	prefix := state.OperatorPrefix(nil, o.cfg.Name)
	return o.scan.Scan(prefix, func(k, v []byte) error {
		rk, uk, ok := state.SplitRest(k[len(prefix):])
		t, tok := entryTime(uk, v)
		if !ok || !tok {
			return fmt.Errorf("dedupe %q: malformed state entry %q", o.cfg.Name, k)
		}
		if o.cfg.Owns != nil && !o.cfg.Owns(rk) {
			return nil
		}
		times := o.passed[string(rk)]
		o.hold(string(rk), times, len(times), t)
		return nil
	})
}

// entryKey returns, in the arena, the store key of a passed record's time:
// the time, its sign bit flipped so that keys sort by time, as the user
// key.
func (o *Operator) entryKey(key []byte, t int64) []byte {
	o.scratch = state.Key(o.scratch[:0], o.cfg.Name, key, nil)
	o.scratch = binary.BigEndian.AppendUint64(o.scratch, uint64(t)^1<<63)
	return o.arena.Copy(o.scratch)
}

// entryTime decodes a stored entry's user key; its value is empty.
func entryTime(userKey, value []byte) (int64, bool) {
	if len(userKey) != 8 || len(value) != 0 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(userKey) ^ 1<<63), true
}

func (o *Operator) flush() error {
	if len(o.muts) == 0 {
		return nil
	}
	err := o.cfg.Store.Apply(o.muts)
	clear(o.muts)
	o.muts = o.muts[:0]
	o.arena.Reset()
	if err != nil {
		return fmt.Errorf("dedupe %q: writing state: %w", o.cfg.Name, err)
	}
	return nil
}

// distance is |a-b|, saturating.
func distance(a, b int64) int64 {
	if a < b {
		a, b = b, a
	}
	if d := a - b; d >= 0 {
		return d
	}
	return 1<<63 - 1
}

// expiry is when a key's entry may be dropped.
type expiry struct {
	at, t int64 // t, a held time of key, may go at at
	key   string
}

// expiries is a min-heap of expiry by at.
type expiries []expiry

func (h expiries) Len() int           { return len(h) }
func (h expiries) Less(i, j int) bool { return h[i].at < h[j].at }
func (h expiries) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiries) Push(x any)        { *h = append(*h, x.(expiry)) }
func (h *expiries) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
