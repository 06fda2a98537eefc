package operator

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/host/internal/wasm"
)

// AggregatePlugin is a loaded aggregate plugin (a window's `plugin`), from
// LoadAggregate to Close. NewAggregator is safe for concurrent use.
type AggregatePlugin struct{ plug *wasm.Plugin }

// LoadAggregate loads op's aggregate plugin. A load error is positioned in
// the file (AtAggregatePlugin).
func (p *Plugins) LoadAggregate(ctx context.Context, op *config.Operator, env Env) (*AggregatePlugin, error) {
	plug, _, err := p.Load(ctx, op, op.Plugin, env.Store, true)
	if err != nil {
		return nil, AtAggregatePlugin(op, err)
	}
	return &AggregatePlugin{plug: plug}, nil
}

// AtAggregatePlugin marks err as a failure of window op's aggregate
// plugin, positioned at the field naming it: the plugin field of its
// entry in aggregates, or of op.
func AtAggregatePlugin(op *config.Operator, err error) error {
	if a := op.Window.PluginAggregate(); a != nil {
		return &PluginError{Pos: a.At("plugin").String(), Path: a.FieldPath("plugin"), Err: err}
	}
	return AtPlugin(op, err)
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
// to a window operator's Aggregator. It calls the guest once per Add, merge
// or result, and once per AddGroups, with which a time window adds the
// records of each Process call.
// It belongs to one worker, like the Wasm worker it holds.
type Aggregator struct {
	ctx    context.Context
	w      *wasm.Worker
	create []byte
	out    wasm.AggOutput
	one    [1]wasm.AggGroup
	recs   [1]record.Record
	accs   [1][]byte
	ctxs   [1]wasm.AggContext
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
		return nil, rejected(a.out.Dead[0].Reason)
	}
	return append([]byte(nil), a.out.Accs[0]...), nil
}

// AddGroups adds each group's records to its accumulator through one
// AggAdd call (the window operator's BatchAggregator.AddBatch): it sets
// each group's Acc to the new accumulator (reusing the old one's memory),
// and errs[g][r] to why record r of group g was rejected. errs holds a
// slice as long as Records per group, of nil errors. An error (a fatal
// one of AggAdd's) leaves the groups' Acc as they were.
func (a *Aggregator) AddGroups(groups []wasm.AggGroup, errs [][]error) error {
	a.out.Reset()
	if err := a.w.AggAdd(a.ctx, groups, &a.out); err != nil {
		return err
	}
	if len(a.out.Accs) != len(groups) || len(a.out.DeadAt) != len(a.out.Dead) {
		return fmt.Errorf("aggregate add: %d accumulators and %d located dead letters for %d groups and %d dead letters",
			len(a.out.Accs), len(a.out.DeadAt), len(groups), len(a.out.Dead))
	}
	for i, at := range a.out.DeadAt {
		errs[at.Group][at.Record] = rejected(a.out.Dead[i].Reason)
	}
	for i := range groups {
		groups[i].Acc = append(groups[i].Acc[:0], a.out.Accs[i]...)
	}
	return nil
}

func (a *Aggregator) Merge(x, y []byte) ([]byte, error) {
	a.out.Reset()
	if err := a.w.AggMerge(a.ctx, []wasm.AggPair{{A: x, B: y}}, &a.out); err != nil {
		return nil, err
	}
	return a.value()
}

// Result returns acc's result, given the context of its group (its key
// and window), which the guest gets when it exports weir_agg_result_ctx.
func (a *Aggregator) Result(acc []byte, c wasm.AggContext) ([]byte, error) {
	a.out.Reset()
	a.accs[0], a.ctxs[0] = acc, c
	err := a.w.AggResult(a.ctx, a.accs[:], a.ctxs[:], &a.out)
	a.accs[0], a.ctxs[0] = nil, wasm.AggContext{}
	if err != nil {
		return nil, err
	}
	return a.value()
}

// value returns the answer of a merge or result call: a copy of its
// value, nil for an absent one (empty for an empty one), or its error.
func (a *Aggregator) value() ([]byte, error) {
	v := a.out.Values[0]
	switch {
	case v.Err != "":
		return nil, errors.New(v.Err)
	case v.Value == nil:
		return nil, nil
	}
	return append([]byte{}, v.Value...), nil
}

// rejected is the error of a record the plugin rejected, whose dead
// letter the window operator words "aggregate: <why>": the guest's
// message without the Worker's "aggregate error: " before it, which would
// say aggregate twice.
func rejected(reason string) error {
	return errors.New(strings.TrimPrefix(reason, "aggregate error: "))
}
