package join

import (
	"encoding/binary"
	"fmt"

	"github.com/weir-stream/weir/host/internal/operator"
)

// Describe is the operator table's Describe for join: each stored record
// is keyed by its side, event time, and origin partition and offset; an
// outer side's record that matched has a mark beside it, keyed the same
// with the side in lower case.
func Describe(_, uk, _ []byte) (operator.KeyEntry, bool) {
	kinds := map[byte]string{sideLeft: "join_left", sideRight: "join_right",
		markedLeft: "join_left_matched", markedRight: "join_right_matched"}
	if len(uk) != userKeyLen || kinds[uk[0]] == "" {
		return operator.KeyEntry{}, false
	}
	t, offset := int64(binary.BigEndian.Uint64(uk[1:])^1<<63), int64(binary.BigEndian.Uint64(uk[13:]))
	side, text := "left", "%s record at %s (offset %d)"
	if uk[0]&^markBit == sideRight {
		side = "right"
	}
	if uk[0]&markBit != 0 {
		text += " matched"
	}
	return operator.KeyEntry{Kind: kinds[uk[0]], Text: fmt.Sprintf(text, side, operator.MsTime(t), offset),
		Attrs: map[string]any{"event_time": t, "offset": offset}}, true
}
