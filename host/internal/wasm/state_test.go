package wasm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// countingStore wraps a state.Memory, counting Apply calls, and fails Get
// or Apply on demand.
type countingStore struct {
	*state.Memory
	applies  int
	failGet  error
	failPut  error
	lastMuts int
}

func (s *countingStore) Get(key []byte) ([]byte, bool, error) {
	if s.failGet != nil {
		return nil, false, s.failGet
	}
	return s.Memory.Get(key)
}

func (s *countingStore) Apply(muts []state.Mutation) error {
	if s.failPut != nil {
		return s.failPut
	}
	s.applies++
	s.lastMuts = len(muts)
	return s.Memory.Apply(muts)
}

// count returns the counter module's stored count for a record key.
func count(t *testing.T, st state.Store, operator, key string) (uint64, bool) {
	t.Helper()
	v, ok, err := st.Get(state.Key(nil, operator, []byte(key), []byte("count")))
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return 0, false
	}
	if len(v) != 8 {
		t.Fatalf("count of %q is %d bytes", key, len(v))
	}
	return binary.LittleEndian.Uint64(v), true
}

// counts decodes the counter module's output values.
func counts(rs []record.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		if len(r.Value) == 8 {
			out[i] = fmt.Sprint(binary.LittleEndian.Uint64(r.Value))
		} else {
			out[i] = fmt.Sprintf("%q", r.Value)
		}
	}
	return out
}

func newCounter(t *testing.T, rt *Runtime, st state.Store) *Worker {
	cfg := watConfig(t, "counter")
	cfg.Store = st
	_, w := mustLoad(t, rt, cfg)
	return w
}

func TestStateOverlay(t *testing.T) {
	rt := newRuntime(t, nil)
	tests := []struct {
		name       string
		batches    [][]string // "<key>=<value>" records
		wantOut    [][]string // counts answered per batch
		wantDead   int
		wantCounts map[string]uint64 // 0 means absent
		wantApply  int
	}{
		{
			name:       "read your writes within a batch",
			batches:    [][]string{{"a=x", "a=x", "b=x", "a=x"}},
			wantOut:    [][]string{{"1", "2", "1", "3"}},
			wantCounts: map[string]uint64{"a": 3, "b": 1},
			wantApply:  1,
		},
		{
			name:       "state carries across batches",
			batches:    [][]string{{"a=x"}, {"a=x", "b=x"}, {"a=x"}},
			wantOut:    [][]string{{"1"}, {"2", "1"}, {"3"}},
			wantCounts: map[string]uint64{"a": 3, "b": 1},
			wantApply:  3,
		},
		{
			name:       "a rejected record's writes are discarded",
			batches:    [][]string{{"a=x", "b=Ebad", "a=x"}, {"b=x"}},
			wantOut:    [][]string{{"1", "2"}, {"1"}},
			wantDead:   1,
			wantCounts: map[string]uint64{"a": 2, "b": 1},
			wantApply:  2,
		},
		{
			name: "a trap discards the batch's writes; the replay applies each survivor once",
			// The batch traps on a=!; the replay commits each survivor alone.
			batches:    [][]string{{"a=x", "a=x", "b=x", "a=!", "b=x"}},
			wantOut:    [][]string{{"1", "2", "1", "2"}},
			wantDead:   1,
			wantCounts: map[string]uint64{"a": 2, "b": 2},
			wantApply:  4,
		},
		{
			name:       "delete",
			batches:    [][]string{{"a=x", "a=x"}, {"a=R", "b=x"}},
			wantOut:    [][]string{{"1", "2"}, {"0", "1"}},
			wantCounts: map[string]uint64{"a": 0, "b": 1},
			wantApply:  2,
		},
		{
			name:       "delete then write in one batch",
			batches:    [][]string{{"a=x", "a=R", "a=x"}},
			wantOut:    [][]string{{"1", "0", "1"}},
			wantCounts: map[string]uint64{"a": 1},
			wantApply:  1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &countingStore{Memory: state.NewMemory()}
			w := newCounter(t, rt, st)
			dead := 0
			for i, b := range tt.batches {
				out := process(t, w, recs(b...))
				if got := counts(out.Records); !equal(got, tt.wantOut[i]) {
					t.Errorf("batch %d: counts %v, want %v", i, got, tt.wantOut[i])
				}
				dead += len(out.Dead)
			}
			if dead != tt.wantDead {
				t.Errorf("%d dead letters, want %d", dead, tt.wantDead)
			}
			for key, want := range tt.wantCounts {
				got, ok := count(t, st, "counter", key)
				if want == 0 && ok {
					t.Errorf("count of %q = %d, want absent", key, got)
				} else if want != 0 && got != want {
					t.Errorf("count of %q = %d, want %d", key, got, want)
				}
			}
			if st.applies != tt.wantApply {
				t.Errorf("%d Apply calls, want %d", st.applies, tt.wantApply)
			}
		})
	}
}

