package meter_test

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/weir-stream/weir/host/internal/meter"
)

var update = flag.Bool("update", false, "rebuild testdata/*.wasm from testdata/*.wat with wat2wasm")

// watFlags are the wat2wasm flags of the testdata modules that need some.
var watFlags = map[string][]string{"calls.wat": {"--debug-names"}}

// TestTestdataUpToDate rebuilds testdata/*.wasm with wat2wasm, when it is
// on PATH, and wants the files checked in. To rebuild them after editing
// a .wat: go test -run TestTestdataUpToDate -update
func TestTestdataUpToDate(t *testing.T) {
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm is not on PATH")
	}
	wats, _ := filepath.Glob("testdata/*.wat")
	for _, wat := range wats {
		out := filepath.Join(t.TempDir(), "out.wasm")
		args := append(slices.Clone(watFlags[filepath.Base(wat)]), wat, "-o", out)
		if msg, err := exec.Command(wat2wasm, args...).CombinedOutput(); err != nil {
			t.Fatalf("wat2wasm %s: %v\n%s", wat, err, msg)
		}
		built, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		wasm := strings.TrimSuffix(wat, ".wat") + ".wasm"
		if *update {
			if err := os.WriteFile(wasm, built, 0o644); err != nil {
				t.Fatal(err)
			}
		} else if checkedIn, _ := os.ReadFile(wasm); !bytes.Equal(built, checkedIn) {
			t.Errorf("%s is not what wat2wasm builds from %s: run go test -run TestTestdataUpToDate -update", wasm, wat)
		}
	}
}

// padded encodes v as a LEB128 of exactly 5 bytes, as linkers do.
func padded(v uint32) []byte {
	return []byte{byte(v) | 0x80, byte(v>>7) | 0x80, byte(v>>14) | 0x80, byte(v>>21) | 0x80, byte(v >> 28)}
}

// TestSizeEncodings: sizes encoded in more bytes than needed keep their
// width; sizes that outgrow their width move what follows.
func TestSizeEncodings(t *testing.T) {
	nops := func(n int) []byte { return bytes.Repeat([]byte{0x01}, n) }
	paddedBody := slices.Concat([]byte{0x00}, nops(3), []byte{0x0b})
	paddedCode := slices.Concat([]byte{1}, padded(uint32(len(paddedBody))), paddedBody)
	tests := []struct {
		name      string
		bin       []byte
		bodyWidth int // of the body size in the output
	}{
		{"padded sizes", module(
			section(1, vec([]byte{0x60, 0x00, 0x00})),
			section(3, vec(u32(0))),
			section(7, vec(slices.Concat(str("f"), []byte{0x00}, u32(0)))),
			slices.Concat([]byte{10}, padded(uint32(len(paddedCode))), paddedCode),
		), 5},
		{"body outgrows one byte", oneFunction(nops(112)...), 2}, // 114 bytes, and a check
		{"body outgrows two bytes", oneFunction(nops(16360)...), 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := instrument(t, tt.bin, meter.Options{})
			ids, contents := sections(t, out)
			code := contents[bytes.IndexByte(ids, 10)]
			_, n := readU32(code)
			if _, width := readU32(code[n:]); width != tt.bodyWidth {
				t.Errorf("body size in %d bytes, want %d", width, tt.bodyWidth)
			}
			rt := newRuntime(t, wazero.NewRuntimeConfig(), &yielder{fuel: 1})
			if _, err := call(instantiate(t, rt, out, ""), "f"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestIndexWidths: function indices whose LEB128 grows by a byte when
// renumbered (127 to 128) in calls, ref.func, exports, elements and the
// start section.
func TestIndexWidths(t *testing.T) {
	const n = 200 // functions i < n return i
	var types, funcs, bodies [][]byte
	types = append(types, []byte{0x60, 0x00, 0x01, 0x7f}, []byte{0x60, 0x00, 0x00})
	for i := range n {
		funcs = append(funcs, u32(0))
		body := slices.Concat([]byte{0x00, 0x41}, sleb(i), []byte{0x0b})
		bodies = append(bodies, append(u32(uint32(len(body))), body...))
	}
	// Function n: call 127 + call 128 + call_indirect(slot 1) + table[2] via ref.func 129.
	main := []byte{0x00,
		0x10, 0xff, 0x00, 0x10, 0x80, 0x01, 0x6a, // call 127; call 128; i32.add
		0x41, 0x01, 0x11, 0x00, 0x00, 0x6a, // call_indirect type 0 slot 1; i32.add
		0x41, 0x02, 0xd2, 0x81, 0x01, 0x26, 0x00, // table.set 0 (2, ref.func 129)
		0x41, 0x02, 0x11, 0x00, 0x00, 0x6a, // call_indirect slot 2; i32.add
		0x0b}
	funcs = append(funcs, u32(0), u32(1))         // main, and a start function
	start := []byte{0x00, 0x10, 0x7f, 0x1a, 0x0b} // call 127; drop
	for _, body := range [][]byte{main, start} {
		bodies = append(bodies, append(u32(uint32(len(body))), body...))
	}
	bin := module(
		section(1, vec(types...)),
		section(3, vec(funcs...)),
		section(4, vec([]byte{0x70, 0x00, 0x04})),
		section(7, vec(
			slices.Concat(str("main"), []byte{0x00}, u32(n)),
			slices.Concat(str("f127"), []byte{0x00}, u32(127)))),
		section(8, u32(n+1)),
		section(9, vec(
			slices.Concat([]byte{0x00, 0x41, 0x00, 0x0b}, vec(u32(126), u32(127))), // slots 0, 1
			slices.Concat([]byte{0x03, 0x00}, vec(u32(129))))),                     // declares 129
		section(10, vec(bodies...)),
	)
	p := &pair{y: &yielder{fuel: 1}}
	p.orig = instantiate(t, newRuntime(t, wazero.NewRuntimeConfig(), p.y), bin, "widths")
	p.inst = instantiate(t, newRuntime(t, wazero.NewRuntimeConfig(), p.y), instrument(t, bin, meter.Options{Fuel: 1}), "widths")
	if got, _ := p.same(t, "main"); got[0] != 127+128+127+129 {
		t.Errorf("main() = %d", got[0])
	}
	if got, _ := p.same(t, "f127"); got[0] != 127 {
		t.Errorf("f127() = %d", got[0])
	}
}

func sleb(v int) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
