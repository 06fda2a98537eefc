package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/record"
)

func TestIdentityKeepsRecords(t *testing.T) {
	rt := newRuntime(t, nil)
	_, w := mustLoad(t, rt, watConfig(t, "identity"))
	for _, n := range []int{1, 2, 64, 1000, 5000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			in := make([]record.Record, n)
			for i := range in {
				in[i] = record.Record{
					Key:       []byte(fmt.Sprint("key", i)),
					Value:     bytes.Repeat([]byte{byte('a' + i%26)}, i%300),
					Timestamp: int64(i),
					Origin:    record.Origin{Source: "s", Partition: int32(i % 3), Offset: int64(i)},
				}
				if i%3 == 0 {
					in[i].Headers = []record.Header{{Key: "h", Value: []byte("v")}, {Key: "empty", Value: []byte{}}}
				}
				if i%7 == 0 {
					in[i].Key = nil
				}
			}
			out := process(t, w, in)
			if len(out.Records) != n || len(out.Dead) != 0 {
				t.Fatalf("got %d records, %d dead; want %d, 0", len(out.Records), len(out.Dead), n)
			}
			for i, r := range out.Records {
				src := in[i]
				if !bytes.Equal(r.Value, src.Value) || !bytes.Equal(r.Key, src.Key) || (r.Key == nil) != (src.Key == nil) ||
					r.Timestamp != src.Timestamp || r.Origin != src.Origin || len(r.Headers) != len(src.Headers) {
					t.Fatalf("record %d = %+v, want %+v", i, r, src)
				}
				if len(src.Value) > 0 && !sameBytes(r.Value, src.Value) {
					t.Fatalf("record %d: a kept record must share the input's bytes", i)
				}
			}
		})
	}
	if s := w.Stats(); s.Batches != 5 || s.Calls != 5 || s.Traps != 0 {
		t.Errorf("stats = %+v", s)
	}
}

func TestFlatMapEntries(t *testing.T) {
	rt := newRuntime(t, nil)
	cfg := watConfig(t, "fanout")
	cfg.Op = abi.OpFlatMap
	_, w := mustLoad(t, rt, cfg)
	in := recs("keep", "Eboth", "eonly", "2two", "-drop", "null", "keep2")
	out := process(t, w, in)

	wantValues := []string{"keep", "2two", "second", "", "keep2"}
	if got := values(out.Records); !equal(got, wantValues) {
		t.Fatalf("values = %q, want %q", got, wantValues)
	}
	tests := []struct {
		name      string
		rec       record.Record
		key       []byte
		timestamp int64
		headers   []record.Header
		origin    int64
	}{
		{"kept", out.Records[0], in[0].Key, in[0].Timestamp, in[0].Headers, 0},
		{"value only inherits", out.Records[1], in[3].Key, in[3].Timestamp, in[3].Headers, 3},
		{"every field set", out.Records[2], []byte("k2"), 42, []record.Header{{Key: "h", Value: []byte("v")}}, 3},
		{"absent key", out.Records[3], nil, in[5].Timestamp, in[5].Headers, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.rec
			if !bytes.Equal(r.Key, tt.key) || (r.Key == nil) != (tt.key == nil) {
				t.Errorf("key = %q, want %q", r.Key, tt.key)
			}
			if r.Timestamp != tt.timestamp {
				t.Errorf("timestamp = %d, want %d", r.Timestamp, tt.timestamp)
			}
			if fmt.Sprint(r.Headers) != fmt.Sprint(tt.headers) {
				t.Errorf("headers = %v, want %v", r.Headers, tt.headers)
			}
			if r.Origin != in[tt.origin].Origin {
				t.Errorf("origin = %v, want that of input %d", r.Origin, tt.origin)
			}
		})
	}
	if out.Records[3].Value != nil {
		t.Errorf("absent value came out as %q, want nil", out.Records[3].Value)
	}
	if sameBytes(out.Records[1].Value, in[3].Value) {
		t.Error("an emitted value must be a copy in the arena, not the input")
	}

	if got, want := deadValues(out.Dead), []string{"Eboth", "eonly"}; !equal(got, want) {
		t.Fatalf("dead = %q, want %q", got, want)
	}
	for _, d := range out.Dead {
		if d.Stage != "fanout" || d.Reason != "flat_map error: bad record" {
			t.Errorf("dead letter = stage %q reason %q", d.Stage, d.Reason)
		}
	}
	if s := w.Stats(); s.Errors != 2 || s.Traps != 0 {
		t.Errorf("stats = %+v", s)
	}
}

