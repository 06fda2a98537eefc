package config

import (
	"strings"
	"testing"
	"time"
)

// probe is a Schema using every getter of Fields, as a kind of the
// operator table would.
type probe struct {
	S      string
	E      string
	B      bool
	N      int64
	D      time.Duration
	Field  string
	Path   []string
	HasOpt bool
}

var probeKinds = Kinds{"probe": {
	Fields: []string{"s", "e", "b", "n", "d", "field", "opt", "need"},
	Decode: func(f *Fields) any {
		var p probe
		p.S, _ = f.String("s")
		p.E, _ = f.Enum("e", "red", "green")
		p.B, _ = f.Bool("b")
		p.N, _ = f.Int("n", 1, 10)
		if d, ok := f.Duration("d"); ok {
			if d%time.Second != 0 {
				f.Fail("d", "%s is not whole seconds", d)
			}
			p.D = d
		}
		p.Field, p.Path, _ = f.FieldPath("field")
		p.HasOpt = f.Has("opt")
		if !f.Has("need") {
			f.Missing("need")
		}
		return p
	},
}}

// TestSchemaFields decodes an operator type of Kinds: its settings reach
// Operator.Settings, environment overrides apply, and each problem is
// reported at its field with the built-in types' messages.
func TestSchemaFields(t *testing.T) {
	const head = "name: p\nsources: [{name: in, type: stdin}]\nsinks: [{name: out, type: discard}]\noperators:\n  - "
	tests := []struct {
		name string
		op   string
		env  map[string]string
		want probe
		errs []string // substrings, each of the error
	}{
		{name: "every field", op: `{name: x, type: probe, s: hi, e: green, b: true, n: 3, d: 2s, field: a.b, opt: [1], need: 1}`,
			want: probe{S: "hi", E: "green", B: true, N: 3, D: 2 * time.Second, Field: "a.b", Path: []string{"a", "b"}, HasOpt: true}},
		{name: "from the environment", op: `{name: x, type: probe, need: 1}`,
			env:  map[string]string{"WEIR_OPERATORS_X_S": "env", "WEIR_OPERATORS_X_N": "7", "WEIR_OPERATORS_X_OPT": "y"},
			want: probe{S: "env", N: 7, HasOpt: true}},
		{name: "problems at their fields", op: `{name: x, type: probe, s: "", e: blue, b: 1, n: 11, d: 1500ms, field: "a..b"}`,
			errs: []string{
				`pipeline.yaml:5:31: operators[0] "x".s: must not be empty`,
				`.e: invalid value "blue" (want one of red, green)`,
				`.b: expected true or false`,
				`.n: must be between 1 and 10, got 11`,
				`.d: 1.5s is not whole seconds`,
				`.field: invalid field path "a..b"`,
				`operators[0] "x": missing required field "need"`,
			}},
		{name: "a field it does not take", op: `{name: x, type: probe, need: 1, window: 1s}`, errs: []string{`field "window" does not apply to probe operators`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			p, err := Parse("pipeline.yaml", []byte(head+tt.op+"\n"), env, probeKinds)
			if len(tt.errs) > 0 {
				for _, e := range tt.errs {
					if err == nil || !strings.Contains(err.Error(), e) {
						t.Errorf("error = %v\nwant it to contain %q", err, e)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := p.Operators[0].Settings.(probe)
			if got.S != tt.want.S || got.E != tt.want.E || got.B != tt.want.B || got.N != tt.want.N || got.D != tt.want.D ||
				got.Field != tt.want.Field || strings.Join(got.Path, "|") != strings.Join(tt.want.Path, "|") || got.HasOpt != tt.want.HasOpt {
				t.Errorf("settings = %+v, want %+v", got, tt.want)
			}
		})
	}
	if _, err := Parse("pipeline.yaml", []byte(head+"{name: x, type: probe, need: 1}\n"), nil, nil); err == nil || !strings.Contains(err.Error(), `invalid value "probe"`) {
		t.Errorf("a type of no Kinds given: %v", err)
	}
}
