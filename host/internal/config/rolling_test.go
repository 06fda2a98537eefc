package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseRolling(t *testing.T) {
	setupDir(t)
	doc := `name: sums
sources: [{name: in, type: stdin, event_time: {field: ts}}]
operators:
  - {name: by-card, type: key_by, field: card}
  - name: sums
    type: rolling
    windows:
      - {name: 10m, range: 10m}
      - {name: 7d, range: 168h}
    aggregates:
      - {func: sum, field: amount, as: amount_sum}
      - {func: count, as: n}
  - name: rows
    type: rolling
    order: rows
    windows: [{name: last5, rows: 5}]
    aggregates: [{func: max, field: a.b, as: m}]
sinks: [{name: out, type: stdout}]
`
	p, err := Parse("pipeline.yaml", []byte(doc), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := p.Operators[1].Rolling
	if p.Operators[1].Type != OperatorRolling || r.Order != RollingRange || len(r.Windows) != 2 ||
		r.Windows[0].Name != "10m" || r.Windows[0].Range != 10*time.Minute || r.Windows[1].Range != 168*time.Hour ||
		len(r.Aggregates) != 2 || r.Aggregates[0].Func != "sum" || r.Aggregates[0].As != "amount_sum" || r.Aggregates[1].Field != "" {
		t.Errorf("rolling = %+v", r)
	}
	r = p.Operators[2].Rolling
	if r.Order != RollingRows || r.Windows[0].Rows != 5 || strings.Join(r.Aggregates[0].Path, ".") != "a.b" {
		t.Errorf("rolling = %+v", r)
	}
}

func TestParseRollingErrors(t *testing.T) {
	agg := `aggregates: [{func: count, as: n}]`
	tests := []struct {
		name, op, want string
	}{
		{name: "no windows", op: `{name: r, type: rolling, ` + agg + `}`,
			want: `operators[0] "r": a rolling operator needs at least one entry in "windows"`},
		{name: "empty windows", op: `{name: r, type: rolling, windows: [], ` + agg + `}`,
			want: `needs at least one entry in "windows"`},
		{name: "both", op: `{name: r, type: rolling, windows: [{name: a, range: 1s, rows: 3}], ` + agg + `}`,
			want: `.windows[0].rows: a window takes either range or rows, not both`},
		{name: "rows in range order", op: `{name: r, type: rolling, windows: [{name: a, rows: 3}], ` + agg + `}`,
			want: `applies only with order: rows`},
		{name: "range in rows order", op: `{name: r, type: rolling, order: rows, windows: [{name: a, range: 1s}], ` + agg + `}`,
			want: `applies only with order: range`},
		{name: "bad order", op: `{name: r, type: rolling, order: groups, windows: [{name: a, range: 1s}], ` + agg + `}`,
			want: `invalid value "groups"`},
		{name: "duplicate window", op: `{name: r, type: rolling, windows: [{name: a, range: 1s}, {name: a, range: 2s}], ` + agg + `}`,
			want: `window name "a" is already used`},
		{name: "duplicate output", op: `{name: r, type: rolling, windows: [{name: a, range: 1s}], aggregates: [{func: count, as: n}, {func: sum, field: x, as: n}]}`,
			want: `output field "n_a" is already used`},
		{name: "bad duration", op: `{name: r, type: rolling, windows: [{name: a, range: soon}], ` + agg + `}`,
			want: `invalid duration "soon"`},
		{name: "negative range", op: `{name: r, type: rolling, windows: [{name: a, range: -1s}], ` + agg + `}`,
			want: `must not be negative`},
		{name: "sub-millisecond", op: `{name: r, type: rolling, windows: [{name: a, range: 1500us}], ` + agg + `}`,
			want: `not a whole number of milliseconds`},
		{name: "zero rows", op: `{name: r, type: rolling, order: rows, windows: [{name: a, rows: 0}], ` + agg + `}`,
			want: `.rows`},
		{name: "window without name", op: `{name: r, type: rolling, windows: [{range: 1s}], ` + agg + `}`,
			want: `missing required field "name"`},
		{name: "unknown func", op: `{name: r, type: rolling, windows: [{name: a, range: 1s}], aggregates: [{func: first, as: f}]}`,
			want: `invalid value "first"`},
		{name: "sum without field", op: `{name: r, type: rolling, windows: [{name: a, range: 1s}], aggregates: [{func: sum, as: s}]}`,
			want: `sum needs a "field"`},
		{name: "no aggregates", op: `{name: r, type: rolling, windows: [{name: a, range: 1s}]}`,
			want: `needs at least one entry in "aggregates"`},
		{name: "unknown field", op: `{name: r, type: rolling, size: 1s, windows: [{name: a, range: 1s}], ` + agg + `}`,
			want: `field "size" does not apply to rolling operators`},
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
