package wasm

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/record"
)

// hostileConfig is the PluginConfig of testdata/hostile.wasm as op.
func hostileConfig(t testing.TB, op abi.Op) PluginConfig {
	cfg := watConfig(t, "hostile")
	cfg.Op = op
	return cfg
}

// TestSandboxFailures runs each hostile behaviour in a batch between good
// records: the batch is run again a record at a time, the bad record is
// dead-lettered with a reason naming what it hit, and the others come out
// once, in order.
func TestSandboxFailures(t *testing.T) {
	rt := newRuntime(t, nil)
	tests := []struct {
		name    string
		op      abi.Op
		poison  string
		timeout time.Duration
		reason  string
	}{
		{"loop", abi.OpMap, "@spin", 200 * time.Millisecond, "deadline exceeded after 200ms (the operator's timeout)"},
		{"sleep in poll_oneoff", abi.OpMap, "zzz", 200 * time.Millisecond, "deadline exceeded after 200ms"},
		{"memory bomb", abi.OpMap, "Mem", 0, "the guest asked for 64.1 MiB of memory, over its limit of 64 MiB (memory_limit_pages: 1024)"},
		{"state under many keys", abi.OpMap, "Keys", 0, "state writes of one call over max_batch_state (32 MiB)"},
		{"state value too big", abi.OpMap, "Value", 0, "a state value of 16777217 bytes, over max_state_value (16 MiB)"},
		{"flat_map fan-out", abi.OpFlatMap, "Fan", 0, "flat_map output of one call over max_batch_output (32 MiB)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := hostileConfig(t, tt.op)
			cfg.Timeout = tt.timeout
			_, w := mustLoad(t, rt, cfg)
			out := process(t, w, recs("a", tt.poison, "b"))
			if got := values(out.Records); !equal(got, []string{"a", "b"}) {
				t.Errorf("out = %q", got)
			}
			if len(out.Dead) != 1 || string(out.Dead[0].Record.Value) != tt.poison || !strings.Contains(out.Dead[0].Reason, tt.reason) {
				t.Fatalf("dead = %+v, want %q with a reason containing %q", out.Dead, tt.poison, tt.reason)
			}
			if got := values(process(t, w, recs("c")).Records); !equal(got, []string{"c"}) {
				t.Errorf("after the failure: %q", got)
			}
		})
	}
}

// TestStateRewritesReplace writes a 16 MiB value 200 times to one slot in
// one call: each rewrite replaces the last, so the call stays within
// max_batch_state and the record comes out.
func TestStateRewritesReplace(t *testing.T) {
	rt := newRuntime(t, nil)
	_, w := mustLoad(t, rt, hostileConfig(t, abi.OpMap))
	out := process(t, w, recs("a", "Same", "b"))
	if got := values(out.Records); !equal(got, []string{"a", "Same", "b"}) || len(out.Dead) != 0 {
		t.Fatalf("out = %q, dead = %+v", got, out.Dead)
	}
	if w.ov.bytes > 17<<20 {
		t.Errorf("the overlay held %d bytes for one 16 MiB slot", w.ov.bytes)
	}
}

// TestDefaultTimeout checks that a plugin configured without a timeout
// gets DefaultTimeout, and NoTimeout none.
func TestDefaultTimeout(t *testing.T) {
	rt := newRuntime(t, nil)
	p, _ := mustLoad(t, rt, watConfig(t, "identity"))
	if p.cfg.Timeout != DefaultTimeout {
		t.Errorf("timeout = %v, want %v", p.cfg.Timeout, DefaultTimeout)
	}
	cfg := hostileConfig(t, abi.OpMap)
	cfg.Timeout = NoTimeout
	_, w := mustLoad(t, rt, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Process(ctx, recs("@spin"), new(record.Output)) }()
	select {
	case err := <-done:
		t.Fatalf("a guest without a deadline stopped by itself: %v", err)
	case <-time.After(2 * DefaultTimeout / 5):
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestLoopDoesNotBlockGC runs a guest that loops for ever, with no
// deadline, and collects garbage meanwhile: the collection must finish,
// since the guest yields to the Go scheduler.
func TestLoopDoesNotBlockGC(t *testing.T) {
	rt := newRuntime(t, nil)
	cfg := hostileConfig(t, abi.OpMap)
	cfg.Timeout = NoTimeout
	_, w := mustLoad(t, rt, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Process(ctx, recs("@spin"), new(record.Output)) }()
	for i := 0; i < 20; i++ {
		runtime.GC()
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestLoadDeadline checks that a module whose initialisation never
// returns fails Load with ErrInit and the deadline, rather than hanging.
func TestLoadDeadline(t *testing.T) {
	rt := newRuntime(t, nil)
	tests := []struct {
		name, module, config, want string
	}{
		{"_initialize", "initialize_loop", "", "_initialize failed: deadline exceeded after 300ms"},
		{"weir_init", "hostile", `"loop"`, "weir_init failed: deadline exceeded after 300ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := watConfig(t, tt.module)
			cfg.InitConfig = []byte(tt.config)
			cfg.Timeout = 300 * time.Millisecond
			_, err := rt.Load(context.Background(), cfg)
			if !errors.Is(err, ErrInit) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrInit containing %q", err, tt.want)
			}
		})
	}
}

// TestRebuildDeadline makes the instance that replaces a trapped one loop
// in weir_init for a while: the rebuild is interrupted at the deadline and
// tried again, and the records after the trap come out.
func TestRebuildDeadline(t *testing.T) {
	rt := newRuntime(t, nil)
	cfg := hostileConfig(t, abi.OpMap)
	cfg.Timeout = 200 * time.Millisecond
	now := time.Now().UnixMilli()
	// Instances started within the next 1.5 s loop in weir_init; Load's
	// does not, since the window starts later.
	cfg.InitConfig = []byte(fmt.Sprintf(`"window %d %d"`, now+500, now+1500))
	_, w := mustLoad(t, rt, cfg)
	waitUntil(t, time.UnixMilli(now+500))
	saved := rebuildWaits
	rebuildWaits = []time.Duration{time.Second, time.Second}
	t.Cleanup(func() { rebuildWaits = saved })
	out := process(t, w, recs("a", "!trap", "b"))
	if got := values(out.Records); !equal(got, []string{"a", "b"}) {
		t.Errorf("out = %q", got)
	}
	if len(out.Dead) != 1 || string(out.Dead[0].Record.Value) != "!trap" {
		t.Fatalf("dead = %+v", out.Dead)
	}
	if s := w.Stats(); s.Timeouts == 0 {
		t.Errorf("no rebuild ran into its deadline: %+v", s)
	}
}

// waitUntil blocks until the wall clock passes at.
func waitUntil(t *testing.T, at time.Time) {
	t.Helper()
	if d := time.Until(at); d > 0 {
		<-time.After(d)
	}
}
