package config

import (
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
