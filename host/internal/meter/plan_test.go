package meter_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/weir-stream/weir/host/internal/meter"
)

// TestPlans instruments small modules and counts the checks of each
// function: whether it has an entry check, and how many it has.
func TestPlans(t *testing.T) {
	nops := func(n int) []byte { return bytes.Repeat([]byte{0x01}, n) }
	loop := func(code ...byte) []byte { return slices.Concat([]byte{0x03, 0x40}, code, []byte{0x0b}) }
	setLocal := []byte{0x41, 0x01, 0x21, 0x00}                         // i32.const 1; local.set 0
	brIf := []byte{0x41, 0x00, 0x0d, 0x00}                             // i32.const 0; br_if 0
	i32Local := []byte{0x01, 0x01, 0x7f}                               // one i32 local
	callTwice := slices.Concat([]byte{0x10, 0x01}, []byte{0x10, 0x01}) // call 1; call 1
	type want struct {
		entry  bool
		checks int
	}
	tests := []struct {
		name        string
		m           randomModule
		maxStraight int
		want        []want // of each function
	}{
		{"leaf called in a straight line", randomModule{
			bodies:  [][]byte{slices.Concat(callTwice, callTwice, callTwice), nops(3)},
			exports: []int{0},
		}, 10, []want{{true, 4}, {false, 0}}}, // a call counts 1+4: two a run, then the end
		{"leaf in the table", randomModule{
			bodies: [][]byte{callTwice, nops(3)}, exports: []int{0}, table: []int{1},
		}, 10, []want{{true, 1}, {true, 1}}},
		{"exported leaf", randomModule{
			bodies: [][]byte{callTwice, nops(3)}, exports: []int{0, 1},
		}, 10, []want{{true, 1}, {true, 1}}},
		{"leaf named by ref.func", randomModule{
			bodies:   [][]byte{slices.Concat(callTwice, []byte{0xd2, 0x01, 0x1a}), nops(3)},
			exports:  []int{0},
			declared: []int{1},
		}, 10, []want{{true, 1}, {true, 1}}},
		{"too long for a leaf", randomModule{
			bodies: [][]byte{callTwice, nops(9)}, exports: []int{0},
		}, 10, []want{{true, 1}, {true, 1}}}, // 9 nops and the end: 10 > 9
		{"longest leaf", randomModule{
			bodies: [][]byte{callTwice, nops(8)}, exports: []int{0},
		}, 10, []want{{true, 3}, {false, 0}}}, // a call counts 10, the end 1
		{"a call is no leaf", randomModule{
			bodies: [][]byte{callTwice, {0x10, 0x02}, nil}, exports: []int{0, 2},
		}, 10, []want{{true, 1}, {true, 1}, {true, 1}}},
		{"loop first keeps its entry check", randomModule{
			bodies:  [][]byte{slices.Concat(nops(2), []byte{0x02, 0x40}, loop(brIf...), []byte{0x0b})},
			exports: []int{0},
		}, 10, []want{{true, 2}}},
		{"leaf with locals", randomModule{
			bodies:  [][]byte{callTwice, setLocal},
			locals:  [][]byte{nil, i32Local},
			exports: []int{0},
		}, 10, []want{{true, 1}, {false, 0}}},
		{"straight line before a loop", randomModule{
			bodies: [][]byte{slices.Concat(nops(4), loop())}, exports: []int{0},
		}, 4, []want{{true, 3}}}, // 4 nops and the loop make 5 > 4
	}
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := tt.m.binary()
			out := instrument(t, bin, meter.Options{MaxStraight: tt.maxStraight})
			if c, err := rt.CompileModule(ctx, out); err != nil {
				t.Fatalf("%v\n%x", err, out)
			} else {
				c.Close(ctx)
			}
			for f, body := range withLocals(t, out) {
				got := want{
					entry:  bytes.HasPrefix(body, append(slices.Clone(tt.m.localsOf(f)), check...)),
					checks: bytes.Count(body, check),
				}
				if got != tt.want[f] {
					t.Errorf("function %d: %+v, want %+v\nbody %x", f, got, tt.want[f], body)
				}
			}
		})
	}
}

func (m *randomModule) localsOf(f int) []byte {
	if f < len(m.locals) && m.locals[f] != nil {
		return m.locals[f]
	}
	return []byte{0x00}
}

// withLocals returns each body of bin, locals included.
func withLocals(t *testing.T, bin []byte) [][]byte {
	ids, contents := sections(t, bin)
	code := contents[slices.Index(ids, 10)]
	n, p := readU32(code)
	var bodies [][]byte
	for range n {
		size, m := readU32(code[p:])
		bodies = append(bodies, code[p+m:p+m+int(size)])
		p += m + int(size)
	}
	return bodies
}
