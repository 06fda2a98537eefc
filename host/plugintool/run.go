package plugintool

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host"
	"github.com/weir-stream/weir/host/internal/pluginbuild"
	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/host/internal/wasm"
	"github.com/weir-stream/weir/state"
)

// Input is one record given to Run. A nil Key is a record without a key;
// Timestamp is its event time in milliseconds since the Unix epoch. It is
// a plain value.
type Input struct {
	Key       []byte
	Value     []byte
	Timestamp int64
}

// Output is one thing Run's plugin did with an input: a record it emitted
// (Value, Key), a rejection with the plugin's message (Error), or a
// failure of the plugin on that record alone (Trap, the host's reason).
// Input is the index of the input it came from, or -1 for an aggregate's
// result. It is a plain value.
type Output struct {
	Input int    `json:"input"`
	Key   []byte `json:"key,omitempty"`
	Value []byte `json:"value,omitempty"`
	Error string `json:"error,omitempty"`
	Trap  string `json:"trap,omitempty"`
}

// Ops are the operations Run runs: a batch operation, or "aggregate",
// which adds the first half of the inputs to one accumulator and the rest
// to another, merges the two, and outputs the result. It is read, never
// written.
var Ops = []string{"map", "flat_map", "filter", "aggregate"}

// Group is the group whose result an aggregate's Run computes, as the
// result call tells it to a plugin that exports weir_agg_result_ctx
// (ABI.md §12.5): Key, nil for none, and, when Window is set, the window
// [Start, End) in milliseconds since the Unix epoch. The zero Group has
// no key and no window. It is a plain value.
type Group struct {
	Key        []byte
	Window     bool
	Start, End int64
}

// Run builds (if path is a source folder), loads and initialises the
// plugin at path with config, and runs the inputs through op: all in one
// batch, with state in memory. Outputs come in input order. An error means
// the plugin could not load or run at all. An aggregate's result is the
// zero Group's.
func Run(ctx context.Context, path, op string, config []byte, inputs []Input, cacheDir string) ([]Output, error) {
	return RunGroup(ctx, path, op, config, inputs, cacheDir, Group{})
}

// RunGroup is Run, with g the group an aggregate's result call is given:
// its key and window. Other operations ignore g.
func RunGroup(ctx context.Context, path, op string, config []byte, inputs []Input, cacheDir string, g Group) ([]Output, error) {
	if g.Window && g.Start > g.End {
		return nil, fmt.Errorf("window start %d is after its end %d", g.Start, g.End)
	}
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
		return nil, fmt.Errorf("unknown operation %q (want %s)", op, strings.Join(Ops, ", "))
	}
	if cacheDir == "" {
		cacheDir = pluginbuild.DefaultCacheDir()
	}
	bin, _, err := pluginbuild.Load(ctx, path, pluginbuild.Options{CacheDir: cacheDir})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", host.ErrPlugin, err)
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
		return nil, fmt.Errorf("%w: %w", host.ErrPlugin, err)
	}
	defer plug.Close(ctx)
	w, err := plug.NewWorker(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", host.ErrPlugin, err)
	}
	defer w.Close(ctx)
	recs := make([]record.Record, len(inputs))
	for i, in := range inputs {
		recs[i] = record.Record{Key: in.Key, Value: in.Value, Timestamp: in.Timestamp, Origin: record.Origin{Source: "test", Partition: -1, Offset: int64(i)}}
	}
	if aop == abi.OpAggregate {
		return runAggregate(ctx, w, recs, g)
	}
	var out record.Output
	if err := w.Process(ctx, recs, &out); err != nil {
		return nil, err
	}
	var res []Output
	for _, r := range out.Records {
		res = append(res, Output{Input: int(r.Origin.Offset), Key: r.Key, Value: r.Value})
	}
	for _, d := range out.Dead {
		res = append(res, deadOutput(d))
	}
	sortOutputs(res)
	return res, nil
}

