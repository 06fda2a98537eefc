package wasm

import (
	"context"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf16"

	"github.com/tetratelabs/wazero/api"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/state"
)

// Host functions find their Worker through the context of the call.
//
// A host module is instantiated once per wazero runtime and shared by every
// instance in it, so a host function cannot capture its Worker. Instead,
// every guest call a Worker makes (_initialize, weir_init, weir_alloc, the
// batch export, weir_gc) passes a *callCtx that carries the Worker, and
// wazero hands that same context to the host functions the guest calls.
// The callCtx is a field of the Worker whose parent is swapped per call
// (Worker.call), so the lookup costs no allocation.

// callCtx is the context of a guest call: its parent, plus the Worker.
type callCtx struct {
	context.Context
	w *Worker
}

// workerKey is the context key of the calling Worker.
type workerKey struct{}

// Value implements context.Context.
func (c *callCtx) Value(key any) any {
	if _, ok := key.(workerKey); ok {
		return c.w
	}
	return c.Context.Value(key)
}

// workerFrom returns the Worker making the current guest call, or nil.
func workerFrom(ctx context.Context) *Worker {
	if c, ok := ctx.(*callCtx); ok {
		return c.w
	}
	w, _ := ctx.Value(workerKey{}).(*Worker)
	return w
}

// hostFunc is one function of the abi.ImportModule host module.
type hostFunc struct {
	name       string
	sig        Signature
	paramNames []string
	fn         api.GoModuleFunc
}

// weirFuncs are the host functions of abi.ImportModule.
var weirFuncs = []hostFunc{
	{
		name:       abi.ImportLog,
		sig:        Signature{Params: []api.ValueType{i32, i32, i32}},
		paramNames: []string{"level", "ptr", "len"},
		fn:         hostLog,
	},
	{
		name:       abi.ImportStateGet,
		sig:        Signature{Params: []api.ValueType{i32, i32, i32, i32, i32}, Results: []api.ValueType{i32}},
		paramNames: []string{"index", "kptr", "klen", "vptr", "vcap"},
		fn:         hostStateGet,
	},
	{
		name:       abi.ImportStatePut,
		sig:        Signature{Params: []api.ValueType{i32, i32, i32, i32, i32}, Results: []api.ValueType{i32}},
		paramNames: []string{"index", "kptr", "klen", "vptr", "vlen"},
		fn:         hostStatePut,
	},
	{
		name:       abi.ImportStateDelete,
		sig:        Signature{Params: []api.ValueType{i32, i32, i32}, Results: []api.ValueType{i32}},
		paramNames: []string{"index", "kptr", "klen"},
		fn:         hostStateDelete,
	},
}

// abortSig is the signature of env.abort, AssemblyScript's abort hook.
var abortSig = Signature{Params: []api.ValueType{i32, i32, i32, i32}}

// Guest log rate limit, per Worker: a token bucket.
const (
	logRate  = 100 // lines per second
	logBurst = 100
	// logDropReport is how often, at most, the count of dropped lines is
	// logged while lines are being dropped.
	logDropReport = 10 * time.Second
)

// logLimiter is a token bucket for guest log lines.
type logLimiter struct {
	tokens     float64
	last       time.Time
	dropped    uint64 // since the last report
	lastReport time.Time
}

// allow takes a token, reporting whether the line may be logged.
func (l *logLimiter) allow(now time.Time) bool {
	if l.last.IsZero() {
		l.tokens = logBurst
	} else {
		l.tokens = min(logBurst, l.tokens+now.Sub(l.last).Seconds()*logRate)
	}
	l.last = now
	if l.tokens >= 1 {
		l.tokens--
		return true
	}
	l.dropped++
	return false
}

// takeDropped returns the count of lines dropped since the last report if
// a report is due (or force is set), and resets it.
func (l *logLimiter) takeDropped(now time.Time, force bool) uint64 {
	if l.dropped == 0 || (!force && now.Sub(l.lastReport) < logDropReport) {
		return 0
	}
	n := l.dropped
	l.dropped = 0
	l.lastReport = now
	return n
}

