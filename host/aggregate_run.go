package host

import (
	"context"
	"errors"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/host/internal/wasm"
	"github.com/weir-stream/weir/host/internal/window"
)

// wasmAggregator adapts a Wasm aggregate plugin (create/add/merge/result)
// to a window operator's Aggregator. It calls the guest once per record
// and per merge or result; the window operator does not batch them yet.
// It belongs to one worker, like the Wasm worker it holds.
type wasmAggregator struct {
	ctx    context.Context
	w      *wasm.Worker
	create []byte
	out    wasm.AggOutput
	one    [1]wasm.AggGroup
	recs   [1]record.Record
}

func newWasmAggregator(ctx context.Context, w *wasm.Worker) (*wasmAggregator, error) {
	create, err := w.AggCreate(ctx)
	if err != nil {
		return nil, err
	}
	return &wasmAggregator{ctx: ctx, w: w, create: create}, nil
}

func (a *wasmAggregator) Create() []byte { return append([]byte(nil), a.create...) }

func (a *wasmAggregator) Add(acc []byte, rec *record.Record) ([]byte, error) {
	a.out.Reset()
	a.recs[0] = *rec
	a.one[0] = wasm.AggGroup{Acc: acc, Records: a.recs[:]}
	if err := a.w.AggAdd(a.ctx, a.one[:], &a.out); err != nil {
		return nil, err
	}
	if len(a.out.Dead) > 0 {
		return nil, errors.New(a.out.Dead[0].Reason)
	}
	return append([]byte(nil), a.out.Accs[0]...), nil
}

func (a *wasmAggregator) Merge(x, y []byte) ([]byte, error) {
	a.out.Reset()
	if err := a.w.AggMerge(a.ctx, []wasm.AggPair{{A: x, B: y}}, &a.out); err != nil {
		return nil, err
	}
	return a.value()
}

func (a *wasmAggregator) Result(acc []byte) ([]byte, error) {
	a.out.Reset()
	if err := a.w.AggResult(a.ctx, [][]byte{acc}, &a.out); err != nil {
		return nil, err
	}
	return a.value()
}

func (a *wasmAggregator) value() ([]byte, error) {
	v := a.out.Values[0]
	if v.Err != "" {
		return nil, errors.New(v.Err)
	}
	return append([]byte(nil), v.Value...), nil
}

// pluginWindow is a window operator whose aggregate is a Wasm plugin; it
// closes the plugin's worker with the operator.
type pluginWindow struct {
	*window.Operator
	w *wasm.Worker
}

func (p *pluginWindow) Close(ctx context.Context) error {
	return errors.Join(p.Operator.Close(ctx), p.w.Close(ctx))
}
