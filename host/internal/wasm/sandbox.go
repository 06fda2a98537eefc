package wasm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/weir-stream/weir/host/internal/meter"
)

// The sandbox: how no guest can hold the process.
//
// wazero runs a guest as native code on the calling goroutine, and native
// code never reaches a Go safe point: a guest in a loop would stall every
// goroutine of the process as soon as a garbage collection tried to stop
// the world, and no deadline could fire, since the timers stop with the
// world. So every module is rewritten at load (package meter) to count
// checks, at function entries (but those of small leaf functions), loop
// headers and long stretches of straight code, and to call meter.ImportName
// back once per yieldFuel checks. That call is Go code: the goroutine can be preempted
// there, and hostYield interrupts the guest when its call is past its
// deadline or the pipeline is stopping. See RATIONALE.md#sandbox.

// DefaultTimeout bounds each guest call of a plugin whose config sets no
// timeout: initialisation, a batch, a one-record re-run, an aggregate call.
const DefaultTimeout = 5 * time.Second

// NoTimeout, as PluginConfig.Timeout, runs calls without a deadline. A
// guest that never returns then holds its worker (and the pipeline's
// drain) for ever; it still cannot block the rest of the process.
const NoTimeout time.Duration = -1

// yieldFuel is how many checks an instrumented guest makes between two
// calls of hostYield: with a check at every loop header, about 100 µs of
// the tightest loop, and at most a few milliseconds of any code.
const yieldFuel = 1 << 16

// sandboxFuncs are the host functions of meter.ImportModule.
var sandboxFuncs = []hostFunc{{
	name: meter.ImportName,
	sig:  Signature{Results: []api.ValueType{i32}},
	fn:   hostYield,
}}

// interruptError is the error of a guest call that hostYield stopped.
type interruptError struct {
	reason string // for the dead letter: "deadline exceeded after 5s"
	cause  error  // the context's error when the pipeline stopped the call
}

func (e *interruptError) Error() string { return e.reason }
func (e *interruptError) Unwrap() error { return e.cause }

// hostYield implements meter.ImportName: () -> (i32 fuel). It returns the
// fuel for the next stretch, or panics with an *interruptError, which
// wazero returns as the guest call's error.
func hostYield(ctx context.Context, _ api.Module, stack []uint64) {
	if w := workerFrom(ctx); w != nil {
		if err := w.overdue(); err != nil {
			panic(err)
		}
	}
	stack[0] = api.EncodeI32(yieldFuel)
}

// overdue returns an *interruptError when the current guest call must
// stop: the context of the call is done, or the call is past its deadline.
func (w *Worker) overdue() error {
	if err := w.cctx.Context.Err(); err != nil {
		return &interruptError{reason: "interrupted: " + err.Error(), cause: err}
	}
	if t := w.p.cfg.Timeout; t > 0 && time.Since(w.callStart) > t {
		w.limitHit(limitTimeout)
		return &interruptError{reason: fmt.Sprintf("deadline exceeded after %s (the operator's timeout)", t)}
	}
	return nil
}

// The sandbox's bounds, named by their config keys.
const (
	limitTimeout     = "timeout"
	limitMemory      = "memory_limit_pages"
	limitStateValue  = "max_state_value"
	limitBatchState  = "max_batch_state"
	limitBatchOutput = "max_batch_output"
)

// limitHit counts a call that hit the bound named limit.
func (w *Worker) limitHit(limit string) {
	if limit == limitTimeout {
		w.stats.timeouts.Add(1)
	} else {
		w.stats.overruns.Add(1)
	}
	if f := w.p.cfg.ObserveLimit; f != nil {
		f(limit)
	}
}

// call runs fn with w.stack as its parameters and results, under the
// sandbox: with the deadline of the plugin's timeout, interrupted when ctx
// is done, and with the instance's memory kept mapped until it returns.
// Every guest call goes through it.
func (w *Worker) call(ctx context.Context, fn api.Function) error {
	w.cctx.Context = ctx
	w.callStart = time.Now()
	w.memRefused = ""
	mem := w.inst.memory
	mem.enter()
	err := fn.CallWithStack(&w.cctx, w.stack[:])
	mem.leave()
	return err
}

// interrupted reports whether err is a call that the pipeline stopped
// (ctx done), as opposed to a guest failure.
func interrupted(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// nanosleep is the instance's WASI sleep (poll_oneoff on a clock): it
// sleeps for ns, but not past the call's deadline, and not once the call's
// context is done; a sleep cut short interrupts the guest.
func (w *Worker) nanosleep(ns int64) {
	d, cut := time.Duration(ns), false
	if t := w.p.cfg.Timeout; t > 0 {
		if left := t - time.Since(w.callStart); left < d {
			d, cut = left, true
		}
	}
	if d > 0 {
		var done <-chan struct{}
		if c := w.cctx.Context; c != nil {
			done = c.Done()
		}
		timer := time.NewTimer(d)
		select {
		case <-timer.C:
		case <-done:
			cut = true
		}
		timer.Stop()
	}
	if !cut {
		return
	}
	if err := w.overdue(); err != nil {
		panic(err)
	}
}
