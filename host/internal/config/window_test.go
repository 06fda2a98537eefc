package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseWindow(t *testing.T) {
	setupDir(t)
	doc := `name: charge
sources:
  - name: readings
    type: kafka
    topics: [sensor.readings]
    event_time: {field: ts, max_out_of_orderness: 5s, idle_timeout: 30s, idle_advance: true}
operators:
  - {name: by-device, type: key_by, field: device_id}
  - name: charge
    type: window
    kind: tumbling
    size: 30s
    key_field: device_id
    aggregates:
      - {func: sum, field: ampere_hour, as: charge_consumed}
      - {func: count_distinct, field: co, as: levels, exact: 10}
sinks: [{name: out, type: stdout}]
`
	p, err := Parse("pipeline.yaml", []byte(doc), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	et := p.Sources[0].EventTime
	if et == nil || et.Field != "ts" || et.Format != "epoch_ms" || et.MaxOutOfOrderness != 5*time.Second ||
		et.IdleTimeout != 30*time.Second || !et.IdleAdvance {
		t.Errorf("event time = %+v", et)
	}
	w := p.Operators[1].Window
	if w.Kind != WindowTumbling || w.Size != 30*time.Second || w.Emit != EmitOnClose || w.TimeFormat != WindowTimeSQL ||
		w.KeyField != "device_id" || len(w.Aggregates) != 2 || w.Aggregates[0].As != "charge_consumed" ||
		strings.Join(w.Aggregates[0].Path, ".") != "ampere_hour" || w.Aggregates[1].Exact != 10 {
		t.Errorf("window = %+v", w)
	}
}

// TestParseWindowPluginAggregate: a plugin listed among a window's
// aggregates becomes the operator's plugin, its entry marked Plugin in
// place; its config is overridden from the environment by the entry's as.
func TestParseWindowPluginAggregate(t *testing.T) {
	dir := setupDir(t)
	doc := `name: p
sources: [{name: in, type: stdin}]
operators:
  - name: w
    type: window
    kind: tumbling
    size: 10s
    aggregates:
      - {func: count, as: bids}
      - {plugin: plugins/anomaly, config: {by: price, keep: [a]}, as: top, memory_limit_pages: 64, timeout: 2s}
      - {func: max, field: price, as: max_price}
sinks: [{name: out, type: stdout}]
`
	env := map[string]string{"WEIR_OPERATORS_W_AGGREGATES_TOP_CONFIG_BY": "bid"}
	p, err := Parse("pipeline.yaml", []byte(doc), func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if err != nil {
		t.Fatal(err)
	}
	op := p.Operators[0]
	w := op.Window
	if len(w.Aggregates) != 3 || w.Aggregates[0].Plugin || !w.Aggregates[1].Plugin || w.Aggregates[2].Plugin ||
		w.Aggregates[1].As != "top" || w.Aggregates[1].Func != "" || w.PluginAggregate() != &w.Aggregates[1] {
		t.Fatalf("aggregates = %+v", w.Aggregates)
	}
	if op.Plugin != filepath.Join(dir, "plugins", "anomaly") || op.PluginKind != PluginSource ||
		string(op.ConfigJSON) != `{"by":"bid","keep":["a"]}` || op.MemoryLimitPages != 64 || op.Timeout != 2*time.Second {
		t.Errorf("plugin %q (%s), config %s, memory %d, timeout %v", op.Plugin, op.PluginKind, op.ConfigJSON, op.MemoryLimitPages, op.Timeout)
	}
	if got := w.Aggregates[1].At("plugin").String(); got != filepath.Join(dir, "pipeline.yaml")+":10:18" && got != "pipeline.yaml:10:18" {
		t.Errorf("the plugin's position is %s, want line 10, column 18", got)
	}

	// The plugin at the operator's level: no entry of aggregates.
	doc = "name: p\nsources: [{name: in, type: stdin}]\noperators:\n  - {name: w, type: window, kind: count, count: 3, plugin: plugins/double.wasm}\nsinks: [{name: out, type: stdout}]\n"
	p, err = Parse("pipeline.yaml", []byte(doc), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Operators[0].Plugin == "" || p.Operators[0].Window.PluginAggregate() != nil || string(p.Operators[0].ConfigJSON) != "{}" {
		t.Errorf("operator-level plugin: %+v", p.Operators[0])
	}
}

// TestParseWindowErrors: what the config package checks of a window's
// fields; the rules between them are the window package's
// (window.TestWindowRulesInPipelineFiles).
func TestParseWindowErrors(t *testing.T) {
	tests := []struct {
		name, op, want string
	}{
		{name: "missing size", op: `{name: w, type: window, kind: tumbling, aggregates: [{func: count, as: n}]}`,
			want: `operators[0] "w": a tumbling window needs "size"`},
		{name: "size on a session", op: `{name: w, type: window, kind: session, gap: 5s, size: 1s, aggregates: [{func: count, as: n}]}`,
			want: `operators[0] "w".size: does not apply to a session window`},
		{name: "unknown func", op: `{name: w, type: window, kind: count, count: 3, aggregates: [{func: median, field: x, as: m}]}`,
			want: `invalid value "median"`},
		{name: "sum without field", op: `{name: w, type: window, kind: count, count: 3, aggregates: [{func: sum, as: s}]}`,
			want: `sum needs a "field"`},
		{name: "no aggregates", op: `{name: w, type: window, kind: count, count: 3}`,
			want: `a window needs at least one entry in "aggregates", or a "plugin"`},
		{name: "plugin and aggregates", op: `{name: w, type: window, kind: count, count: 3, plugin: plugins/double.wasm, aggregates: [{func: count, as: n}]}`,
			want: `operators[0] "w".aggregates: a window takes either aggregates or a plugin, not both; to combine built-in aggregates with a plugin's, list the plugin among them: {plugin: plugins/double.wasm, as: …}`},
		{name: "plugin aggregate without as", op: `{name: w, type: window, kind: count, count: 3, aggregates: [{plugin: plugins/double.wasm}]}`,
			want: `operators[0] "w".aggregates[0]: a plugin aggregate needs "as", the output field of its result`},
		{name: "two plugin aggregates", op: `{name: w, type: window, kind: count, count: 3, aggregates: [{plugin: plugins/double.wasm, as: a}, {func: count, as: n}, {plugin: plugins/anomaly, as: b}]}`,
			want: `operators[0] "w".aggregates[2].plugin: a window takes one plugin aggregate; aggregates[0] is one already`},
		{name: "plugin aggregate with func", op: `{name: w, type: window, kind: count, count: 3, aggregates: [{plugin: plugins/double.wasm, func: count, as: a}]}`,
			want: `operators[0] "w".aggregates[0].func: an aggregate takes either func or plugin, not both`},
		{name: "plugin aggregate with field", op: `{name: w, type: window, kind: count, count: 3, aggregates: [{plugin: plugins/double.wasm, field: x, as: a}]}`,
			want: `operators[0] "w".aggregates[0]: field "field" does not apply to a plugin aggregate`},
		{name: "built-in aggregate with config", op: `{name: w, type: window, kind: count, count: 3, aggregates: [{func: count, as: n, config: {x: 1}}]}`,
			want: `operators[0] "w".aggregates[0]: field "config" does not apply to a built-in aggregate (func)`},
		{name: "plugin aggregate that does not exist", op: `{name: w, type: window, kind: count, count: 3, aggregates: [{plugin: plugins/nope, as: a}]}`,
			want: `operators[0] "w".aggregates[0].plugin: plugin "plugins/nope" does not exist`},
		{name: "plugin aggregate with a bad timeout", op: `{name: w, type: window, kind: count, count: 3, aggregates: [{plugin: plugins/double.wasm, as: a, timeout: 0s}]}`,
			want: `operators[0] "w".aggregates[0].timeout: must be greater than 0`},
		{name: "config beside a plugin aggregate", op: `{name: w, type: window, kind: count, count: 3, config: {x: 1}, aggregates: [{plugin: plugins/double.wasm, as: a}]}`,
			want: `operators[0] "w".config: only applies with a plugin (a plugin in aggregates takes it in its entry)`},
		{name: "plugin aggregate's unknown field", op: `{name: w, type: window, kind: count, count: 3, aggregates: [{plugin: plugins/double.wasm, as: a, confg: {}}]}`,
			want: `unknown field "confg" (did you mean "config"?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setupDir(t)
			doc := "name: p\nsources: [{name: in, type: stdin}]\noperators:\n  - " + tt.op + "\nsinks: [{name: out, type: stdout}]\n"
			_, err := Parse("pipeline.yaml", []byte(doc), nil, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "pipeline.yaml:4:") {
				t.Fatalf("err = %v\nwant it to contain %q at line 4", err, tt.want)
			}
		})
	}
}

func TestParseEventTimeErrors(t *testing.T) {
	tests := []struct {
		name, et, want string
	}{
		{name: "unknown format", et: `{field: ts, format: epoch_ns}`, want: `invalid value "epoch_ns"`},
		{name: "format without field", et: `{format: rfc3339}`, want: `format: only applies with a field`},
		{name: "bad duration", et: `{field: ts, max_out_of_orderness: soon}`, want: `invalid duration "soon"`},
		{name: "unknown field", et: `{field: ts, watermark: 5s}`, want: `unknown field "watermark"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setupDir(t)
			doc := "name: p\nsources: [{name: in, type: stdin, event_time: " + tt.et + "}]\nsinks: [{name: out, type: stdout}]\n"
			_, err := Parse("pipeline.yaml", []byte(doc), nil, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "pipeline.yaml:2:") {
				t.Fatalf("err = %v\nwant it to contain %q at line 2", err, tt.want)
			}
		})
	}
}
