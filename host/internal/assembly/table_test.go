package assembly

import (
	"fmt"
	"strings"
	"testing"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/config"
)

// TestEveryTypeHasARow checks the operator table against the types the
// config accepts: a type without a row would pass validation and fail to
// load, a row without a type could never be used. A row the config
// package does not know must bring its Schema, and may not take a
// built-in type's name.
func TestEveryTypeHasARow(t *testing.T) {
	builtIn := map[config.OperatorType]bool{}
	for _, typ := range config.OperatorTypes() {
		builtIn[typ] = true
		if k, ok := kinds[typ]; !ok || k.Load == nil {
			t.Errorf("operator type %q has no row (or no Load) in the operator table", typ)
		} else if k.Schema.Decode != nil {
			t.Errorf("operator type %q is built into the config package, and its row brings a Schema too", typ)
		}
	}
	for typ, k := range kinds {
		if builtIn[typ] {
			continue
		}
		if k.Schema.Decode == nil || k.Load == nil {
			t.Errorf("the operator table's row for %q has no Schema (or no Load), and the config does not know it", typ)
			continue
		}
		doc := fmt.Sprintf("name: p\nsources: [{name: in, type: stdin}]\noperators: [{name: op, type: %s}]\nsinks: [{name: out, type: discard}]\n", typ)
		if _, err := config.Parse("p.yaml", []byte(doc), nil, Schemas()); err != nil && strings.Contains(err.Error(), "invalid value") {
			t.Errorf("the config refuses the table's type %q: %v", typ, err)
		}
	}
}

// TestDescribeEntry checks that each stateful kind's row describes what
// its package writes, and nothing else.
func TestDescribeEntry(t *testing.T) {
	cases := []struct {
		name     string
		typ      config.OperatorType
		uk       []byte
		wantKind string
		wantName string
	}{
		{"plugin value state", config.OperatorMap, abi.AppendStateKey(nil, abi.ValueStateKind, "count", nil), "value", "count"},
		{"plugin map state", config.OperatorFilter, abi.AppendStateKey(nil, abi.MapStateKind, "seen", []byte("k")), "map", "seen"},
		{"plugin list length", config.OperatorFlatMap, abi.AppendStateKey(nil, abi.ListStateKind, "xs", nil), "list", "xs"},
		{"window operator entry", config.OperatorWindow, []byte{'m'}, "window", ""},
		{"rolling header", config.OperatorRolling, []byte{'o'}, "rolling", ""},
		{"garbage in a window", config.OperatorWindow, []byte{'z', 1}, "", ""},
		{"join record", config.OperatorJoin, append([]byte{'L'}, make([]byte, 20)...), "join_left", ""},
		{"join matched mark", config.OperatorJoin, append([]byte{'r'}, make([]byte, 20)...), "join_right_matched", ""},
		{"join key of the wrong length", config.OperatorJoin, []byte{'L', 1}, "", ""},
		{"key_by keeps no state", config.OperatorKeyBy, []byte("v"), "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := DescribeEntry(tc.typ, nil, tc.uk, nil)
			name, _ := e.Attrs["name"].(string)
			if ok != (tc.wantKind != "") || e.Kind != tc.wantKind || name != tc.wantName {
				t.Errorf("DescribeEntry = %+v, %v; want kind %q name %q", e, ok, tc.wantKind, tc.wantName)
			}
		})
	}
}
