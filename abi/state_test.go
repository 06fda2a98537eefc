package abi

import (
	"bytes"
	"strings"
	"testing"
)

func TestAppendStateKey(t *testing.T) {
	long := strings.Repeat("n", 200)
	tests := []struct {
		name   string
		kind   StateKind
		state  string
		suffix []byte
		want   []byte
	}{
		{"value state", ValueStateKind, "count", nil, []byte("vcount")},
		{"value state empty name", ValueStateKind, "", nil, []byte("v")},
		{"value state unicode name", ValueStateKind, "größe", nil, []byte("vgröße")},
		{"map state", MapStateKind, "LUT", []byte("temp"), []byte("m\x03LUTtemp")},
		{"map state empty entry key", MapStateKind, "LUT", []byte{}, []byte("m\x03LUT")},
		{"map state empty name", MapStateKind, "", []byte("k"), []byte("m\x00k")},
		{"map state long name", MapStateKind, long, []byte("k"), append(append([]byte{'m', 0xc8, 0x01}, long...), 'k')},
		{"map state binary entry key", MapStateKind, "s", []byte{0, 0xff}, []byte("m\x01s\x00\xff")},
		{"list length", ListStateKind, "xs", nil, []byte("l\x02xs")},
		{"list element", ListStateKind, "xs", AppendStateListIndex(nil, 258), []byte("l\x02xs\x00\x00\x00\x00\x00\x00\x01\x02")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := AppendStateKey([]byte("pre"), tc.kind, tc.state, tc.suffix)
			if want := append([]byte("pre"), tc.want...); !bytes.Equal(got, want) {
				t.Fatalf("AppendStateKey = %q, want %q", got, want)
			}
			kind, name, suffix, ok := ParseStateKey(got[3:])
			if !ok || kind != tc.kind || string(name) != tc.state || !bytes.Equal(suffix, tc.suffix) {
				t.Errorf("ParseStateKey(%q) = %q, %q, %q, %v", got[3:], kind, name, suffix, ok)
			}
		})
	}
	// Names of different lengths cannot make one map key look like another.
	if bytes.Equal(AppendStateKey(nil, MapStateKind, "ab", []byte("c")), AppendStateKey(nil, MapStateKind, "a", []byte("bc"))) {
		t.Error("map state keys collide")
	}
	if i, ok := ParseStateListIndex(AppendStateListIndex(nil, 1<<40+3)); !ok || i != 1<<40+3 {
		t.Errorf("ParseStateListIndex(AppendStateListIndex(2^40+3)) = %d, %v", i, ok)
	}
	if _, ok := ParseStateListIndex(nil); ok {
		t.Error("ParseStateListIndex of a list's length suffix is ok")
	}
}

func TestParseStateKeyRejects(t *testing.T) {
	for _, key := range []string{"", "x", "m", "m\x05ab", "m\x80", "l\x01a\x00", "l\x01a123456789"} {
		if kind, name, suffix, ok := ParseStateKey([]byte(key)); ok {
			t.Errorf("ParseStateKey(%q) = %q, %q, %q, true; want not ok", key, kind, name, suffix)
		}
	}
}
