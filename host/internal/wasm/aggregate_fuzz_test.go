package wasm

import (
	"bytes"
	"testing"

	"github.com/weir-stream/weir/abi"
)

// FuzzAggDecode feeds arbitrary add and value output frames through the
// decoding AggAdd, AggMerge and AggResult use. It must never panic, and
// what it accepts must obey the ABI: one accumulator per group, dead
// letters only for records of their group, in order, and copies of
// everything taken from the frame.
func FuzzAggDecode(f *testing.F) {
	var w abi.AggWriter
	w.Reset()
	w.BeginGroup()
	w.GroupError(1, "bad")
	w.EndGroup([]byte("acc"))
	w.EndGroup(nil)
	f.Add(uint8(2), uint8(2), false, bytes.Clone(w.Bytes()))
	w.Reset()
	w.Value([]byte("v"))
	w.Value(nil)
	w.Error("e")
	f.Add(uint8(3), uint8(0), true, bytes.Clone(w.Bytes()))
	f.Add(uint8(1), uint8(1), false, []byte{1, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})

	f.Fuzz(func(t *testing.T, groups, size uint8, values bool, frame []byte) {
		wk := &Worker{p: &Plugin{cfg: PluginConfig{Operator: "fuzz"}}}
		out := new(AggOutput)
		if values {
			for _, merge := range []bool{false, true} {
				out.Reset()
				if err := wk.aggDecodeValues(frame, merge, false, int(groups), out); err != nil {
					continue
				}
				if len(out.Values) != int(groups) {
					t.Fatalf("%d values for %d inputs", len(out.Values), groups)
				}
				for _, v := range out.Values {
					if v.Err != "" && v.Value != nil || merge && v.Err == "" && v.Value == nil {
						t.Fatalf("value %+v", v)
					}
				}
			}
			return
		}
		gs := make([]AggGroup, groups)
		for i := range gs {
			gs[i] = AggGroup{Acc: []byte("in"), Records: recs(make([]string, int(size)%5)...)}
		}
		nrej, err := wk.aggDecodeAdd(frame, gs, out)
		if err != nil {
			return
		}
		if len(out.Accs) != len(gs) || len(out.Dead) != nrej {
			t.Fatalf("%d accumulators for %d groups, %d dead for %d rejected", len(out.Accs), len(gs), len(out.Dead), nrej)
		}
		before := make([]string, len(out.Accs))
		for i, a := range out.Accs {
			if a == nil {
				t.Fatalf("accumulator %d is absent", i)
			}
			before[i] = string(a)
		}
		for i := range frame {
			frame[i] ^= 0xff
		}
		for i, a := range out.Accs {
			if string(a) != before[i] {
				t.Fatalf("accumulator %d aliases the frame", i)
			}
		}
	})
}
