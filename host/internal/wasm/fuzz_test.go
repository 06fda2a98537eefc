package wasm

import (
	"bytes"
	"testing"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/record"
)

// FuzzOutputDecode feeds arbitrary output frames through the decoder
// Process uses (abi.OutputReader, abi.CheckOrder, record building). It must
// never panic, and what it accepts must obey the ABI: outputs in input
// order, a dead letter per rejected input, every record carrying its
// input's origin.
func FuzzOutputDecode(f *testing.F) {
	var w abi.OutputWriter
	seed := func(build func(w *abi.OutputWriter)) []byte {
		w.Reset()
		build(&w)
		return append([]byte(nil), w.Bytes()...)
	}
	f.Add(uint8(abi.OpMap), uint8(3), seed(func(w *abi.OutputWriter) { w.Keep(0); w.Keep(1); w.Keep(2) }))
	f.Add(uint8(abi.OpMap), uint8(2), seed(func(w *abi.OutputWriter) { w.Record(0, []byte("v")); w.Error(1, "bad") }))
	f.Add(uint8(abi.OpFilter), uint8(4), seed(func(w *abi.OutputWriter) { w.Keep(1); w.Error(3, "no") }))
	f.Add(uint8(abi.OpFlatMap), uint8(3), seed(func(w *abi.OutputWriter) {
		w.Record(0, []byte("a"))
		w.Record(0, []byte("b"))
		w.Error(0, "x")
		w.BeginRecord(2, abi.FlagKey|abi.FlagTimestamp|abi.FlagHeaders)
		w.AppendKey(nil)
		w.AppendTimestamp(7)
		w.AppendHeaderCount(2)
		w.AppendHeader("h", []byte("1"))
		w.AppendHeader("h", nil)
		w.AppendValue([]byte("c"))
	}))
	f.Add(uint8(abi.OpFlatMap), uint8(1), []byte{5, 0, 0, 0, 0})
	f.Add(uint8(abi.OpMap), uint8(1), []byte{1, 0, 0, 0, 1, 0, 0, 0, 0, 0xff})
	f.Add(uint8(0), uint8(0), []byte{})

	f.Fuzz(func(t *testing.T, op, n uint8, frame []byte) {
		in := recs(make([]string, n)...)
		d := decoder{op: abi.Op(op % 4), stage: "fuzz"}
		out := new(record.Output)
		out.Records = append(out.Records, record.Record{Value: []byte("earlier")})
		rejected := make([]bool, len(in))
		nrej, err := d.decode(frame, in, out, rejected)
		if err != nil {
			return
		}
		if out.Records[0].Value == nil || string(out.Records[0].Value) != "earlier" {
			t.Fatal("decode touched records appended before it")
		}
		got := out.Records[1:]
		if len(out.Dead) != nrej {
			t.Fatalf("%d dead letters, %d rejected", len(out.Dead), nrej)
		}
		last := -1
		for _, r := range got {
			i := int(r.Origin.Offset)
			if i < last || i >= len(in) || rejected[i] {
				t.Fatalf("record for input %d out of order, out of range or rejected", i)
			}
			last = i
		}
		for _, dl := range out.Dead {
			if !rejected[dl.Record.Origin.Offset] || dl.Stage != "fuzz" {
				t.Fatalf("dead letter %+v", dl)
			}
		}
		if d.op == abi.OpMap && len(got)+nrej != len(in) {
			t.Fatalf("map: %d records and %d rejections for %d inputs", len(got), nrej, len(in))
		}
		// The decoder copies what it keeps: scribbling over the frame must
		// not change the output.
		before := make([]string, len(got))
		for i, r := range got {
			before[i] = string(r.Value)
		}
		for i := range frame {
			frame[i] ^= 0xff
		}
		for i, r := range got {
			if string(r.Value) != before[i] {
				t.Fatal("an output record aliases the frame")
			}
		}
	})
}

// FuzzBatchRoundTrip encodes records as Process does and decodes them with
// abi.BatchReader, as a guest would: every field must survive, including
// the difference between an absent and an empty key or value.
func FuzzBatchRoundTrip(f *testing.F) {
	f.Add([]byte("key"), []byte("value"), int64(1700000000000), uint8(2), true, false)
	f.Add([]byte{}, []byte{}, int64(-1), uint8(0), false, true)
	f.Add([]byte(nil), []byte("\x00\xff"), int64(0), uint8(5), false, false)

	f.Fuzz(func(t *testing.T, key, value []byte, ts int64, nh uint8, nilKey, nilValue bool) {
		if nilKey {
			key = nil
		} else if key == nil {
			key = []byte{}
		}
		if nilValue {
			value = nil
		} else if value == nil {
			value = []byte{}
		}
		in := make([]record.Record, 3)
		for i := range in {
			in[i] = record.Record{Key: key, Value: value, Timestamp: ts + int64(i)}
			for h := 0; h < int(nh%8); h++ {
				in[i].Headers = append(in[i].Headers, record.Header{Key: string(rune('a' + h)), Value: value})
			}
		}
		in[1].Key, in[1].Value = value, key // vary the records

		frame := abi.AppendBatchHeader(nil, len(in))
		for i := range in {
			r := &in[i]
			frame = abi.AppendRecord(frame, r.Timestamp, r.Key, r.Value, len(r.Headers))
			for _, h := range r.Headers {
				frame = abi.AppendHeader(frame, h.Key, h.Value)
			}
		}

		var br abi.BatchReader
		n, err := br.Reset(frame)
		if err != nil || n != len(in) {
			t.Fatalf("Reset: %d, %v", n, err)
		}
		var got abi.InRecord
		for i := range in {
			ok, err := br.Next(&got)
			if !ok || err != nil {
				t.Fatalf("record %d: %v, %v", i, ok, err)
			}
			want := &in[i]
			if got.Timestamp != want.Timestamp || !sameOpt(got.Key, want.Key) || !sameOpt(got.Value, want.Value) {
				t.Fatalf("record %d = {%d %q %q}, want {%d %q %q}", i, got.Timestamp, got.Key, got.Value,
					want.Timestamp, want.Key, want.Value)
			}
			if got.Headers.Len() != len(want.Headers) {
				t.Fatalf("record %d: %d headers, want %d", i, got.Headers.Len(), len(want.Headers))
			}
			j := 0
			got.Headers.Each(func(name, v []byte) {
				if string(name) != want.Headers[j].Key || !bytes.Equal(v, want.Headers[j].Value) {
					t.Fatalf("record %d header %d = %q=%q", i, j, name, v)
				}
				j++
			})
		}
		if ok, err := br.Next(&got); ok || err != nil {
			t.Fatalf("after the last record: %v, %v", ok, err)
		}
		// Any truncation is an error, never a panic.
		for cut := 0; cut < len(frame); cut += 1 + len(frame)/16 {
			var r abi.BatchReader
			if _, err := r.Reset(frame[:cut]); err != nil {
				continue
			}
			for {
				ok, err := r.Next(&got)
				if err != nil || !ok {
					break
				}
			}
		}
	})
}

// sameOpt reports whether a and b are equal, absent (nil) and empty being
// different.
func sameOpt(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}
