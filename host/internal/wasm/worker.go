package wasm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/record"
)

// Worker is one instance of a plugin's module, with the buffers to call it.
// It is not safe for concurrent use: each worker goroutine owns one. When
// the guest fails, the Worker replaces the instance itself (see Process).
type Worker struct {
	p   *Plugin
	log *slog.Logger
	// opExport is the export of the operator's batch call: abi.Op.Export,
	// or abi.Op.TypedExport for a typed module (typed.go).
	opExport string

	inst  *instance // nil until the next call instantiates one
	ninst uint64    // instances made, so replacements can be counted

	// cctx is the context of every guest call; its parent is set per call
	// (see callCtx and call). callStart is when the current call began,
	// for its deadline.
	cctx      callCtx
	callStart time.Time
	stack     [8]uint64
	// newMemory is the memory allocate made for the instance being made;
	// memRefused describes a grow past the limit during the current call.
	newMemory  *guestMemory
	memRefused string

	frame   []byte // the encoded batch, reused
	bufPtr  uint32 // guest input region from weir_alloc; 0 when none yet
	bufCap  uint32
	sinceGC int // batch calls since weir_gc last ran

	// State TTL (ttl.go): the wall clock at the start of the call, the
	// operator's watermark, and a buffer for stamped values.
	callNow   int64
	watermark int64
	ttlBuf    []byte
	// Set during a batch call, for the host functions.
	batch    []record.Record
	storeErr error
	keyBuf   []byte
	ov       overlay
	rejected []bool

	dec     decoder
	typed   typedWorker // typed plugins only (typed.go)
	agg     aggWorker   // aggregate plugins only
	limiter logLimiter
	stats   workerStats
	closed  bool
}

// instance is one instantiation of the module, with its exports looked up.
type instance struct {
	mod   api.Module
	mem   api.Memory
	alloc api.Function
	op    api.Function
	gc    api.Function // nil when the module does not export weir_gc
	out   *guestOutput
	// memory is the instance's linear memory, kept mapped while a call
	// runs.
	memory *guestMemory
	agg    aggExports // aggregate plugins only
}

// Stats are a Worker's counters since it was made.
type Stats struct {
	Batches    uint64 // Process calls with at least one record
	Records    uint64 // records passed to Process
	Calls      uint64 // guest batch calls, including one-record replays
	Errors     uint64 // records rejected, dead-lettered: by the guest, or by a typed module's declaration or patch
	Trapped    uint64 // records dead-lettered because the guest failed on them alone
	Traps      uint64 // failed guest calls: traps, exits, timeouts, invalid output, overruns
	Timeouts   uint64 // guest calls interrupted at their deadline
	Overruns   uint64 // limits hit: memory grows refused, state or output over its bound
	Restarts   uint64 // instances replaced after a failure
	LogDropped uint64 // guest log lines dropped by the rate limit
}

type workerStats struct {
	batches, records, calls, errors, trapped, traps, timeouts, overruns, restarts, logDropped atomic.Uint64
}

// Stats returns the worker's counters. Unlike the rest of Worker, it may be
// called from any goroutine.
func (w *Worker) Stats() Stats {
	s := &w.stats
	return Stats{
		Batches:    s.batches.Load(),
		Records:    s.records.Load(),
		Calls:      s.calls.Load(),
		Errors:     s.errors.Load(),
		Trapped:    s.trapped.Load(),
		Traps:      s.traps.Load(),
		Timeouts:   s.timeouts.Load(),
		Overruns:   s.overruns.Load(),
		Restarts:   s.restarts.Load(),
		LogDropped: s.logDropped.Load(),
	}
}

// trapError is a guest call that failed in a way the Worker recovers from
// by replacing the instance: a Wasm trap, a WASI exit, a timeout, an
// allocation failure or an output frame that breaks the ABI.
type trapError struct {
	reason string // for the dead letter: "trap: wasm error: unreachable"
	cause  error
}

func (e *trapError) Error() string { return e.reason }
func (e *trapError) Unwrap() error { return e.cause }

