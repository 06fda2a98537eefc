package operator

import (
	"context"
	"errors"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/host/internal/wasm"
)

// AggregatePlugin is a loaded aggregate plugin (a window's `plugin`), from
// LoadAggregate to Close. NewAggregator is safe for concurrent use.
type AggregatePlugin struct{ plug *wasm.Plugin }

// LoadAggregate loads op's aggregate plugin. A load error is positioned in
// the file.
func (p *Plugins) LoadAggregate(ctx context.Context, op *config.Operator, env Env) (*AggregatePlugin, error) {
	plug, _, err := p.Load(ctx, op, op.Plugin, env.Store, true)
	if err != nil {
		return nil, AtPlugin(op, err)
	}
	return &AggregatePlugin{plug: plug}, nil
}

// NewAggregator returns an aggregator of its own worker, for one window
// operator instance; close it with the instance.
func (a *AggregatePlugin) NewAggregator(ctx context.Context) (*Aggregator, error) {
	w, err := a.plug.NewWorker(ctx)
	if err != nil {
		return nil, err
	}
	create, err := w.AggCreate(ctx)
	if err != nil {
		w.Close(ctx)
		return nil, err
	}
	return &Aggregator{ctx: ctx, w: w, create: create}, nil
}

// Close closes the plugin.
func (a *AggregatePlugin) Close(ctx context.Context) error { return a.plug.Close(ctx) }

// Aggregator adapts a Wasm aggregate plugin (create/add/merge/result)
// to a window operator's Aggregator. It calls the guest once per record
// and per merge or result; the window operator does not batch them yet.
// It belongs to one worker, like the Wasm worker it holds.
type Aggregator struct {
	ctx    context.Context
	w      *wasm.Worker
	create []byte
	out    wasm.AggOutput
	one    [1]wasm.AggGroup
	recs   [1]record.Record
}

// Close closes the aggregator's worker.
func (a *Aggregator) Close(ctx context.Context) error { return a.w.Close(ctx) }

func (a *Aggregator) Create() []byte { return append([]byte(nil), a.create...) }

func (a *Aggregator) Add(acc []byte, rec *record.Record) ([]byte, error) {
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

func (a *Aggregator) Merge(x, y []byte) ([]byte, error) {
	a.out.Reset()
	if err := a.w.AggMerge(a.ctx, []wasm.AggPair{{A: x, B: y}}, &a.out); err != nil {
		return nil, err
	}
	return a.value()
}

func (a *Aggregator) Result(acc []byte) ([]byte, error) {
	a.out.Reset()
	if err := a.w.AggResult(a.ctx, [][]byte{acc}, &a.out); err != nil {
		return nil, err
	}
	return a.value()
}

func (a *Aggregator) value() ([]byte, error) {
	v := a.out.Values[0]
	if v.Err != "" {
		return nil, errors.New(v.Err)
	}
	return append([]byte(nil), v.Value...), nil
}
