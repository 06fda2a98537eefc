package wasm

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/record"
)

// typedConfig is the PluginConfig of testdata/typed_echo.wasm as an
// operator of op, in mode (see typed_echo.wat), declaring decls.
func typedConfig(t testing.TB, op abi.Op, mode byte, decls ...abi.FieldDecl) PluginConfig {
	cfg := watConfig(t, "typed_echo")
	cfg.Op = op
	cfg.InitConfig = abi.AppendFieldDecls([]byte{mode}, decls)
	return cfg
}

// rawEcho is typed_echo configured so that weir_fields returns the empty
// region: a raw module, which lacks the raw exports.
func rawEcho(t testing.TB) PluginConfig {
	cfg := typedConfig(t, abi.OpMap, 'e')
	cfg.InitConfig = []byte("e")
	return cfg
}

func TestTypedLoad(t *testing.T) {
	rt := newRuntime(t, nil)
	raw := abi.FieldDecl{Path: "a", Type: abi.TypeRaw}
	tests := []struct {
		name    string
		cfg     PluginConfig
		kind    error  // nil: loads
		wantErr string // in the error
	}{
		{name: "valid", cfg: typedConfig(t, abi.OpMap, 'e', raw, abi.FieldDecl{Path: "u.age", Type: abi.TypeInt, Flags: abi.FieldStrict})},
		{name: "no fields", cfg: typedConfig(t, abi.OpFlatMap, 'e')},
		{name: "unknown type", cfg: typedConfig(t, abi.OpMap, 'e', raw, abi.FieldDecl{Path: "user.age", Type: 9}),
			kind: ErrInvalidModule, wantErr: `invalid field declaration from weir_fields: abi: declared field 1 ("user.age"): unknown type 9`},
		{name: "unknown flag", cfg: typedConfig(t, abi.OpMap, 'e', abi.FieldDecl{Path: "a", Type: abi.TypeInt, Flags: 4}),
			kind: ErrInvalidModule, wantErr: `declared field 0 ("a"): unknown flags 0x4`},
		{name: "same path twice", cfg: typedConfig(t, abi.OpMap, 'e', raw, abi.FieldDecl{Path: "b", Type: abi.TypeBool}, raw),
			kind: ErrInvalidModule, wantErr: `declared field 2 ("a"): the same path as field 0`},
		{name: "malformed path", cfg: typedConfig(t, abi.OpMap, 'e', abi.FieldDecl{Path: "a..b", Type: abi.TypeInt}),
			kind: ErrInvalidModule, wantErr: `declared field 0 ("a..b"): malformed field path`},
		{name: "weir_fields traps", cfg: typedConfig(t, abi.OpMap, 't', raw),
			kind: ErrInit, wantErr: "weir_fields failed: trap"},
		{name: "no typed filter", cfg: typedConfig(t, abi.OpFilter, 'e', raw),
			kind: ErrInvalidModule, wantErr: "the plugin implements map and flat_map, not filter (missing export weir_filter, or for the typed convention export weir_typed_filter)"},
		{name: "no declaration, no raw export", cfg: rawEcho(t),
			kind: ErrInvalidModule, wantErr: "not a valid weir ABI v1 map plugin: its weir_fields declares no fields (the raw convention), but it is missing export weir_map"},
		{name: "no typed aggregate", cfg: typedConfig(t, abi.OpAggregate, 'e', raw),
			kind: ErrInvalidModule, wantErr: "weir_typed_agg_add"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := rt.Load(context.Background(), tc.cfg)
			if tc.kind == nil {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				p.Close(context.Background())
				return
			}
			if err == nil {
				p.Close(context.Background())
				t.Fatalf("loaded; want an error saying %q", tc.wantErr)
			}
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.wantErr) ||
				!strings.HasPrefix(err.Error(), `operator "typed_echo" (testdata/typed_echo.wasm): `) {
				t.Errorf("Load: %v\nwant %v naming the operator and saying %q", err, tc.kind, tc.wantErr)
			}
		})
	}
}

// typedOutcome is what became of one input: its output values, or
// "dead: <reason>".
func typedOutcomes(in []record.Record, out *record.Output) [][]string {
	got := make([][]string, len(in))
	for _, r := range out.Records {
		got[r.Origin.Offset] = append(got[r.Origin.Offset], string(r.Value))
	}
	for _, d := range out.Dead {
		got[d.Record.Origin.Offset] = append(got[d.Record.Origin.Offset], "dead: "+d.Reason)
	}
	return got
}