func slogLevel(level int32) slog.Level {
	switch level {
	case abi.LogDebug:
		return slog.LevelDebug
	case abi.LogWarn:
		return slog.LevelWarn
	case abi.LogError:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// hostLog implements abi.ImportLog: (level i32, ptr u32, len u32) -> ().
func hostLog(ctx context.Context, mod api.Module, stack []uint64) {
	w := workerFrom(ctx)
	if w == nil {
		return
	}
	level, ptr, n := api.DecodeI32(stack[0]), api.DecodeU32(stack[1]), api.DecodeU32(stack[2])
	now := time.Now()
	if !w.limiter.allow(now) {
		w.stats.logDropped.Add(1)
		return
	}
	if d := w.limiter.takeDropped(now, false); d > 0 {
		w.log.Warn("guest log lines dropped by the rate limit", "dropped", d, "limit_per_second", logRate)
	}
	truncated := n > abi.MaxLogLine
	if truncated {
		n = abi.MaxLogLine
	}
	b, ok := mod.Memory().Read(ptr, n)
	if !ok {
		w.log.Warn("guest log call with a line outside its memory", "ptr", ptr, "len", n)
		return
	}
	attrs := []slog.Attr{slog.String("source", "guest")}
	if truncated {
		attrs = append(attrs, slog.Bool("truncated", true))
	}
	if level < abi.LogDebug || level > abi.LogError {
		attrs = append(attrs, slog.Int("guest_level", int(level)))
	}
	w.log.LogAttrs(ctx, slogLevel(level), string(b), attrs...)
}

// stateKey validates a state call's record index and key and returns the
// store key, scoped to the operator and the record's key; or a status.
func (w *Worker) stateKey(mem api.Memory, index, kptr, klen uint32) ([]byte, int32) {
	if w == nil || w.batch == nil {
		return nil, abi.StatusNoContext
	}
	if uint64(index) >= uint64(len(w.batch)) {
		return nil, abi.StatusBadIndex
	}
	if klen > abi.MaxStateKey {
		return nil, abi.StatusTooLarge
	}
	k, ok := mem.Read(kptr, klen)
	if !ok {
		return nil, abi.StatusBadMemory
	}
	w.keyBuf = state.Key(w.keyBuf[:0], w.p.cfg.Operator, w.batch[index].Key, k)
	return w.keyBuf, abi.StatusOK
}

// storeFailed records a Store error and fails the guest call: wazero turns
// the panic into the call's error, and Process reports w.storeErr as fatal.
func (w *Worker) storeFailed(err error) {
	w.storeErr = err
	panic(fmt.Errorf("state store: %w", err))
}

// hostStateGet implements abi.ImportStateGet:
// (index u32, kptr u32, klen u32, vptr u32, vcap u32) -> (i32).
func hostStateGet(ctx context.Context, mod api.Module, stack []uint64) {
	w := workerFrom(ctx)
	mem := mod.Memory()
	key, st := w.stateKey(mem, api.DecodeU32(stack[0]), api.DecodeU32(stack[1]), api.DecodeU32(stack[2]))
	if st != abi.StatusOK {
		stack[0] = api.EncodeI32(st)
		return
	}
	vptr, vcap := api.DecodeU32(stack[3]), api.DecodeU32(stack[4])
	dst, ok := mem.Read(vptr, vcap)
	if !ok {
		stack[0] = api.EncodeI32(abi.StatusBadMemory)
		return
	}
	v, found, inOverlay := w.ov.get(key)
	if !inOverlay {
		var err error
		if v, found, err = w.p.store.Get(key); err != nil {
			w.storeFailed(err)
		}
	}
	if found && w.p.ttl.ttl > 0 {
		t, inner, err := ttlUnwrap(v)
		if err != nil {
			w.storeFailed(err)
		}
		found, v = !w.ttlExpired(t, int(api.DecodeU32(stack[0]))), inner
	}
	if !found {
		stack[0] = api.EncodeI32(abi.StatusNotFound)
		return
	}
	copy(dst, v)
	stack[0] = api.EncodeI32(int32(min(len(v), abi.MaxStateValue)))
}

// hostStatePut implements abi.ImportStatePut:
// (index u32, kptr u32, klen u32, vptr u32, vlen u32) -> (i32 status).
func hostStatePut(ctx context.Context, mod api.Module, stack []uint64) {
	w := workerFrom(ctx)
	mem := mod.Memory()
	index := api.DecodeU32(stack[0])
	key, st := w.stateKey(mem, index, api.DecodeU32(stack[1]), api.DecodeU32(stack[2]))
	if st != abi.StatusOK {
		stack[0] = api.EncodeI32(st)
		return
	}
	vlen := api.DecodeU32(stack[4])
	if limit := w.p.cfg.Limits.StateValue; int64(vlen) > int64(limit) {
		w.ov.refuse(limitStateValue, fmt.Sprintf("a state value of %d bytes, over max_state_value (%s)", vlen, sizeString(uint64(limit))))
		stack[0] = api.EncodeI32(abi.StatusTooLarge)
		return
	}
	v, ok := mem.Read(api.DecodeU32(stack[3]), vlen)
	if !ok {
		stack[0] = api.EncodeI32(abi.StatusBadMemory)
		return
	}
	if w.p.ttl.ttl > 0 {
		v = w.ttlWrap(v, int(index))
	}
	if !w.ov.put(key, v, false, int(index)) {
		stack[0] = api.EncodeI32(abi.StatusTooLarge)
		return
	}
	stack[0] = api.EncodeI32(abi.StatusOK)
}

// hostStateDelete implements abi.ImportStateDelete:
// (index u32, kptr u32, klen u32) -> (i32 status).
func hostStateDelete(ctx context.Context, mod api.Module, stack []uint64) {
	w := workerFrom(ctx)
	index := api.DecodeU32(stack[0])
	key, st := w.stateKey(mod.Memory(), index, api.DecodeU32(stack[1]), api.DecodeU32(stack[2]))
	if st != abi.StatusOK {
		stack[0] = api.EncodeI32(st)
		return
	}
	if !w.ov.put(key, nil, true, int(index)) {
		stack[0] = api.EncodeI32(abi.StatusTooLarge)
		return
	}
	stack[0] = api.EncodeI32(abi.StatusOK)
}

// abortError is the trap env.abort raises.
type abortError struct {
	msg, file string
	line, col uint32
}

func (e *abortError) Error() string {
	s := "abort"
	if e.msg != "" {
		s += ": " + e.msg
	}
	if e.file != "" {
		s += fmt.Sprintf(" at %s:%d:%d", e.file, e.line, e.col)
	}
	return s
}

// hostAbort implements env.abort(msg, file, line, col i32), the hook
// AssemblyScript calls on a failed assertion or an uncaught error. It traps
// with the message.
func hostAbort(_ context.Context, mod api.Module, stack []uint64) {
	mem := mod.Memory()
	panic(&abortError{
		msg:  readASString(mem, api.DecodeU32(stack[0])),
		file: readASString(mem, api.DecodeU32(stack[1])),
		line: api.DecodeU32(stack[2]),
		col:  api.DecodeU32(stack[3]),
	})
}

// maxASString bounds the bytes of an AssemblyScript string read for abort.
const maxASString = 1024

// readASString decodes the AssemblyScript string at ptr: UTF-16LE, with its
// byte length in the u32 before it. It returns "" when ptr is null or the
// string lies outside memory, and truncates long strings.
func readASString(mem api.Memory, ptr uint32) string {
	if mem == nil || ptr < 4 {
		return ""
	}
	n, ok := mem.ReadUint32Le(ptr - 4)
	if !ok {
		return ""
	}
	n = min(n, maxASString) &^ 1
	b, ok := mem.Read(ptr, n)
	if !ok {
		return ""
	}
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
	}
	return string(utf16.Decode(u))
}
