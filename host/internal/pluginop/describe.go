package pluginop

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"unicode/utf8"

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
	q := strconv.Quote(string(name))
	switch kind {
	case abi.ValueStateKind:
		return operator.KeyEntry{Kind: "value", Text: "value " + q, Attrs: map[string]any{"name": string(name)}}, true
	case abi.MapStateKind:
		attrs := map[string]any{"name": string(name)}
		if utf8.Valid(suffix) {
			attrs["map_key"] = string(suffix)
		} else {
			attrs["map_key_hex"] = hex.EncodeToString(suffix)
		}
		return operator.KeyEntry{Kind: "map", Text: "map " + q + " [" + strconv.Quote(string(suffix)) + "]", Attrs: attrs}, true
	}
	e := operator.KeyEntry{Kind: "list", Text: "list " + q + " length", Attrs: map[string]any{"name": string(name), "index": int64(-1)}}
	if i, ok := abi.ParseStateListIndex(suffix); ok {
		e.Text, e.Attrs["index"] = fmt.Sprintf("list %s [%d]", q, i), int64(i)
	}
	return e, true
}