func TestTrapReplay(t *testing.T) {
	rt := newRuntime(t, nil)
	tests := []struct {
		name       string
		in         []string
		wantOut    []string
		wantDead   []string
		wantReason []string // substrings of every dead letter's reason
		traps      uint64
	}{
		{
			name:       "poison in the middle",
			in:         []string{"a", "b", "!bad", "c", "d"},
			wantOut:    []string{"a", "b", "c", "d"},
			wantDead:   []string{"!bad"},
			wantReason: []string{"trap: wasm error: unreachable", "stderr: poison record: !bad"},
			traps:      2, // the batch, then the record alone
		},
		{
			name:     "two poisons",
			in:       []string{"!x", "a", "!y", "b"},
			wantOut:  []string{"a", "b"},
			wantDead: []string{"!x", "!y"},
			traps:    3,
		},
		{
			name:     "every record poisoned",
			in:       []string{"!1", "!2", "!3"},
			wantDead: []string{"!1", "!2", "!3"},
			traps:    4,
		},
		{
			name:     "single-record batch",
			in:       []string{"!only"},
			wantDead: []string{"!only"},
			traps:    1,
		},
		{
			name:       "WASI exit",
			in:         []string{"a", "$exit", "b"},
			wantOut:    []string{"a", "b"},
			wantDead:   []string{"$exit"},
			wantReason: []string{"exited with code 3"},
			traps:      2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, w := mustLoad(t, rt, watConfig(t, "trap_bang"))
			in := recs(tt.in...)
			out := process(t, w, in)
			if got := values(out.Records); !equal(got, tt.wantOut) && len(got)+len(tt.wantOut) > 0 {
				t.Errorf("out = %q, want %q", got, tt.wantOut)
			}
			if got := deadValues(out.Dead); !equal(got, tt.wantDead) {
				t.Errorf("dead = %q, want %q", got, tt.wantDead)
			}
			for _, d := range out.Dead {
				if d.Stage != "trap_bang" {
					t.Errorf("stage = %q", d.Stage)
				}
				for _, want := range tt.wantReason {
					if !strings.Contains(d.Reason, want) {
						t.Errorf("reason %q does not contain %q", d.Reason, want)
					}
				}
			}
			for i, r := range out.Records {
				if !sameBytes(r.Value, in[indexOf(tt.in, string(r.Value))].Value) {
					t.Errorf("record %d is not the kept input", i)
				}
			}
			s := w.Stats()
			if s.Traps != tt.traps || s.Trapped != uint64(len(tt.wantDead)) {
				t.Errorf("stats = %+v, want %d traps and %d trapped", s, tt.traps, len(tt.wantDead))
			}
			// The worker carries on with a fresh instance.
			if got := values(process(t, w, recs("after")).Records); !equal(got, []string{"after"}) {
				t.Errorf("after the trap: %q", got)
			}
			if s := w.Stats(); s.Restarts != tt.traps {
				t.Errorf("restarts = %d, want %d", s.Restarts, tt.traps)
			}
		})
	}
}

func indexOf(s []string, v string) int {
	for i := range s {
		if s[i] == v {
			return i
		}
	}
	return -1
}

func TestMemoryLimit(t *testing.T) {
	rt := newRuntime(t, nil)
	tests := []struct {
		name     string
		pages    uint32
		wantDead int
	}{
		{"default limit fits", 0, 0},
		{"small limit traps", 16, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := watConfig(t, "trap_bang")
			cfg.MemoryLimitPages = tt.pages
			_, w := mustLoad(t, rt, cfg)
			out := process(t, w, recs("a", "#grow", "b"))
			if len(out.Dead) != tt.wantDead || len(out.Records) != 3-tt.wantDead {
				t.Fatalf("out = %q, dead = %q", values(out.Records), deadValues(out.Dead))
			}
		})
	}
}

func TestInvalidOutput(t *testing.T) {
	rt := newRuntime(t, nil)
	tests := []struct {
		name   string
		poison string
		reason string
	}{
		{"truncated frame", "?short", "invalid output: malformed output frame"},
		{"index past the batch", "^past", "invalid output: output breaks the ABI order rules"},
		{"frame outside memory", "%wild", "invalid output: the output frame (64 bytes at 4294967280) lies outside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, w := mustLoad(t, rt, watConfig(t, "malformed"))
			out := process(t, w, recs("a", tt.poison, "b"))
			if got := values(out.Records); !equal(got, []string{"a", "b"}) {
				t.Errorf("out = %q", got)
			}
			if len(out.Dead) != 1 || !strings.Contains(out.Dead[0].Reason, tt.reason) {
				t.Fatalf("dead = %+v, want one with reason containing %q", out.Dead, tt.reason)
			}
		})
	}
}

func TestAbort(t *testing.T) {
	rt := newRuntime(t, nil)
	_, w := mustLoad(t, rt, watConfig(t, "abort"))
	out := process(t, w, recs("a", "!x", "b"))
	if got := values(out.Records); !equal(got, []string{"a", "b"}) {
		t.Errorf("out = %q", got)
	}
	want := "trap: abort: bad input at index.ts:12:5"
	if len(out.Dead) != 1 || out.Dead[0].Reason != want {
		t.Fatalf("dead = %+v, want reason %q", out.Dead, want)
	}
}

