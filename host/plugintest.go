package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/pluginbuild"
	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/host/internal/wasm"
	"github.com/weir-stream/weir/state"
)

// Running a plugin directly, without a pipeline: for the cross-language
// conformance suite, `weir plugin test`, and plugin authors' own tests.

// PluginInput is one record given to RunPlugin. A nil Key is a record
// without a key.
type PluginInput struct {
	Key   []byte
	Value []byte
}

// PluginOutput is one thing RunPlugin's plugin did with an input: a record
// it emitted (Value, Key), a rejection with the plugin's message (Error),
// or a failure of the plugin on that record alone (Trap, the host's
// reason). Input is the index of the input it came from, or -1 for an
// aggregate's result.
type PluginOutput struct {
	Input int    `json:"input"`
	Key   []byte `json:"key,omitempty"`
	Value []byte `json:"value,omitempty"`
	Error string `json:"error,omitempty"`
	Trap  string `json:"trap,omitempty"`
}

// PluginOps are the operations RunPlugin runs: a batch operation, or
// "aggregate", which adds the first half of the inputs to one accumulator
// and the rest to another, merges the two, and outputs the result.
var PluginOps = []string{"map", "flat_map", "filter", "aggregate"}

// RunPlugin builds (if path is a source folder), loads and initialises the
// plugin at path with config, and runs the inputs through op: all in one
// batch, with state in memory. Outputs come in input order. An error means
// the plugin could not load or run at all.
func RunPlugin(ctx context.Context, path, op string, config []byte, inputs []PluginInput, cacheDir string) ([]PluginOutput, error) {
	var aop abi.Op
	switch op {
	case "map":
		aop = abi.OpMap
	case "flat_map":
		aop = abi.OpFlatMap
	case "filter":
		aop = abi.OpFilter
	case "aggregate":
		aop = abi.OpAggregate
	default:
		return nil, fmt.Errorf("unknown operation %q (want %s)", op, strings.Join(PluginOps, ", "))
	}
	if cacheDir == "" {
		cacheDir = pluginbuild.DefaultCacheDir()
	}
	bin, _, err := pluginbuild.Load(ctx, path, pluginbuild.Options{CacheDir: cacheDir})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPlugin, err)
	}
	rt, err := wasm.NewRuntime(ctx, wasm.RuntimeOptions{CacheDir: cacheDir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	defer rt.Close(ctx)
	if len(config) == 0 {
		config = []byte("{}")
	}
	plug, err := rt.Load(ctx, wasm.PluginConfig{Operator: "test", Path: path, Wasm: bin, Op: aop, InitConfig: config, Store: state.NewMemory()})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPlugin, err)
	}
	defer plug.Close(ctx)
	w, err := plug.NewWorker(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPlugin, err)
	}
	defer w.Close(ctx)
	recs := make([]record.Record, len(inputs))
	for i, in := range inputs {
		recs[i] = record.Record{Key: in.Key, Value: in.Value, Origin: record.Origin{Source: "test", Partition: -1, Offset: int64(i)}}
	}
	if aop == abi.OpAggregate {
		return runAggregate(ctx, w, recs)
	}
	var out wasm.Output
	if err := w.Process(ctx, recs, &out); err != nil {
		return nil, err
	}
	var res []PluginOutput
	for _, r := range out.Records {
		res = append(res, PluginOutput{Input: int(r.Origin.Offset), Key: r.Key, Value: r.Value})
	}
	for _, d := range out.Dead {
		res = append(res, deadOutput(d))
	}
	sortOutputs(res)
	return res, nil
}

// runAggregate adds the first half of recs to one accumulator and the rest
// to another, merges them and returns the result, after the rejections.
func runAggregate(ctx context.Context, w *wasm.Worker, recs []record.Record) ([]PluginOutput, error) {
	acc, err := w.AggCreate(ctx)
	if err != nil {
		return nil, err
	}
	half := len(recs) / 2
	var out wasm.AggOutput
	if err := w.AggAdd(ctx, []wasm.AggGroup{{Acc: acc, Records: recs[:half]}, {Acc: acc, Records: recs[half:]}}, &out); err != nil {
		return nil, err
	}
	var res []PluginOutput
	for _, d := range out.Dead {
		res = append(res, deadOutput(d))
	}
	a, b := out.Accs[0], out.Accs[1]
	out = wasm.AggOutput{}
	if err := w.AggMerge(ctx, []wasm.AggPair{{A: a, B: b}}, &out); err != nil {
		return nil, err
	}
	if v := out.Values[0]; v.Err != "" {
		return nil, errors.New("merge: " + v.Err)
	}
	merged := out.Values[0].Value
	out = wasm.AggOutput{}
	if err := w.AggResult(ctx, [][]byte{merged}, &out); err != nil {
		return nil, err
	}
	v := out.Values[0]
	if v.Err != "" {
		return nil, errors.New("result: " + v.Err)
	}
	sortOutputs(res)
	return append(res, PluginOutput{Input: -1, Value: v.Value}), nil
}

// deadOutput turns a dead letter into a rejection or a trap.
func deadOutput(d record.DeadLetter) PluginOutput {
	o := PluginOutput{Input: int(d.Record.Origin.Offset)}
	for _, op := range PluginOps {
		if msg, ok := strings.CutPrefix(d.Reason, op+" error: "); ok {
			o.Error = msg
			return o
		}
	}
	o.Trap = d.Reason
	return o
}

// sortOutputs orders outputs by input, keeping each input's in emission
// order.
func sortOutputs(res []PluginOutput) {
	for i := 1; i < len(res); i++ {
		for j := i; j > 0 && res[j].Input < res[j-1].Input; j-- {
			res[j], res[j-1] = res[j-1], res[j]
		}
	}
}
