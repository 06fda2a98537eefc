package join

import (
	"encoding/binary"

	"github.com/weir-stream/weir/host/internal/operator"
)

// Describe is the operator table's Describe for join: each stored record
// is keyed by its side, event time, and origin partition and offset.
func Describe(_, uk, _ []byte) (operator.KeyEntry, bool) {
	if len(uk) != userKeyLen || (uk[0] != sideLeft && uk[0] != sideRight) {
		return operator.KeyEntry{}, false
	}
	e := operator.KeyEntry{Kind: "join_left", Start: int64(binary.BigEndian.Uint64(uk[1:]) ^ 1<<63),
		Row: int64(binary.BigEndian.Uint64(uk[13:]))}
	if uk[0] == sideRight {
		e.Kind = "join_right"
	}
	return e, true
}
