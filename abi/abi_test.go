package abi

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

type testRecord struct {
	ts      int64
	key     []byte
	value   []byte
	headers [][2]string
}

func encodeBatch(recs []testRecord) []byte {
	b := AppendBatchHeader(nil, len(recs))
	for _, r := range recs {
		b = AppendRecord(b, r.ts, r.key, r.value, len(r.headers))
		for _, h := range r.headers {
			b = AppendHeader(b, h[0], []byte(h[1]))
		}
	}
	return b
}

func TestBatchRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		recs []testRecord
	}{
		{name: "empty batch"},
		{name: "absent key and value", recs: []testRecord{{ts: 7}}},
		{name: "empty key and value", recs: []testRecord{{ts: -1, key: []byte{}, value: []byte{}}}},
		{name: "headers", recs: []testRecord{
			{ts: 1722960137000, key: []byte("123"), value: []byte(`{"a":1}`), headers: [][2]string{{"h1", "v1"}, {"", ""}}},
			{ts: 2, value: []byte("x")},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r BatchReader
			n, err := r.Reset(encodeBatch(tt.recs))
			if err != nil || n != len(tt.recs) {
				t.Fatalf("Reset = %d, %v", n, err)
			}
			var rec InRecord
			for i, want := range tt.recs {
				ok, err := r.Next(&rec)
				if !ok || err != nil {
					t.Fatalf("record %d: Next = %v, %v", i, ok, err)
				}
				if rec.Timestamp != want.ts || !sameOpt(rec.Key, want.key) || !sameOpt(rec.Value, want.value) {
					t.Fatalf("record %d = %+v, want %+v", i, rec, want)
				}
				if rec.Headers.Len() != len(want.headers) {
					t.Fatalf("record %d: %d headers, want %d", i, rec.Headers.Len(), len(want.headers))
				}
				j := 0
				rec.Headers.Each(func(n, v []byte) {
					if string(n) != want.headers[j][0] || string(v) != want.headers[j][1] {
						t.Errorf("header %d = %q:%q", j, n, v)
					}
					j++
				})
			}
			if ok, err := r.Next(&rec); ok || err != nil {
				t.Fatalf("after last: Next = %v, %v", ok, err)
			}
		})
	}
}

func sameOpt(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

func TestBatchMalformed(t *testing.T) {
	valid := encodeBatch([]testRecord{{ts: 1, key: []byte("k"), value: []byte("v"), headers: [][2]string{{"h", "v"}}}})
	tests := []struct {
		name  string
		frame []byte
	}{
		{name: "no count", frame: []byte{1, 0}},
		{name: "count over limit", frame: []byte{0xff, 0xff, 0xff, 0xff}},
		{name: "truncated record", frame: valid[:len(valid)-1]},
		{name: "trailing bytes", frame: append(append([]byte{}, valid...), 0)},
		{name: "count larger than records", frame: append([]byte{2, 0, 0, 0}, valid[4:]...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r BatchReader
			_, err := r.Reset(tt.frame)
			var rec InRecord
			for err == nil {
				var ok bool
				ok, err = r.Next(&rec)
				if !ok && err == nil {
					t.Fatal("malformed frame decoded without error")
				}
			}
			var fe *FrameError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FrameError", err)
			}
		})
	}
}

func TestOutputRoundTrip(t *testing.T) {
	var w OutputWriter
	w.Reset()
	w.Keep(0)
	w.Record(1, []byte("v1"))
	w.Error(2, "boom")
	w.BeginRecord(2, FlagKey|FlagTimestamp|FlagHeaders)
	w.AppendKey(nil)
	w.AppendTimestamp(99)
	w.AppendHeaderCount(1)
	w.AppendHeader("h", []byte("x"))
	buf := w.ValueBuffer()
	buf = append(buf, "in place"...)
	w.EndValue(buf)

	var r OutputReader
	n, err := r.Reset(w.Bytes())
	if err != nil || n != 4 {
		t.Fatalf("Reset = %d, %v", n, err)
	}
	want := []Entry{
		{Kind: KindKeep, Index: 0},
		{Kind: KindRecord, Index: 1, Value: []byte("v1")},
		{Kind: KindError, Index: 2, Message: []byte("boom")},
		{Kind: KindRecord, Index: 2, Flags: FlagKey | FlagTimestamp | FlagHeaders, Time: 99, Value: []byte("in place")},
	}
	var e Entry
	for i, we := range want {
		ok, err := r.Next(&e)
		if !ok || err != nil {
			t.Fatalf("entry %d: %v %v", i, ok, err)
		}
		if e.Kind != we.Kind || e.Index != we.Index || e.Flags != we.Flags || e.Time != we.Time ||
			!bytes.Equal(e.Value, we.Value) || !bytes.Equal(e.Message, we.Message) || e.Key != nil {
			t.Fatalf("entry %d = %+v, want %+v", i, e, we)
		}
	}
	if v, ok := e.Headers.Get("h"); !ok || string(v) != "x" {
		t.Fatalf("header h = %q, %v", v, ok)
	}
	if ok, err := r.Next(&e); ok || err != nil {
		t.Fatalf("after last: %v %v", ok, err)
	}
}

