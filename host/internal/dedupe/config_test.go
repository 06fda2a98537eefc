package dedupe_test

import (
	"strings"
	"testing"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/dedupe"
)

// TestConfig checks dedupe's settings as a pipeline file gives them: the
// errors name the file, line and field, and say what is wrong.
func TestConfig(t *testing.T) {
	kinds := config.Kinds{dedupe.Type: dedupe.Kind.Schema}
	tests := []struct {
		name, op string
		env      map[string]string
		want     string // "" = valid; else a substring of the error
		within   string
	}{
		{name: "for ever", op: `{name: d, type: dedupe}`, within: "0s"},
		{name: "within", op: `{name: d, type: dedupe, within: 90s}`, within: "1m30s"},
		{name: "from the environment", op: `{name: d, type: dedupe}`, env: map[string]string{"WEIR_OPERATORS_D_WITHIN": "2h"}, within: "2h0m0s"},
		{name: "zero", op: `{name: d, type: dedupe, within: 0s}`, want: `pipeline.yaml:4:37: operators[0] "d".within: must be positive`},
		{name: "negative", op: `{name: d, type: dedupe, within: -1s}`, want: "must not be negative"},
		{name: "not whole milliseconds", op: `{name: d, type: dedupe, within: 1500us}`, want: "1.5ms is not a whole number of milliseconds"},
		{name: "not a duration", op: `{name: d, type: dedupe, within: soon}`, want: `invalid duration "soon"`},
		{name: "a field of another type", op: `{name: d, type: dedupe, field: id}`, want: `field "field" does not apply to dedupe operators`},
		{name: "an unknown field", op: `{name: d, type: dedupe, withn: 1s}`, want: `unknown field "withn" (did you mean "within"?)`},
		{name: "a misspelt type", op: `{name: d, type: dedup}`, want: `did you mean "dedupe"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "name: p\nsources: [{name: in, type: stdin}]\noperators:\n  - " + tt.op + "\nsinks: [{name: out, type: discard}]\n"
			env := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			p, err := config.Parse("pipeline.yaml", []byte(doc), env, kinds)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error = %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s, ok := p.Operators[0].Settings.(dedupe.Settings)
			if !ok || s.Within.String() != tt.within {
				t.Errorf("settings = %#v, want within %s", p.Operators[0].Settings, tt.within)
			}
		})
	}
}
