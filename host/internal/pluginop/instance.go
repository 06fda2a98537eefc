package pluginop

import (
	"context"
	"math"
	"time"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/host/internal/wasm"
)

// instance adapts a plugin worker to the engine, and swaps in the
// plugin's new version, between batches, when its slot has one.
type instance struct {
	name string
	slot *Operator
	ver  *pluginVersion // the version w runs
	w    *wasm.Worker
	sh   shadowOperator // this instance's side of a shadow run
}

func (o *instance) Name() string { return o.name }
func (o *instance) Process(ctx context.Context, in []record.Record, out *record.Output) error {
	var swapped time.Time
	if v := o.slot.cur.Load(); v != o.ver {
		swapped = time.Now()
		if err := o.swap(ctx, v); err != nil {
			// The version cannot start here: keep the one running, and
			// let its probation count it as failed.
			o.slot.log.Error("plugin version could not start on this worker; the previous one goes on", "version", v.n, "error", err)
			o.slot.observe(v, int64(len(in)), int64(len(in)))
			swapped = time.Time{}
		}
	}
	shadowed := (o.sh.w != nil || o.slot.shadow.Load() != nil) && o.runShadow(ctx, in)
	start, deadStart := len(out.Records), len(out.Dead)
	err := o.w.Process(ctx, in, out)
	if !swapped.IsZero() {
		o.slot.env.Metrics.PluginSwapped(time.Since(swapped))
	}
	if !o.ver.settled.Load() {
		o.slot.observe(o.ver, int64(len(in)), int64(len(out.Dead)-deadStart))
	}
	if err == nil && shadowed {
		o.compareShadow(in, out, start, deadStart)
	}
	return err
}

// swap makes the operator run version v: a worker v prepared, or a new
// one, carrying the old worker's watermark; the old worker is closed.
func (o *instance) swap(ctx context.Context, v *pluginVersion) error {
	var w *wasm.Worker
	select {
	case w = <-v.ready:
	default:
		var err error
		if w, err = v.plug.NewWorker(ctx); err != nil {
			return err
		}
	}
	o.slot.refs.acquire(v.plug)
	if o.w != nil {
		w.SetWatermark(o.w.Watermark())
		o.w.Close(ctx)
		o.slot.refs.release(ctx, o.ver.plug)
	}
	o.w, o.ver = w, v
	return nil
}

func (o *instance) Close(ctx context.Context) error {
	o.closeShadow(ctx)
	err := o.w.Close(ctx)
	o.slot.refs.release(ctx, o.ver.plug)
	return err
}

// ttlOperator is a plugin operator whose state expires (state_ttl): it
// sweeps the expired state of the keys its worker owns, at most every
// sweepEvery, after a batch (processing time) or a watermark (event time,
// where it also tells the worker the watermark).
type ttlOperator struct {
	*instance
	owns       func([]byte) bool
	sweepEvery time.Duration
	last       time.Time
}

// ttlEventOperator is a ttlOperator in event time: a Watermarker.
type ttlEventOperator struct{ *ttlOperator }

func newTTLOperator(wo *instance, op *config.Operator, owns func([]byte) bool) engine.Operator {
	t := &ttlOperator{instance: wo, owns: owns, last: time.Now(),
		sweepEvery: min(max(op.StateTTL/2, 100*time.Millisecond), time.Minute)}
	if op.StateTTLEventTime {
		return ttlEventOperator{t}
	}
	return t
}

func (o *ttlOperator) Process(ctx context.Context, in []record.Record, out *record.Output) error {
	if err := o.instance.Process(ctx, in, out); err != nil {
		return err
	}
	return o.sweep(false)
}

// sweep deletes expired state when it is due, or when forced.
func (o *ttlOperator) sweep(force bool) error {
	if !force && time.Since(o.last) < o.sweepEvery {
		return nil
	}
	o.last = time.Now()
	_, err := o.w.SweepExpired(o.owns)
	return err
}

// OnWatermark implements engine.Watermarker. The final watermark of a
// bounded input expires everything, at once.
func (o ttlEventOperator) OnWatermark(_ context.Context, wm int64, _ *record.Output) error {
	o.w.SetWatermark(wm)
	return o.sweep(wm == math.MaxInt64)
}
