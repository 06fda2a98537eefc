package window

import (
	"encoding/binary"
	"fmt"

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
	var e operator.KeyEntry
	switch {
	case tag == tagPane && len(uk) == 9:
		start := int64(binary.BigEndian.Uint64(uk[1:]) ^ 1<<63)
		e = operator.KeyEntry{Kind: "pane", Text: "pane start " + operator.MsTime(start), Attrs: map[string]any{"start": start}}
	case tag == tagSession && len(uk) == 9:
		start, end := int64(binary.BigEndian.Uint64(uk[1:])^1<<63), int64(0)
		if d, m := binary.Uvarint(v); m > 0 {
			end = start + int64(d)
		}
		e = operator.KeyEntry{Kind: "session", Text: "session [" + operator.MsTime(start) + ", " + operator.MsTime(end) + ")",
			Attrs: map[string]any{"start": start, "end": end}}
	case tag == tagCount && len(uk) == 1:
		e = describeCount(v)
	case tag == tagMeta && !nilKey && len(uk) == 1 && len(rk) == 0:
		e = operator.KeyEntry{Kind: "window", Text: "window operator entry"}
	default:
		return operator.KeyEntry{}, false
	}
	e.NilKey = nilKey
	return e, true
}

// describeCount reads a count window's records and span from its value.
func describeCount(v []byte) operator.KeyEntry {
	var records uint64
	var start, end int64
	if n, m := binary.Uvarint(v); m > 0 {
		records = n
		if s, m2 := binary.Varint(v[m:]); m2 > 0 {
			start = s
			if d, m3 := binary.Uvarint(v[m+m2:]); m3 > 0 {
				end = s + int64(d)
			}
		}
	}
	return operator.KeyEntry{Kind: "count",
		Text:  fmt.Sprintf("count window, %d records, [%s, %s)", records, operator.MsTime(start), operator.MsTime(end)),
		Attrs: map[string]any{"start": start, "end": end, "records": records}}
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
		return operator.KeyEntry{Kind: "rolling", Text: "rolling header", NilKey: nilKey}, true
	case tag == tagRollingRow && len(uk) == 9:
		row := int64(binary.BigEndian.Uint64(uk[1:]))
		return operator.KeyEntry{Kind: "rolling_row", Text: fmt.Sprintf("rolling row %d", row),
			Attrs: map[string]any{"row": row}, NilKey: nilKey}, true
	}
	return operator.KeyEntry{}, false
}
