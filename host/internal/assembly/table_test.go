package assembly

import (
	"testing"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/config"
)

// TestEveryTypeHasARow checks the operator table against the types the
// config accepts: a type without a row would pass validation and fail to
// load, a row without a type could never be used.
func TestEveryTypeHasARow(t *testing.T) {
	accepted := map[config.OperatorType]bool{}
	for _, typ := range config.OperatorTypes() {
		accepted[typ] = true
		if k, ok := kinds[typ]; !ok || k.Load == nil {
			t.Errorf("operator type %q has no row (or no Load) in the operator table", typ)
		}
	}
	for typ := range kinds {
		if !accepted[typ] {
			t.Errorf("the operator table has a row for %q, which the config does not accept", typ)
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
			if ok != (tc.wantKind != "") || e.Kind != tc.wantKind || e.Name != tc.wantName {
				t.Errorf("DescribeEntry = %+v, %v; want kind %q name %q", e, ok, tc.wantKind, tc.wantName)
			}
		})
	}
}