// runAggregate adds the first half of recs to one accumulator and the rest
// to another, merges them and returns the result of group g, after the
// rejections.
func runAggregate(ctx context.Context, w *wasm.Worker, recs []record.Record, g Group) ([]Output, error) {
	acc, err := w.AggCreate(ctx)
	if err != nil {
		return nil, err
	}
	half := len(recs) / 2
	var out wasm.AggOutput
	if err := w.AggAdd(ctx, []wasm.AggGroup{{Acc: acc, Records: recs[:half]}, {Acc: acc, Records: recs[half:]}}, &out); err != nil {
		return nil, err
	}
	var res []Output
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
	c := wasm.AggContext{Key: g.Key, Windowed: g.Window}
	if g.Window {
		c.Start, c.End = g.Start, g.End
	}
	if err := w.AggResult(ctx, [][]byte{merged}, []wasm.AggContext{c}, &out); err != nil {
		return nil, err
	}
	v := out.Values[0]
	if v.Err != "" {
		return nil, errors.New("result: " + v.Err)
	}
	sortOutputs(res)
	return append(res, Output{Input: -1, Value: v.Value}), nil
}

// deadOutput turns a dead letter into a rejection or a trap.
func deadOutput(d record.DeadLetter) Output {
	o := Output{Input: int(d.Record.Origin.Offset)}
	for _, op := range Ops {
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
func sortOutputs(res []Output) {
	for i := 1; i < len(res); i++ {
		for j := i; j > 0 && res[j].Input < res[j-1].Input; j-- {
			res[j], res[j-1] = res[j-1], res[j]
		}
	}
}

// Case is one case of a plugin test file: an input and what the plugin
// must do with it. A Want entry is an emitted value, "error: <msg>" for a
// rejection with exactly that message, "error:" for a rejection with any
// message, or "trap" for a failure on the record. A value whose AsJSON
// entry is true is compared as JSON (Want holds it compact, keys sorted),
// others byte for byte. It is a plain value.
type Case struct {
	Key       *string  `json:"key,omitempty"`
	Value     string   `json:"value"`
	Want      []string `json:"want"`
	Timestamp int64    `json:"timestamp,omitempty"`
	AsJSON    []bool   `json:"-"`
	Name      string   `json:"-"` // the case's name, "" for none
	Line      int      `json:"-"` // the case's line in its file, 0 when unknown
}

// matches reports whether the outputs got are those c wants.
func (c Case) matches(got []string) bool {
	if len(got) != len(c.Want) {
		return false
	}
	for i, w := range c.Want {
		g := got[i]
		switch {
		case g == w, w == "error:" && strings.HasPrefix(g, "error: "):
		case i < len(c.AsJSON) && c.AsJSON[i]:
			if canon, err := canonicalJSON([]byte(g)); err != nil || canon != w {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// TestFile is a plugin test file (weir-test.jsonl): a header line
// {"op":"map","config":{…}}, one line per case, and for an aggregate a
// last line {"result":"…"}. An aggregate's header may give the group
// whose result it is (Group): "key", a string, and "window", [start, end]
// in milliseconds since the Unix epoch. It is a plain value, as
// ParseTestFile returns it; Test only reads it.
type TestFile struct {
	Op     string          `json:"op"`
	Config json.RawMessage `json:"config,omitempty"`
	Key    *string         `json:"key,omitempty"`
	Window []int64         `json:"window,omitempty"`
	Cases  []Case          `json:"-"`
	Result *string         `json:"-"`
	// ResultAsJSON says to compare the result as JSON; ResultLine is the
	// line of the result in the file.
	ResultAsJSON bool `json:"-"`
	ResultLine   int  `json:"-"`
}

// group is the Group of f's aggregate result.
func (f *TestFile) group() Group {
	var g Group
	if f.Key != nil {
		g.Key = []byte(*f.Key)
	}
	if f.Window != nil {
		g.Window, g.Start, g.End = true, f.Window[0], f.Window[1]
	}
	return g
}

// ParseTestFile reads a plugin test file, naming the line of any problem.
func ParseTestFile(r io.Reader) (*TestFile, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var f *TestFile
	line := 0
	resultLine := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		if f == nil {
			f = new(TestFile)
			dec := json.NewDecoder(strings.NewReader(text))
			dec.DisallowUnknownFields()
			if err := dec.Decode(f); err != nil {
				return nil, fmt.Errorf("line %d: the header, {\"op\":…,\"config\":…}: %w", line, err)
			}
			if !slices.Contains(Ops, f.Op) {
				return nil, fmt.Errorf("line %d: unknown op %q (want %s)", line, f.Op, strings.Join(Ops, ", "))
			}
			if f.Op != "aggregate" && (f.Key != nil || f.Window != nil) {
				return nil, fmt.Errorf("line %d: \"key\" and \"window\" are for aggregate tests only", line)
			}
			switch w := f.Window; {
			case w == nil:
			case len(w) != 2:
				return nil, fmt.Errorf("line %d: window: want [start, end], not %d numbers", line, len(w))
			case w[0] > w[1]:
				return nil, fmt.Errorf("line %d: window [%d, %d] starts after its end", line, w[0], w[1])
			}
			continue
		}
		if f.Result != nil {
			return nil, fmt.Errorf("line %d: nothing may follow the result line", line)
		}
		var probe map[string]json.RawMessage
		if err := json.Unmarshal([]byte(text), &probe); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if r, ok := probe["result"]; ok && len(probe) == 1 {
			var s string
			if err := json.Unmarshal(r, &s); err != nil {
				return nil, fmt.Errorf("line %d: result: %w", line, err)
			}
			if f.Op != "aggregate" {
				return nil, fmt.Errorf("line %d: a result line is for aggregate tests only", line)
			}
			f.Result, resultLine = &s, line
			continue
		}
		var c Case
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("line %d: a case, {\"key\":…,\"value\":…,\"want\":[…]}: %w", line, err)
		}
		c.Line = line
		f.Cases = append(f.Cases, c)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if f != nil {
		f.ResultLine = resultLine
	}
	if f == nil {
		return nil, errors.New("empty test file: want a header line {\"op\":…}")
	}
	if f.Op == "aggregate" && f.Result == nil {
		return nil, errors.New("an aggregate test needs a last line {\"result\":…}")
	}
	return f, nil
}

// CaseResult is how one case went: what the plugin did, and whether that
// is what the case wants. It is a plain value.
type CaseResult struct {
	Case Case
	Got  []string
	OK   bool
}

// Test runs a plugin test file's cases through the plugin at path, all in
// one batch, and returns how each went; for an aggregate, the last result
// is the aggregate's result. An error means the plugin could not run.
func Test(ctx context.Context, path string, f *TestFile, cacheDir string) ([]CaseResult, error) {
	ins := make([]Input, len(f.Cases))
	for i, c := range f.Cases {
		ins[i] = Input{Value: []byte(c.Value), Timestamp: c.Timestamp}
		if c.Key != nil {
			ins[i].Key = []byte(*c.Key)
		}
	}
	outs, err := RunGroup(ctx, path, f.Op, f.Config, ins, cacheDir, f.group())
	if err != nil {
		return nil, err
	}
	got := make([][]string, len(f.Cases))
	var result *string
	for _, o := range outs {
		switch {
		case o.Input < 0:
			r := string(o.Value)
			result = &r
		case o.Error != "":
			got[o.Input] = append(got[o.Input], "error: "+o.Error)
		case o.Trap != "":
			got[o.Input] = append(got[o.Input], "trap")
		default:
			got[o.Input] = append(got[o.Input], string(o.Value))
		}
	}
	res := make([]CaseResult, len(f.Cases))
	for i, c := range f.Cases {
		res[i] = CaseResult{Case: c, Got: got[i], OK: c.matches(got[i])}
	}
	if f.Op == "aggregate" {
		r := CaseResult{Case: Case{Name: "the result", Value: "(the result)", Want: []string{*f.Result}, AsJSON: []bool{f.ResultAsJSON}, Line: f.ResultLine}}
		if result != nil {
			r.Got = []string{*result}
			r.OK = r.Case.matches(r.Got)
		}
		res = append(res, r)
	}
	return res, nil
}
