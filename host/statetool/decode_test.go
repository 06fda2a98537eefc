package statetool

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/weir-stream/weir/host/internal/config"
)

func TestDecodeEntry(t *testing.T) {
	be := func(tag byte, v uint64) []byte { return binary.BigEndian.AppendUint64([]byte{tag}, v) }
	const start = 1710667200000 // 2024-03-17T09:20:00Z
	tests := []struct {
		name   string
		typ    string
		rk, uk []byte
		v      []byte
		want   string
	}{
		{"value state", "map", []byte("k"), []byte("vcount"), nil, `value "count"`},
		{"map state", "flat_map", []byte("k"), []byte("m\x03LUTkey"), nil, `map "LUT" ["key"]`},
		{"map state, bad length", "filter", []byte("k"), []byte("m\x09LUT"), nil, `raw "m\tLUT"`},
		{"pane", "window", []byte("k"), be('p', uint64(start)^1<<63), nil, "pane start 2024-03-17T09:20:00Z"},
		{"pane of the nil key", "window", nil, be('p'|0x80, uint64(start)^1<<63), nil, "pane start 2024-03-17T09:20:00Z (nil key)"},
		{"session", "window", []byte("k"), be('s', uint64(start)^1<<63), binary.AppendUvarint(nil, 30000), "session [2024-03-17T09:20:00Z, 2024-03-17T09:20:30Z)"},
		{"count window", "window", []byte("k"), []byte{'c'}, binary.AppendUvarint(binary.AppendVarint(binary.AppendUvarint(nil, 3), start), 1500), "count window, 3 records, [2024-03-17T09:20:00Z, 2024-03-17T09:20:01.5Z)"},
		{"window operator entry", "window", nil, []byte{'m'}, nil, "window operator entry"},
		{"rolling header", "rolling", []byte("k"), []byte{'o'}, nil, "rolling header"},
		{"rolling row", "rolling", []byte("k"), be('O', 12), nil, "rolling row 12"},
		{"unknown operator", "", []byte("k"), []byte("vx"), nil, `raw "vx"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := decodeEntry(config.OperatorType(tt.typ), tt.rk, tt.uk, tt.v)
			e.UserKey = tt.uk
			if got := e.Describe(); got != tt.want {
				t.Errorf("Describe = %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzImportStateFile feeds the state file decoder arbitrary input: it
// must not panic, its errors must name a line, and what it accepts must
// survive writing and reading again unchanged.
func FuzzImportStateFile(f *testing.F) {
	const header = `{"format":"weir-state-v1","pipeline":"p","checkpoint":null}` + "\n"
	f.Add([]byte(header + `{"k":"YQ==","v":"Yg=="}` + "\n"))
	f.Add([]byte(`{"format":"weir-state-v1","pipeline":"p","checkpoint":{"engine":{"epoch":2,"sources":[],"watermark":5,"times":[]},"changelog_next":7}}` + "\n" + `{"k":"AWFi","v":""}`))
	f.Add([]byte(header + "\n\r\n" + `{"k":"YQ==","v":"Yg==","k":"Yg=="}`))
	f.Add([]byte(`{"format":"weir-state-v1"}`))
	f.Add([]byte("\x00\n{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		type kv struct{ k, v string }
		decode := func(data []byte) ([]kv, []byte, error) {
			d, err := newStateDecoder(bytes.NewReader(data))
			if err != nil {
				return nil, nil, err
			}
			var out []kv
			for {
				k, v, err := d.next()
				if err == io.EOF {
					return out, d.meta, nil
				}
				if err != nil {
					return nil, nil, err
				}
				out = append(out, kv{string(k), string(v)})
			}
		}
		entries, meta, err := decode(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		if meta == nil {
			meta = []byte("null")
		}
		var re []byte
		re = fmt.Appendf(re, `{"format":%q,"pipeline":"p","checkpoint":%s}`+"\n", Format, meta)
		for _, e := range entries {
			re = appendEntryLine(re, []byte(e.k), []byte(e.v))
		}
		entries2, _, err := decode(re)
		if err != nil {
			t.Fatalf("re-encoded file fails: %v\n%s", err, re)
		}
		if fmt.Sprint(entries2) != fmt.Sprint(entries) {
			t.Fatalf("round trip changed entries: %q, want %q", entries2, entries)
		}
	})
}