func TestStateDedupesWritesPerBatch(t *testing.T) {
	rt := newRuntime(t, nil)
	st := &countingStore{Memory: state.NewMemory()}
	w := newCounter(t, rt, st)
	process(t, w, recs("a=x", "a=x", "a=x", "b=x"))
	if st.lastMuts != 2 {
		t.Errorf("Apply got %d mutations, want 2 (one per key)", st.lastMuts)
	}
}

func TestStateScopedByOperator(t *testing.T) {
	rt := newRuntime(t, nil)
	st := state.NewMemory()
	var ws []*Worker
	for _, op := range []string{"first", "second"} {
		cfg := watConfig(t, "counter")
		cfg.Operator, cfg.Store = op, st
		_, w := mustLoad(t, rt, cfg)
		ws = append(ws, w)
	}
	process(t, ws[0], recs("a=x", "a=x"))
	out := process(t, ws[1], recs("a=x"))
	if got := counts(out.Records); !equal(got, []string{"1"}) {
		t.Errorf("second operator sees %v, want its own count 1", got)
	}
}

func TestStateStatuses(t *testing.T) {
	rt := newRuntime(t, nil)
	w := newCounter(t, rt, nil) // a private in-memory store
	out := process(t, w, recs("a=S"))
	if len(out.Records) != 1 || len(out.Records[0].Value) != 12 {
		t.Fatalf("out = %+v", out.Records)
	}
	v := out.Records[0].Value
	tests := []struct {
		name string
		got  int32
		want int32
	}{
		{"state_get with a bad record index", int32(binary.LittleEndian.Uint32(v[0:])), abi.StatusBadIndex},
		{"state_get with a key outside memory", int32(binary.LittleEndian.Uint32(v[4:])), abi.StatusBadMemory},
		{"state_put with a key over the limit", int32(binary.LittleEndian.Uint32(v[8:])), abi.StatusTooLarge},
		{"state_get in " + abi.ExportInit, int32(w.inst.mod.ExportedGlobal("init_status").Get()), abi.StatusNoContext},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("status %d (%s), want %d (%s)", tt.got, abi.StatusText(tt.got), tt.want, abi.StatusText(tt.want))
			}
		})
	}
}

func TestStoreFailureIsFatal(t *testing.T) {
	rt := newRuntime(t, nil)
	boom := errors.New("disk on fire")
	tests := []struct {
		name  string
		store *countingStore
	}{
		{"Get fails", &countingStore{Memory: state.NewMemory(), failGet: boom}},
		{"Apply fails", &countingStore{Memory: state.NewMemory(), failPut: boom}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newCounter(t, rt, tt.store)
			out := new(record.Output)
			err := w.Process(context.Background(), recs("a=x", "b=x"), out)
			if !errors.Is(err, ErrState) || !errors.Is(err, boom) {
				t.Fatalf("err = %v, want ErrState wrapping the store's error", err)
			}
			if len(out.Dead) != 0 {
				t.Errorf("a store failure must not dead-letter records: %+v", out.Dead)
			}
			if s := w.Stats(); s.Traps != 0 {
				t.Errorf("a store failure is not a trap: %+v", s)
			}
			// Once the store recovers, the worker carries on.
			tt.store.failGet, tt.store.failPut = nil, nil
			if got := counts(process(t, w, recs("a=x")).Records); !equal(got, []string{"1"}) {
				t.Errorf("after recovery: %v", got)
			}
		})
	}
}
