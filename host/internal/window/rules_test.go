package window_test

import (
	"strings"
	"testing"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/window"
)

// wasmPlugin is a module for the window rules' plugin aggregates, which
// the config only checks exists.
const wasmPlugin = "../../../plugins/conformance/wat/words.wasm"

// TestWindowRulesInPipelineFiles checks that the window's rules (the ones
// New applies) reach a pipeline file through the window's Schema, each at
// the line and field that breaks it.
func TestWindowRulesInPipelineFiles(t *testing.T) {
	kinds := config.Kinds{config.OperatorWindow: window.WindowKind.Schema}
	tests := []struct {
		name, op, want string
	}{
		{name: "valid", op: `{name: w, type: window, kind: sliding, size: 2s, slide: 1s, aggregates: [{func: count, as: n}]}`},
		{name: "slide longer than size", op: `{name: w, type: window, kind: sliding, size: 1s, slide: 2s, aggregates: [{func: count, as: n}]}`,
			want: `pipeline.yaml:4:61: operators[0] "w".slide: slide 2s is longer than size 1s`},
		{name: "cumulate step", op: `{name: w, type: window, kind: cumulate, size: 5s, step: 2s, aggregates: [{func: count, as: n}]}`,
			want: `"w".step: size 5s must be a whole number of steps 2s`},
		{name: "duplicate output", op: `{name: w, type: window, kind: count, count: 3, aggregates: [{func: count, as: key}]}`,
			want: `operators[0] "w".aggregates[0].as: output field "key" is already used`},
		{name: "every without interval", op: `{name: w, type: window, kind: count, count: 3, emit: every, aggregates: [{func: count, as: n}]}`,
			want: `operators[0] "w": emit: every needs a positive "emit_interval"`},
		{name: "interval without every", op: `{name: w, type: window, kind: count, count: 3, emit_interval: 1s, aggregates: [{func: count, as: n}]}`,
			want: `"w".emit_interval: only applies with emit: every`},
		{name: "exact on sum", op: `{name: w, type: window, kind: count, count: 3, aggregates: [{func: sum, field: v, as: s, exact: 4}]}`,
			want: `"w".aggregates[0].exact: only applies to count_distinct`},
		{name: "lateness on a count window", op: `{name: w, type: window, kind: count, count: 3, allowed_lateness: 1s, aggregates: [{func: count, as: n}]}`,
			want: `"w".allowed_lateness: does not apply to a count window`},
		{name: "sub-millisecond size", op: `{name: w, type: window, kind: tumbling, size: 1500us, aggregates: [{func: count, as: n}]}`,
			want: `"w".size: 1.5ms is not a whole number of milliseconds`},
		{name: "valid with a plugin", op: `{name: w, type: window, kind: count, count: 3, aggregates: [{func: count, as: n}, {plugin: ` + wasmPlugin + `, as: p}]}`},
		{name: "plugin output named as the bounds", op: `{name: w, type: window, kind: count, count: 3, aggregates: [{func: count, as: n}, {plugin: ` + wasmPlugin + `, as: window_end}]}`,
			want: `operators[0] "w".aggregates[1].as: output field "window_end" is already used`},
		{name: "not checked after a field error", op: `{name: w, type: window, kind: sliding, size: x, slide: 2s, aggregates: [{func: count, as: n}]}`,
			want: `invalid duration "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "name: p\nsources: [{name: in, type: stdin}]\noperators:\n  - " + tt.op + "\nsinks: [{name: out, type: stdout}]\n"
			_, err := config.Parse("pipeline.yaml", []byte(doc), nil, kinds)
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "pipeline.yaml:4:")):
				t.Fatalf("err = %v\nwant it to contain %q at line 4", err, tt.want)
			case tt.want != "" && strings.Count(err.Error(), "\n") > 0:
				t.Errorf("more than the one error: %v", err)
			}
		})
	}
}
