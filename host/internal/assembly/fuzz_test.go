package assembly

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/dedupe"
	"github.com/weir-stream/weir/host/internal/operator"
	"github.com/weir-stream/weir/state"
)

// FuzzOperatorsWithTable parses operator lists with the table's schemas
// (config's own fuzz test cannot reach them): Parse never panics, its
// failures are positioned Errors, and every window and dedupe it accepts
// loads, so that the config's checks and the kinds' constructors agree.
func FuzzOperatorsWithTable(f *testing.F) {
	for _, op := range []string{
		`{name: d, type: dedupe}`,
		`{name: d, type: dedupe, within: 10s}`,
		`{name: d, type: dedupe, within: 1500us}`,
		`{name: w, type: window, kind: tumbling, size: 1s, aggregates: [{func: count, as: n}]}`,
		`{name: w, type: window, kind: sliding, size: 2s, slide: 500ms, emit: every, emit_interval: 1s, aggregates: [{func: sum, field: v, as: s}]}`,
		`{name: w, type: window, kind: cumulate, size: 6s, step: 2s, allowed_lateness: 1s, aggregates: [{func: count_distinct, field: v, as: c, exact: 5}]}`,
		`{name: w, type: window, kind: session, gap: 30s, key_field: id, aggregates: [{func: first, as: f}, {func: last, field: a.b, as: l}]}`,
		`{name: w, type: window, kind: count, count: 3, emit: on_update, aggregates: [{func: max, field: x, as: key}]}`,
	} {
		f.Add(op)
	}
	schemas := Schemas()
	f.Fuzz(func(t *testing.T, op string) {
		doc := "name: p\nsources: [{name: in, type: stdin}]\noperators:\n  - " + op + "\nsinks: [{name: out, type: discard}]\n"
		p, err := config.Parse("pipeline.yaml", []byte(doc), nil, schemas)
		if err != nil {
			var errs config.Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("error %T is not a non-empty Errors: %v", err, err)
			}
			for _, e := range errs {
				if e.Msg == "" || e.Pos.File != "pipeline.yaml" {
					t.Errorf("an error without a message or position: %+v", e)
				}
			}
			return
		}
		for i := range p.Operators {
			o := &p.Operators[i]
			if s, ok := o.Settings.(dedupe.Settings); ok && (s.Within < 0 || s.Within%time.Millisecond != 0) {
				t.Errorf("dedupe accepted with within %v", s.Within)
			}
			if (o.Type != config.OperatorWindow || o.Plugin != "") && o.Type != dedupe.Type {
				continue
			}
			l, err := kinds[o.Type].Load(context.Background(), o, operator.Env{Store: state.NewMemory()})
			if err != nil {
				t.Fatalf("accepted, but does not load: %v\n%s", err, op)
			}
			l.Close(context.Background())
		}
	})
}
