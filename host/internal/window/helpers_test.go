package window

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// harness drives one Operator and collects what it emits.
type harness struct {
	t     testing.TB
	op    *Operator
	store *countingStore
	out   record.Output
	got   []result
	dead  []record.DeadLetter
}

// result is one emitted record, with its bytes copied.
type result struct {
	Key    string
	NilKey bool
	Value  string
	TS     int64
}

// countingStore is a Memory store that counts Apply calls.
type countingStore struct {
	*state.Memory
	applies int
	fail    error
}

func (s *countingStore) Apply(m []state.Mutation) error {
	s.applies++
	if s.fail != nil {
		return s.fail
	}
	return s.Memory.Apply(m)
}

func newHarness(t testing.TB, cfg Config) *harness {
	t.Helper()
	st := &countingStore{Memory: state.NewMemory()}
	if cfg.Name == "" {
		cfg.Name = "win"
	}
	cfg.Store = st
	op, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &harness{t: t, op: op, store: st}
}

func (h *harness) collect() {
	for _, r := range h.out.Records {
		h.got = append(h.got, result{Key: string(r.Key), NilKey: r.Key == nil, Value: string(r.Value), TS: r.Timestamp})
	}
	for _, d := range h.out.Dead {
		d.Record.Value = append([]byte(nil), d.Record.Value...)
		d.Record.Key = append([]byte(nil), d.Record.Key...)
		h.dead = append(h.dead, d)
	}
	h.out.Reset()
}

// process hands recs to Process in one call.
func (h *harness) process(recs ...record.Record) {
	h.t.Helper()
	if err := h.op.Process(context.Background(), recs, &h.out); err != nil {
		h.t.Fatalf("Process: %v", err)
	}
	h.collect()
}

// watermark calls OnWatermark.
func (h *harness) watermark(wm int64) {
	h.t.Helper()
	if err := h.op.OnWatermark(context.Background(), wm, &h.out); err != nil {
		h.t.Fatalf("OnWatermark(%d): %v", wm, err)
	}
	h.collect()
}

// take returns the results emitted since the last take.
func (h *harness) take() []result {
	r := h.got
	h.got = nil
	return r
}

// values returns the values of rs.
func values(rs []result) []string {
	var v []string
	for _, r := range rs {
		v = append(v, r.Value)
	}
	return v
}

// ev is a record of key k (nil for ""), event time ts and value v.
func ev(k string, ts int64, v string) record.Record {
	var key []byte
	if k != "" {
		key = []byte(k)
	}
	return record.Record{Key: key, Value: []byte(v), Timestamp: ts, Origin: record.Origin{Partition: -1}}
}

// at returns the event time of "2024-03-17 09:20:00" plus d.
func at(d time.Duration) int64 {
	return time.Date(2024, 3, 17, 9, 20, 0, 0, time.UTC).Add(d).UnixMilli()
}

func equalStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\ngot:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// countAgg is a test Aggregator counting records, as seed 004's
// CustomerAggregatorByCountry: the accumulator is the country and a
// big-endian count, and the result is ["country",count].
type countAgg struct {
	merges int
	fail   string // Add fails for values containing this
	// ctxs are the contexts Result was given, their keys copied.
	ctxs []ResultContext
}

func (c *countAgg) Create() []byte { return []byte{0, 0, 0, 0, 0, 0, 0, 0} }

func (c *countAgg) Add(acc []byte, rec *record.Record) ([]byte, error) {
	if c.fail != "" && strings.Contains(string(rec.Value), c.fail) {
		return nil, errors.New("cannot add " + string(rec.Value))
	}
	n := binary.BigEndian.Uint64(acc[:8])
	out := binary.BigEndian.AppendUint64(nil, n+1)
	return append(out, rec.Key...), nil
}

func (c *countAgg) Merge(a, b []byte) ([]byte, error) {
	c.merges++
	n := binary.BigEndian.Uint64(a[:8]) + binary.BigEndian.Uint64(b[:8])
	out := binary.BigEndian.AppendUint64(nil, n)
	country := a[8:]
	if len(country) == 0 {
		country = b[8:]
	}
	return append(out, country...), nil
}

func (c *countAgg) Result(acc []byte, rc ResultContext) ([]byte, error) {
	rc.Key = bytes.Clone(rc.Key)
	c.ctxs = append(c.ctxs, rc)
	b := append([]byte(`["`), acc[8:]...)
	b = append(b, `",`...)
	b = strconv.AppendUint(b, binary.BigEndian.Uint64(acc[:8]), 10)
	return append(b, ']'), nil
}