func TestTypedProcess(t *testing.T) {
	rt := newRuntime(t, nil)
	a := abi.FieldDecl{Path: "a", Type: abi.TypeRaw}
	strictN := abi.FieldDecl{Path: "n", Type: abi.TypeInt, Flags: abi.FieldStrict | abi.FieldRequired}
	tests := []struct {
		name  string
		cfg   PluginConfig
		in    []string // values; "<nil>" for none
		want  [][]string
		traps uint64
	}{{
		name: "patch of the input's value",
		cfg:  typedConfig(t, abi.OpMap, 'p', a),
		in:   []string{`{"x":1}`, `{"a":5}`, "<nil>", `{"a":null, "z":2}`, `not json`},
		want: [][]string{
			{`{"x":1,"a":{"b":1}}`},
			{`dead: map error: patch op 0 (set "a.b"): "a" is a number, not an object`},
			{`{"a":{"b":1}}`},
			{`{"a":{"b":1}, "z":2}`},
			{`dead: map error: value is not JSON: `},
		},
	}, {
		name: "declared fields, new records, keys and timestamps",
		cfg:  typedConfig(t, abi.OpFlatMap, 'e', strictN, abi.FieldDecl{Path: "s", Type: abi.TypeString}),
		in:   []string{`{"n":1,"s":"caf\u00e9"}`, `{"n":"1"}`, `{"s":"x"}`, `{"n":2e0,"s":5}`, `{"n":3,"s":null}`},
		want: [][]string{
			{`{"a":1,"b":"café"}`},
			{`dead: flat_map error: field "n": want int, found string`},
			{`dead: flat_map error: field "n": missing`},
			{`{"a":2,"b":"mismatch"}`},
			{`{"a":3,"b":null}`},
		},
	}, {
		name:  "a raw value that is not JSON is a trap",
		cfg:   typedConfig(t, abi.OpMap, 'r', a),
		in:    []string{`{"x":1}`, `{"y":2}`},
		want:  [][]string{{"dead: invalid output: invalid patch: patch op 0 (set \"a\"): "}, {"dead: invalid output: invalid patch: "}},
		traps: 3,
	}, {
		name:  "a map that answers nothing is a trap",
		cfg:   typedConfig(t, abi.OpMap, 'x', a),
		in:    []string{`{"x":1}`, `[`, `{"y":2}`},
		want:  [][]string{{"dead: invalid output: output breaks the ABI order rules: map must answer every input, but answered 0 of "}, {"dead: map error: value is not JSON: "}, {"dead: invalid output: "}},
		traps: 3,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, w := mustLoad(t, rt, tc.cfg)
			in := recs(tc.in...)
			for i := range in {
				if tc.in[i] == "<nil>" {
					in[i].Value = nil
				}
			}
			out := process(t, w, in)
			got := typedOutcomes(in, out)
			for i := range in {
				if !prefixes(got[i], tc.want[i]) {
					t.Errorf("input %d %q: got %q, want %q", i, tc.in[i], got[i], tc.want[i])
				}
			}
			for _, r := range out.Records {
				src := in[r.Origin.Offset]
				if tc.cfg.Op == abi.OpFlatMap && (string(r.Key) != string(src.Key) || r.Timestamp != src.Timestamp+1) {
					t.Errorf("record %+v: want the key %q and timestamp %d the guest set", r, src.Key, src.Timestamp+1)
				}
				if len(r.Headers) != 1 || r.Headers[0].Key != "n" {
					t.Errorf("record %+v lost its input's headers", r)
				}
			}
			if s := w.Stats(); s.Traps != tc.traps {
				t.Errorf("%d traps, want %d", s.Traps, tc.traps)
			}
		})
	}
}

// prefixes reports whether each of got starts with the want at its
// index, and they are as many.
func prefixes(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !strings.HasPrefix(got[i], want[i]) {
			return false
		}
	}
	return true
}

// TestTypedAggregate folds typed records (testdata/typed_sum.wasm): the
// records the declaration rejects are dead letters and the others reach
// the guest, whose rejections name the right records within their group.
func TestTypedAggregate(t *testing.T) {
	rt := newRuntime(t, nil)
	cfg := watConfig(t, "typed_sum")
	cfg.Op = abi.OpAggregate
	_, w := mustLoad(t, rt, cfg)
	ctx := context.Background()
	acc, err := w.AggCreate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g0, g2 := recs(`{"n":1}`, `{"n":"x"}`, `{"m":1}`, `{"n":2}`), recs(`not json`, `{"n":40}`)
	var out AggOutput
	groups := []AggGroup{{Acc: acc, Records: g0}, {Acc: acc}, {Acc: acc, Records: g2}}
	if err := w.AggAdd(ctx, groups, &out); err != nil {
		t.Fatal(err)
	}
	checkDeadAt(t, groups, &out)
	sum := func(acc []byte) int64 { return int64(binary.LittleEndian.Uint64(acc)) }
	if len(out.Accs) != 3 || sum(out.Accs[0]) != 3 || sum(out.Accs[1]) != 0 || sum(out.Accs[2]) != 40 {
		t.Fatalf("accumulators %x, want the sums 3, 0 and 40", out.Accs)
	}
	var dead []string
	for _, d := range out.Dead {
		dead = append(dead, string(d.Record.Value)+" "+d.Reason)
	}
	want := []string{ // sorted
		`not json aggregate error: value is not JSON: `,
		`{"m":1} aggregate error: no n`,
		`{"n":"x"} aggregate error: field "n": want int, found string`,
	}
	slices.Sort(dead)
	if !prefixes(dead, want) {
		t.Errorf("dead letters %q, want %q", dead, want)
	}
	if s := w.Stats(); s.Errors != 3 || s.Traps != 0 {
		t.Errorf("stats %+v, want 3 errors and no traps", s)
	}
	a, b := out.Accs[0], out.Accs[2]
	out = AggOutput{}
	if err := w.AggMerge(ctx, []AggPair{{A: a, B: b}}, &out); err != nil || sum(out.Values[0].Value) != 43 {
		t.Fatalf("merge: %v %+v, want 43", err, out.Values)
	}
}
