package pluginop

import (
	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/operator"
)

// Describe is the operator table's Describe for plugin operators: their
// entries follow the SDKs' slot convention (abi.ParseStateKey).
func Describe(_, uk, _ []byte) (operator.KeyEntry, bool) {
	kind, name, suffix, ok := abi.ParseStateKey(uk)
	if !ok {
		return operator.KeyEntry{}, false
	}
	switch kind {
	case abi.ValueStateKind:
		return operator.KeyEntry{Kind: "value", Name: string(name)}, true
	case abi.MapStateKind:
		return operator.KeyEntry{Kind: "map", Name: string(name), MapKey: suffix}, true
	}
	e := operator.KeyEntry{Kind: "list", Name: string(name), Row: -1}
	if i, ok := abi.ParseStateListIndex(suffix); ok {
		e.Row = int64(i)
	}
	return e, true
}