func TestTimeout(t *testing.T) {
	rt := newRuntime(t, nil)
	cfg := watConfig(t, "loop")
	cfg.Timeout = 100 * time.Millisecond
	_, w := mustLoad(t, rt, cfg)
	start := time.Now()
	out := process(t, w, recs("a", "@spin", "b"))
	if got := values(out.Records); !equal(got, []string{"a", "b"}) {
		t.Errorf("out = %q", got)
	}
	if len(out.Dead) != 1 || out.Dead[0].Reason != "deadline exceeded after 100ms (the operator's timeout)" {
		t.Fatalf("dead = %+v", out.Dead)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	if got := values(process(t, w, recs("c")).Records); !equal(got, []string{"c"}) {
		t.Errorf("after the timeout: %q", got)
	}
}

func TestCancelIsFatal(t *testing.T) {
	rt := newRuntime(t, nil)
	cfg := watConfig(t, "loop")
	cfg.Timeout = time.Minute
	_, w := mustLoad(t, rt, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	err := w.Process(ctx, recs("a", "@spin"), new(record.Output))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if s := w.Stats(); s.Trapped != 0 {
		t.Errorf("a canceled call must not dead-letter: %+v", s)
	}
	// The worker is usable again with a fresh instance.
	if got := values(process(t, w, recs("c")).Records); !equal(got, []string{"c"}) {
		t.Errorf("after cancel: %q", got)
	}
}

func TestOutputAppendsAndResets(t *testing.T) {
	rt := newRuntime(t, nil)
	cfg := watConfig(t, "fanout")
	cfg.Op = abi.OpFlatMap
	_, w := mustLoad(t, rt, cfg)
	out := new(record.Output)
	for i := 0; i < 3; i++ {
		if err := w.Process(context.Background(), recs("2x", "e"), out); err != nil {
			t.Fatal(err)
		}
	}
	if len(out.Records) != 6 || len(out.Dead) != 3 {
		t.Fatalf("after three batches: %d records, %d dead", len(out.Records), len(out.Dead))
	}
	out.Reset()
	if len(out.Records) != 0 || len(out.Dead) != 0 {
		t.Fatal("Reset left entries")
	}
	if err := w.Process(context.Background(), recs("2y"), out); err != nil {
		t.Fatal(err)
	}
	if got := values(out.Records); !equal(got, []string{"2y", "second"}) {
		t.Fatalf("after Reset: %q", got)
	}
}

func TestGCHookWAT(t *testing.T) {
	rt := newRuntime(t, nil)
	_, w := mustLoad(t, rt, watConfig(t, "identity"))
	const calls = 100
	in := recs("a")
	out := new(record.Output)
	for i := 0; i < calls; i++ {
		out.Reset()
		if err := w.Process(context.Background(), in, out); err != nil {
			t.Fatal(err)
		}
	}
	got := w.inst.mod.ExportedGlobal("gc_calls").Get()
	if want := uint64(calls / abi.GCEveryCalls); got != want {
		t.Errorf("%s ran %d times in %d calls, want %d", abi.ExportGC, got, calls, want)
	}
}

// TestConcurrentWorkers hammers one Plugin from several goroutines, each
// with its own Worker, mixing good and poisoned batches.
func TestConcurrentWorkers(t *testing.T) {
	rt := newRuntime(t, nil)
	p, _ := mustLoad(t, rt, watConfig(t, "trap_bang"))
	const workers, batches = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			w, err := p.NewWorker(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer w.Close(ctx)
			out := new(record.Output)
			for b := 0; b < batches; b++ {
				out.Reset()
				vals := []string{fmt.Sprint(g, "-", b, "-a"), fmt.Sprint(g, "-", b, "-b")}
				if b%10 == 0 {
					vals = append(vals, "!poison")
				}
				if err := w.Process(ctx, recs(vals...), out); err != nil {
					errs <- err
					return
				}
				if got := values(out.Records); !equal(got, vals[:2]) {
					errs <- fmt.Errorf("worker %d batch %d: got %q", g, b, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestZeroAllocIdentity(t *testing.T) {
	rt := newRuntime(t, nil)
	_, w := mustLoad(t, rt, watConfig(t, "identity"))
	in := benchRecords(64, 100)
	out := new(record.Output)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(200, func() {
		out.Reset()
		if err := w.Process(ctx, in, out); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Process allocates %.1f times per batch, want 0", allocs)
	}
}

// TestRecoveryFailureIsFatal makes the replacement instance fail to start
// after a trap: Process must return that error rather than dead-letter.
func TestRecoveryFailureIsFatal(t *testing.T) {
	rt := newRuntime(t, nil)
	p, w := mustLoad(t, rt, watConfig(t, "trap_bang"))
	p.cfg.InitConfig = []byte("x") // every new instance now rejects its config
	err := w.Process(context.Background(), recs("a", "!b"), new(record.Output))
	if !errors.Is(err, ErrInit) || !strings.Contains(err.Error(), "rejected the config: rejected") {
		t.Fatalf("err = %v, want the replacement's ErrInit", err)
	}
	if s := w.Stats(); s.Traps != 1 || s.Trapped != 0 {
		t.Errorf("stats = %+v", s)
	}
	// Once instances can start again, so can the worker.
	p.cfg.InitConfig = nil
	if got := values(process(t, w, recs("c")).Records); !equal(got, []string{"c"}) {
		t.Errorf("after recovery: %q", got)
	}
}
