package window

import (
	"encoding/binary"

	"github.com/weir-stream/weir/host/internal/operator"
)

// DescribeWindow is the operator table's Describe for window: panes,
// sessions and count windows by record key (doc.go, "State"), and the
// operator's own entry under the empty record key.
func DescribeWindow(rk, uk, v []byte) (operator.KeyEntry, bool) {
	if len(uk) == 0 {
		return operator.KeyEntry{}, false
	}
	tag, nilKey := uk[0]&^tagNilKey, uk[0]&tagNilKey != 0
	if nilKey && len(rk) != 0 {
		return operator.KeyEntry{}, false
	}
	e := operator.KeyEntry{NilKey: nilKey}
	switch {
	case (tag == tagPane || tag == tagSession) && len(uk) == 9:
		e.Start, e.Kind = int64(binary.BigEndian.Uint64(uk[1:])^1<<63), "pane"
		if tag == tagSession {
			e.Kind = "session"
			if d, m := binary.Uvarint(v); m > 0 {
				e.End = e.Start + int64(d)
			}
		}
	case tag == tagCount && len(uk) == 1:
		e.Kind = "count"
		describeCount(&e, v)
	case tag == tagMeta && !nilKey && len(uk) == 1 && len(rk) == 0:
		e.Kind = "window"
	default:
		return operator.KeyEntry{}, false
	}
	return e, true
}

// describeCount reads a count window's records and span from its value.
func describeCount(e *operator.KeyEntry, v []byte) {
	n, m := binary.Uvarint(v)
	if m <= 0 {
		return
	}
	e.Records = n
	if start, m2 := binary.Varint(v[m:]); m2 > 0 {
		e.Start = start
		if d, m3 := binary.Uvarint(v[m+m2:]); m3 > 0 {
			e.End = start + int64(d)
		}
	}
}

// DescribeRolling is the operator table's Describe for rolling: a header
// and history rows by record key.
func DescribeRolling(rk, uk, _ []byte) (operator.KeyEntry, bool) {
	if len(uk) == 0 {
		return operator.KeyEntry{}, false
	}
	tag, nilKey := uk[0]&^tagNilKey, uk[0]&tagNilKey != 0
	switch {
	case nilKey && len(rk) != 0:
		return operator.KeyEntry{}, false
	case tag == tagRolling && len(uk) == 1:
		return operator.KeyEntry{Kind: "rolling", NilKey: nilKey}, true
	case tag == tagRollingRow && len(uk) == 9:
		return operator.KeyEntry{Kind: "rolling_row", NilKey: nilKey, Row: int64(binary.BigEndian.Uint64(uk[1:]))}, true
	}
	return operator.KeyEntry{}, false
}