func TestCheckOrder(t *testing.T) {
	tests := []struct {
		name    string
		op      Op
		prev    int
		e       Entry
		wantErr bool
	}{
		{name: "map in order", op: OpMap, prev: 0, e: Entry{Index: 1}},
		{name: "map skips", op: OpMap, prev: 0, e: Entry{Index: 2}, wantErr: true},
		{name: "map repeats", op: OpMap, prev: 1, e: Entry{Index: 1}, wantErr: true},
		{name: "out of batch", op: OpFlatMap, prev: -1, e: Entry{Index: 5}, wantErr: true},
		{name: "flat_map repeats", op: OpFlatMap, prev: 1, e: Entry{Index: 1}},
		{name: "flat_map goes back", op: OpFlatMap, prev: 2, e: Entry{Index: 1}, wantErr: true},
		{name: "filter skips", op: OpFilter, prev: -1, e: Entry{Index: 3}},
		{name: "filter emits record", op: OpFilter, prev: -1, e: Entry{Kind: KindRecord, Index: 0}, wantErr: true},
		{name: "filter repeats", op: OpFilter, prev: 1, e: Entry{Index: 1}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckOrder(tt.op, 4, tt.prev, &tt.e)
			if (got != "") != tt.wantErr {
				t.Fatalf("CheckOrder = %q, want error %v", got, tt.wantErr)
			}
		})
	}
}

func TestNames(t *testing.T) {
	if v, ok := ParseVersionExport(ExportVersion); !ok || v != Version {
		t.Fatalf("ParseVersionExport(%q) = %d, %v", ExportVersion, v, ok)
	}
	for _, name := range []string{"weir_abi_v", "weir_abi_v01", "weir_abi_vx", "weir_abi_v-1", "weir_alloc"} {
		if _, ok := ParseVersionExport(name); ok {
			t.Errorf("ParseVersionExport(%q) accepted", name)
		}
	}
	for _, op := range Ops {
		if op.Export() == "" || op.String() == "" {
			t.Errorf("op %d has no name", op)
		}
	}
	if p, l := Unpack(Pack(0xdeadbeef, 7)); p != 0xdeadbeef || l != 7 {
		t.Fatalf("Unpack(Pack) = %x, %d", p, l)
	}
}

// FuzzBatchDecode checks that any frame decodes or fails cleanly, and that
// a frame that decodes re-encodes to the same bytes.
func FuzzBatchDecode(f *testing.F) {
	f.Add(encodeBatch(nil))
	f.Add(encodeBatch([]testRecord{{ts: 1, key: []byte("k"), value: []byte("v"), headers: [][2]string{{"a", "b"}}}, {ts: 2}}))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, frame []byte) {
		var r BatchReader
		n, err := r.Reset(frame)
		if err != nil {
			return
		}
		out := AppendBatchHeader(nil, n)
		var rec InRecord
		for {
			ok, err := r.Next(&rec)
			if err != nil {
				return
			}
			if !ok {
				break
			}
			out = AppendRecord(out, rec.Timestamp, rec.Key, rec.Value, rec.Headers.Len())
			out = append(out, rec.Headers.Raw()...)
		}
		if !bytes.Equal(out, frame) {
			t.Fatalf("re-encoded frame differs:\n got %x\nwant %x", out, frame)
		}
	})
}

// FuzzOutputDecode checks that any output frame decodes or fails cleanly.
func FuzzOutputDecode(f *testing.F) {
	var w OutputWriter
	w.Reset()
	w.Keep(0)
	w.Record(0, []byte("x"))
	w.Error(1, "bad")
	f.Add(append([]byte{}, w.Bytes()...), 2)
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 0, 0xff}, 1)
	f.Fuzz(func(t *testing.T, frame []byte, n int) {
		var r OutputReader
		if _, err := r.Reset(frame); err != nil {
			return
		}
		var e Entry
		prev := -1
		for {
			ok, err := r.Next(&e)
			if err != nil || !ok {
				return
			}
			for _, op := range Ops {
				CheckOrder(op, n, prev, &e)
			}
			prev = e.Index
			e.Headers.Each(func(_, _ []byte) {})
		}
	})
}

func TestOpSet(t *testing.T) {
	every := []Op{OpMap, OpFlatMap, OpFilter, OpAggregate}
	tests := []struct {
		name string
		set  OpSet
		ops  []Op
		str  string
	}{
		{name: "empty", set: 0, str: "none"},
		{name: "map", set: 1, ops: []Op{OpMap}, str: "map"},
		{name: "flat_map", set: 2, ops: []Op{OpFlatMap}, str: "flat_map"},
		{name: "filter", set: 4, ops: []Op{OpFilter}, str: "filter"},
		{name: "aggregate", set: 8, ops: []Op{OpAggregate}, str: "aggregate"},
		{name: "every operation", set: 15, ops: every, str: "map,flat_map,filter,aggregate"},
		{name: "reserved bits ignored", set: 0xfffffff5, ops: []Op{OpMap, OpFilter}, str: "map,filter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.set.Ops(); !slices.Equal(got, tt.ops) {
				t.Errorf("Ops() = %v, want %v", got, tt.ops)
			}
			if got := tt.set.String(); got != tt.str {
				t.Errorf("String() = %q, want %q", got, tt.str)
			}
			if got := OpSetOf(tt.ops...); got != tt.set&15 {
				t.Errorf("OpSetOf(%v) = %d, want %d", tt.ops, got, tt.set&15)
			}
			for _, op := range every {
				if tt.set.Has(op) != slices.Contains(tt.ops, op) {
					t.Errorf("Has(%v) = %v", op, tt.set.Has(op))
				}
			}
		})
	}
	if Op(0).Bit() != 0 || Op(9).Bit() != 0 || OpSet(0xff).Has(Op(9)) {
		t.Error("an unknown Op has a bit")
	}
}