// newWorker makes a Worker and its first instance; typed says whether the
// module selected the typed convention (abi.ExportFields), whose exports
// the instance then calls.
func (p *Plugin) newWorker(ctx context.Context, typed bool) (*Worker, error) {
	w := &Worker{
		p:         p,
		log:       p.log,
		dec:       decoder{op: p.cfg.Op, stage: p.cfg.Operator, limit: p.cfg.Limits.OutputBytes},
		watermark: math.MinInt64,
		opExport:  p.cfg.Op.Export(),
	}
	if typed {
		w.opExport = p.cfg.Op.TypedExport()
	}
	w.ov.limit = p.cfg.Limits.StateBytes
	w.cctx.w = w
	if err := w.instantiate(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// instantiate makes a fresh instance and runs its initialisation:
// _initialize when exported, then weir_init with the plugin's config.
func (w *Worker) instantiate(ctx context.Context) error {
	p := w.p
	name := p.cfg.Operator + "#" + strconv.FormatUint(p.rt.seq.Add(1), 10)
	out := newGuestOutput(w.log)
	w.newMemory = nil
	actx := experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(w.allocate))
	mod, err := p.eng.rt.InstantiateModule(actx, p.compiled,
		p.modCfg.WithName(name).WithStdout(&out.stdout).WithStderr(&out.stderr).WithNanosleep(w.nanosleep))
	if err != nil {
		return p.cfg.errorf(ErrInstantiate, err, "cannot instantiate the module")
	}
	inst := &instance{
		mod:    mod,
		mem:    mod.Memory(),
		alloc:  mod.ExportedFunction(abi.ExportAlloc),
		op:     mod.ExportedFunction(w.opExport),
		gc:     mod.ExportedFunction(abi.ExportGC),
		out:    out,
		memory: w.newMemory,
	}
	w.newMemory = nil
	if !hasMemory(inst.mem) {
		mod.Close(ctx)
		return p.cfg.errorf(ErrInvalidModule, nil, "the module defines no memory")
	}
	w.inst = inst
	w.bufPtr, w.bufCap, w.sinceGC = 0, 0, 0
	if err := w.initialize(ctx); err != nil {
		w.dropInstance(ctx)
		return err
	}
	if p.cfg.Op == abi.OpAggregate {
		if err := w.aggInstantiated(ctx); err != nil {
			w.dropInstance(ctx)
			return err
		}
	}
	w.ninst++
	if w.ninst > 1 {
		w.stats.restarts.Add(1)
	}
	return nil
}

// rebuildWaits are the pauses between the attempts of rebuild.
var rebuildWaits = []time.Duration{100 * time.Millisecond, time.Second}

// rebuild makes the instance that replaces one that failed. An attempt
// that fails (its initialisation traps, is rejected, or runs past the
// deadline) is retried after each of rebuildWaits; the last error is
// returned, and is fatal for the pipeline.
func (w *Worker) rebuild(ctx context.Context) error {
	err := w.instantiate(ctx)
	for _, wait := range rebuildWaits {
		if err == nil || ctx.Err() != nil {
			break
		}
		w.log.Warn("the instance replacing a failed one did not start; trying again", "error", err, "in", wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
		err = w.instantiate(ctx)
	}
	return err
}

// hasMemory reports whether m, from api.Module.Memory, is a memory. wazero
// returns a typed nil for a module without one.
func hasMemory(m api.Memory) bool {
	return m != nil && !reflect.ValueOf(m).IsNil()
}

// initialize runs _initialize, if exported, and weir_init, each under the
// plugin's timeout.
func (w *Worker) initialize(ctx context.Context) error {
	cfg, inst := &w.p.cfg, w.inst
	if f := inst.mod.ExportedFunction(abi.ExportInitialize); f != nil {
		inst.out.beginCall()
		if err := w.call(ctx, f); err != nil {
			return cfg.errorf(ErrInit, nil, "%s failed: %s", abi.ExportInitialize, w.describe(err))
		}
	}
	inst.out.beginCall()
	ptr, err := w.writeInput(ctx, cfg.InitConfig)
	if err != nil {
		return cfg.errorf(ErrInit, nil, "passing the config to %s failed: %s", abi.ExportInit, w.describe(err))
	}
	w.stack[0], w.stack[1] = uint64(ptr), uint64(len(cfg.InitConfig))
	if err := w.call(ctx, inst.mod.ExportedFunction(abi.ExportInit)); err != nil {
		return cfg.errorf(ErrInit, nil, "%s failed: %s", abi.ExportInit, w.describe(err))
	}
	mptr, mlen := abi.Unpack(w.stack[0])
	if mlen == 0 {
		return nil
	}
	msg, ok := inst.mem.Read(mptr, min(mlen, maxErrorMessage))
	if !ok {
		return cfg.errorf(ErrInit, nil, "%s failed, and its error text (%d bytes at %d) lies outside its memory",
			abi.ExportInit, mlen, mptr)
	}
	return cfg.errorf(ErrInit, nil, "%s rejected the config: %s", abi.ExportInit, guestText(msg, maxErrorMessage))
}

// minGuestBuffer is the smallest input region the host asks weir_alloc for.
const minGuestBuffer = 4 << 10

// writeInput copies data into the guest's input region, asking weir_alloc
// for a bigger region first when data does not fit, and returns its
// address. Errors are the alloc call's error or a *trapError.
func (w *Worker) writeInput(ctx context.Context, data []byte) (uint32, error) {
	if len(data) > math.MaxUint32 {
		return 0, &trapError{reason: fmt.Sprintf("input of %d bytes is over the 4 GiB a guest can address", len(data))}
	}
	n := uint32(len(data))
	inst := w.inst
	if w.bufPtr == 0 || n > w.bufCap {
		size := uint32(minGuestBuffer)
		for size < n && size < 1<<31 {
			size <<= 1
		}
		size = max(size, n)
		w.stack[0] = uint64(size)
		if err := w.call(ctx, inst.alloc); err != nil {
			return 0, err
		}
		ptr := uint32(w.stack[0])
		if ptr == 0 {
			return 0, &trapError{reason: fmt.Sprintf("%s(%d) returned 0: the guest could not allocate", abi.ExportAlloc, size)}
		}
		w.bufPtr, w.bufCap = ptr, size
	}
	if !inst.mem.Write(w.bufPtr, data) {
		ptr := w.bufPtr
		w.bufPtr, w.bufCap = 0, 0
		return 0, &trapError{reason: fmt.Sprintf("%s returned a region at %d that lies outside the guest's %d bytes of memory",
			abi.ExportAlloc, ptr, inst.mem.Size())}
	}
	return w.bufPtr, nil
}

// describe turns the error of a guest call into a reason: "trap: ...",
// "exited with code N", "deadline exceeded after D", with the memory
// limit when the guest hit it, followed by what the call wrote to stderr.
func (w *Worker) describe(err error) string {
	var reason string
	var te *trapError
	var ie *interruptError
	var exit *sys.ExitError
	switch {
	case errors.As(err, &te):
		reason = te.reason
	case errors.As(err, &ie):
		reason = ie.reason
	case errors.As(err, &exit):
		reason = fmt.Sprintf("exited with code %d", exit.ExitCode())
	default:
		msg, _, _ := strings.Cut(err.Error(), "\n")
		reason = "trap: " + strings.TrimSuffix(msg, " (recovered by wazero)")
	}
	if w.memRefused != "" && ie == nil {
		reason += " (" + w.memRefused + ")"
	}
	if w.inst != nil {
		if ex := w.inst.out.stderrExcerpt(); ex != "" {
			reason += " (stderr: " + ex + ")"
		}
	}
	return reason
}

// dropInstance closes the current instance; the next call makes a new one.
func (w *Worker) dropInstance(ctx context.Context) {
	if w.inst == nil {
		return
	}
	w.inst.out.close()
	w.inst.mod.Close(ctx)
	w.inst = nil
}

// Process runs the batch in through the guest and appends the results to
// out: output records in input order, and a dead letter for each input the
// guest rejected or failed on.
//
// A record the guest rejects (an error entry) becomes a dead letter with
// the guest's message; other entries for it are discarded, and so are the
// state writes made for it. When the call fails instead (a trap, a WASI
// exit, a timeout, an output frame that breaks the ABI), nothing of it is
// kept: its outputs and its state writes are discarded, the instance is
// replaced, and the batch is run again one record at a time. A record that
// fails alone becomes a dead letter naming the failure; the others come
// out as if nothing had happened.
//
// A non-nil error is fatal for the pipeline: the state store failed, a
// replacement instance could not be made, or ctx was canceled. out may
// then hold part of the batch's results, and state part of its writes.
// The Worker stays usable; its next call starts a fresh instance.
func (w *Worker) Process(ctx context.Context, in []record.Record, out *record.Output) error {
	if w.closed {
		return w.p.cfg.errorf(ErrClosed, nil, "worker closed")
	}
	if w.p.cfg.Op == abi.OpAggregate {
		return w.p.cfg.errorf(ErrConfig, nil, "Process runs batch operations; an %s plugin runs with AggAdd", abi.OpAggregate)
	}
	for len(in) > abi.MaxBatchRecords {
		if err := w.Process(ctx, in[:abi.MaxBatchRecords], out); err != nil {
			return err
		}
		in = in[abi.MaxBatchRecords:]
	}
	if len(in) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return w.p.cfg.errorf(err, nil, "batch not run")
	}
	w.stats.batches.Add(1)
	w.stats.records.Add(uint64(len(in)))
	nr, nd := len(out.Records), len(out.Dead)
	err := w.run(ctx, in, out)
	t, ok := err.(*trapError)
	if !ok {
		return err // nil or fatal
	}
	out.Truncate(nr, nd)
	if len(in) == 1 {
		w.deadLetter(in[0], t, out)
		return nil
	}
	w.log.Warn("guest failed on a batch; running its records one at a time",
		"reason", t.reason, "records", len(in))
	for i := range in {
		if err := ctx.Err(); err != nil {
			return w.p.cfg.errorf(err, nil, "batch interrupted")
		}
		nr, nd = len(out.Records), len(out.Dead)
		err := w.run(ctx, in[i:i+1], out)
		if t, ok := err.(*trapError); ok {
			out.Truncate(nr, nd)
			w.deadLetter(in[i], t, out)
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *Worker) deadLetter(rec record.Record, t *trapError, out *record.Output) {
	out.Dead = append(out.Dead, record.DeadLetter{Record: rec, Stage: w.p.cfg.Operator, Reason: t.reason})
	w.stats.trapped.Add(1)
	w.log.Warn("record dead-lettered: the guest failed on it alone",
		"origin", rec.Origin.String(), "reason", t.reason)
}

// run makes one batch call for in and, when it succeeds, appends its
// results to out and commits its state writes. It returns nil, a
// *trapError (the instance has been dropped; out may hold partial
// results), or a fatal error.
func (w *Worker) run(ctx context.Context, in []record.Record, out *record.Output) error {
	if w.inst == nil {
		if err := w.rebuild(ctx); err != nil {
			return err
		}
	}
	if w.p.decl != nil {
		return w.runTyped(ctx, in, out)
	}
	w.frame = appendRecords(abi.AppendBatchHeader(w.frame[:0], len(in)), in)
	frame, err := w.batchCall(ctx, in, w.frame)
	if err != nil {
		return err
	}
	nrej, err := w.dec.decode(frame, in, out, w.rejected)
	return w.batchDone(ctx, nrej, err)
}

// appendRecords appends the batch-frame encoding of recs to f.
func appendRecords(f []byte, recs []record.Record) []byte {
	for i := range recs {
		r := &recs[i]
		f = abi.AppendRecord(f, r.Timestamp, r.Key, r.Value, len(r.Headers))
		for _, h := range r.Headers {
			f = abi.AppendHeader(f, h.Key, h.Value)
		}
	}
	return f
}

// batchCall writes input, the frame of the batch in, into the guest and
// calls the operator's export with it, with in as the context of state
// calls. It returns the output frame, a view of guest memory valid until
// the next guest call; or a *trapError (the instance dropped, unless the
// call went over a limit), or a fatal error.
func (w *Worker) batchCall(ctx context.Context, in []record.Record, input []byte) ([]byte, error) {
	inst, cfg := w.inst, &w.p.cfg
	inst.out.beginCall()
	ptr, err := w.writeInput(ctx, input)
	if err == nil {
		w.beginBatch(in)
		w.stack[0], w.stack[1] = uint64(ptr), uint64(len(input))
		err = w.timedCall(ctx, inst.op)
		w.batch = nil
	}
	w.stats.calls.Add(1)

	if serr := w.storeErr; serr != nil {
		w.storeErr = nil
		w.dropInstance(ctx) // the guest was stopped mid-call
		return nil, cfg.errorf(ErrState, serr, "state store failed during a %s call", cfg.Op)
	}
	if err != nil {
		if interrupted(ctx, err) {
			w.dropInstance(ctx)
			return nil, cfg.errorf(ctx.Err(), nil, "batch call interrupted")
		}
		return nil, w.trapped(ctx, err)
	}
	if w.ov.over != "" {
		return nil, w.overran(w.ov.overKind, w.ov.over)
	}
	optr, olen := abi.Unpack(w.stack[0])
	frame, ok := inst.mem.Read(optr, olen)
	if !ok {
		return nil, w.trapped(ctx, &trapError{reason: fmt.Sprintf(
			"invalid output: the output frame (%d bytes at %d) lies outside the guest's %d bytes of memory",
			olen, optr, inst.mem.Size())})
	}
	return frame, nil
}

// batchDone ends a batch call whose output frame was decoded with the
// result (nrej, err): a frame over the output limit or breaking the ABI
// fails the call as batchCall's failures do; otherwise its state writes
// are committed, nrej records counted as rejected, and the call counted
// towards weir_gc.
func (w *Worker) batchDone(ctx context.Context, nrej int, err error) error {
	if le, ok := err.(*limitError); ok {
		return w.overran(limitBatchOutput, le.msg)
	} else if err != nil {
		return w.trapped(ctx, &trapError{reason: "invalid output: " + err.Error(), cause: err})
	}
	if err := w.ov.commit(w.p.store, w.rejected); err != nil {
		return w.p.cfg.errorf(ErrState, err, "committing state")
	}
	if nrej > 0 {
		w.stats.errors.Add(uint64(nrej))
	}
	w.sinceGC++
	if w.sinceGC >= abi.GCEveryCalls {
		w.collect(ctx)
	}
	return nil
}

// beginBatch sets up the state context of a batch call for in.
func (w *Worker) beginBatch(in []record.Record) {
	w.batch = in
	w.ov.reset()
	if w.p.ttl.ttl > 0 && !w.p.ttl.event {
		w.callNow = w.p.ttl.now().UnixMilli()
	}
	if cap(w.rejected) < len(in) {
		w.rejected = make([]bool, len(in))
	} else {
		w.rejected = w.rejected[:len(in)]
		clear(w.rejected)
	}
}

// timedCall is call, timed for PluginConfig.ObserveCall when set.
func (w *Worker) timedCall(ctx context.Context, fn api.Function) error {
	observe := w.p.cfg.ObserveCall
	if observe == nil {
		return w.call(ctx, fn)
	}
	start := time.Now()
	err := w.call(ctx, fn)
	observe(time.Since(start))
	return err
}

// overran records a call that went over limit, one of the plugin's Limits. The
// call's results are discarded as for a trap, but the instance, which
// returned normally, is kept.
func (w *Worker) overran(limit, reason string) *trapError {
	w.limitHit(limit)
	return &trapError{reason: reason}
}

// trapped records a failed call and drops the instance.
func (w *Worker) trapped(ctx context.Context, err error) *trapError {
	t := &trapError{reason: w.describe(err), cause: err}
	w.stats.traps.Add(1)
	w.dropInstance(ctx)
	return t
}

// collect calls weir_gc, when exported. The batch's results are already
// out, so a failure only replaces the instance.
func (w *Worker) collect(ctx context.Context) {
	w.sinceGC = 0
	if w.inst.gc == nil {
		return
	}
	if err := w.call(ctx, w.inst.gc); err != nil {
		t := w.trapped(ctx, err)
		w.log.Warn("guest failed in "+abi.ExportGC+"; replacing the instance", "reason", t.reason)
	}
}

// Close closes the worker's instance. The Worker cannot be used after.
func (w *Worker) Close(ctx context.Context) error {
	if w.closed {
		return nil
	}
	w.closed = true
	if d := w.limiter.takeDropped(time.Now(), true); d > 0 {
		w.log.Warn("guest log lines dropped by the rate limit", "dropped", d, "limit_per_second", logRate)
	}
	w.dropInstance(ctx)
	return nil
}
