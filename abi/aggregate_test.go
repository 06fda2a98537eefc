package abi

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
)

type testGroup struct {
	acc  []byte
	recs []testRecord
}

func encodeAdd(groups []testGroup) []byte {
	b := AppendAggCount(nil, len(groups))
	for _, g := range groups {
		b = AppendAggGroup(b, g.acc, len(g.recs))
		for _, r := range g.recs {
			b = AppendRecord(b, r.ts, r.key, r.value, len(r.headers))
			for _, h := range r.headers {
				b = AppendHeader(b, h[0], []byte(h[1]))
			}
		}
	}
	return b
}

func encodeAccs(accs ...string) []byte {
	b := AppendAggCount(nil, len(accs))
	for _, a := range accs {
		b = AppendAcc(b, []byte(a))
	}
	return b
}

func encodePairs(pairs ...[2]string) []byte {
	b := AppendAggCount(nil, len(pairs))
	for _, p := range pairs {
		b = AppendAcc(AppendAcc(b, []byte(p[0])), []byte(p[1]))
	}
	return b
}

// readAdd decodes an add frame into a description, reading only the first
// `read` records of each group (all when negative), so that skipping is
// exercised too.
func readAdd(frame []byte, read int) (string, error) {
	var r AggAddReader
	n, err := r.Reset(frame)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d:", n)
	var rec InRecord
	for {
		acc, count, ok, err := r.NextGroup()
		if err != nil {
			return sb.String(), err
		}
		if !ok {
			break
		}
		fmt.Fprintf(&sb, " [%q %d", acc, count)
		for i := 0; read < 0 || i < read; i++ {
			more, err := r.Next(&rec)
			if err != nil {
				return sb.String(), err
			}
			if !more {
				break
			}
			fmt.Fprintf(&sb, " %d/%q/%q/%d", rec.Timestamp, rec.Key, rec.Value, rec.Headers.Len())
		}
		sb.WriteString("]")
	}
	return sb.String(), nil
}

func TestAggAddFrame(t *testing.T) {
	tests := []struct {
		name   string
		groups []testGroup
		read   int
		want   string
	}{
		{name: "no groups", want: "0:"},
		{name: "empty group", groups: []testGroup{{acc: []byte{}}}, read: -1, want: `1: ["" 0]`},
		{
			name: "groups with records",
			groups: []testGroup{
				{acc: []byte("a1"), recs: []testRecord{{ts: 5, key: []byte("k"), value: []byte("v")}, {ts: 6, headers: [][2]string{{"h", "x"}}}}},
				{acc: []byte("b"), recs: []testRecord{{ts: 7, value: []byte{}}}},
			},
			read: -1,
			want: `2: ["a1" 2 5/"k"/"v"/0 6/""/""/1] ["b" 1 7/""/""/0]`,
		},
		{
			name: "unread records are skipped",
			groups: []testGroup{
				{acc: []byte("a"), recs: []testRecord{{ts: 1, value: []byte("x")}, {ts: 2, value: []byte("y")}}},
				{acc: []byte("b"), recs: []testRecord{{ts: 3, value: []byte("z")}}},
			},
			read: 1,
			want: `2: ["a" 2 1/""/"x"/0] ["b" 1 3/""/"z"/0]`,
		},
		{
			name:   "nothing read",
			groups: []testGroup{{acc: []byte("a"), recs: []testRecord{{ts: 1}}}, {acc: []byte("b")}},
			read:   0,
			want:   `2: ["a" 1] ["b" 0]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAdd(encodeAdd(tt.groups), tt.read)
			if err != nil || got != tt.want {
				t.Errorf("got %s, %v\nwant %s", got, err, tt.want)
			}
		})
	}
	var r AggAddReader
	var rec InRecord
	if ok, err := r.Next(&rec); ok || err != nil {
		t.Errorf("Next before NextGroup = %v, %v", ok, err)
	}
}

func TestAggAddFrameExample(t *testing.T) {
	// The worked example of ABI.md §12.
	frame := encodeAdd([]testGroup{{
		acc:  []byte{2, 0, 0, 0},
		recs: []testRecord{{ts: 5, key: []byte("k"), value: []byte("v")}, {ts: 6, key: []byte("k")}},
	}})
	want := "01000000" + "04000000" + "02000000" + "02000000" +
		"0500000000000000" + "010000006b" + "0100000076" + "00000000" +
		"0600000000000000" + "010000006b" + "ffffffff" + "00000000"
	if got := fmt.Sprintf("%x", frame); got != want {
		t.Errorf("add frame %s\nwant      %s", got, want)
	}
	var w AggWriter
	w.Reset()
	w.BeginGroup()
	w.GroupError(1, "no value")
	w.EndGroup([]byte{3, 0, 0, 0})
	want = "01000000" + "01000000" + "01000000" + "08000000" + "6e6f2076616c7565" + "04000000" + "03000000"
	if got := fmt.Sprintf("%x", w.Bytes()); got != want {
		t.Errorf("add output %s\nwant       %s", got, want)
	}
	w.Reset()
	w.Value([]byte("3"))
	if got, want := fmt.Sprintf("%x", w.Bytes()), "01000000"+"00"+"01000000"+"33"; got != want {
		t.Errorf("result output %s, want %s", got, want)
	}
}

func TestAggAddFrameMalformed(t *testing.T) {
	valid := encodeAdd([]testGroup{{acc: []byte("acc"), recs: []testRecord{{ts: 1, key: []byte("k"), value: []byte("v")}}}})
	tests := []struct {
		name  string
		frame []byte
	}{
		{name: "no count", frame: []byte{1, 0}},
		{name: "count over limit", frame: []byte{0xff, 0xff, 0xff, 0x7f}},
		{name: "truncated accumulator", frame: valid[:6]},
		{name: "absent accumulator", frame: []byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}},
		{name: "truncated record count", frame: valid[:10]},
		{name: "record count over limit", frame: append(bytes.Clone(valid[:11]), 0xff, 0xff, 0xff, 0x7f)},
		{name: "truncated record", frame: valid[:len(valid)-1]},
		{name: "trailing bytes", frame: append(bytes.Clone(valid), 0)},
		{name: "group count larger than groups", frame: append([]byte{2, 0, 0, 0}, valid[4:]...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, read := range []int{-1, 0} {
				_, err := readAdd(tt.frame, read)
				var fe *FrameError
				if !errors.As(err, &fe) {
					t.Fatalf("read %d: error %v is not a *FrameError", read, err)
				}
			}
		})
	}
}

func TestAccFrames(t *testing.T) {
	var r AccReader
	n, err := r.Reset(encodeAccs("a", "", "ccc"))
	if err != nil || n != 3 {
		t.Fatalf("Reset = %d, %v", n, err)
	}
	var got []string
	for {
		acc, ok, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got = append(got, string(acc))
	}
	if fmt.Sprint(got) != "[a  ccc]" {
		t.Errorf("accumulators %q", got)
	}

	n, err = r.ResetPairs(encodePairs([2]string{"a", "b"}, [2]string{"", "d"}))
	if err != nil || n != 2 {
		t.Fatalf("ResetPairs = %d, %v", n, err)
	}
	got = got[:0]
	for {
		acc, ok, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got = append(got, string(acc))
	}
	if fmt.Sprint(got) != "[a b  d]" {
		t.Errorf("pairs %q", got)
	}

	for _, tc := range []struct {
		name  string
		frame []byte
		pairs bool
	}{
		{"no count", []byte{1}, false},
		{"count over limit", []byte{0xff, 0xff, 0xff, 0x7f}, true},
		{"truncated", encodeAccs("abc")[:6], false},
		{"absent", []byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, false},
		{"half a pair", encodeAccs("a"), true},
		{"trailing", append(encodeAccs("a"), 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.pairs {
				_, err = r.ResetPairs(tc.frame)
			} else {
				_, err = r.Reset(tc.frame)
			}
			for err == nil {
				var ok bool
				_, ok, err = r.Next()
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

// describeAddOutput renders an add output frame: `[errs] acc` per group.
func describeAddOutput(frame []byte) (string, error) {
	var r AggAddOutputReader
	n, err := r.Reset(frame)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d:", n)
	var g AggGroupOutput
	for {
		ok, err := r.Next(&g)
		if err != nil {
			return sb.String(), err
		}
		if !ok {
			return sb.String(), nil
		}
		sb.WriteString(" [")
		g.Errors.Each(func(i int, msg []byte) { fmt.Fprintf(&sb, "%d:%q ", i, msg) })
		fmt.Fprintf(&sb, "last=%d] %q", g.Errors.Last(), g.Acc)
	}
}

func TestAggAddOutput(t *testing.T) {
	var w AggWriter
	w.Reset()
	w.BeginGroup()
	w.GroupError(0, "bad")
	w.GroupError(3, "")
	w.EndGroup([]byte("acc1"))
	w.EndGroup(nil) // no BeginGroup: a group without errors
	w.BeginGroup()
	buf := w.AccBuffer()
	buf = append(buf, "in place"...)
	w.EndAcc(buf)
	w.BeginGroup()
	w.GroupError(9, "dropped")
	w.Abort()
	w.Abort() // nothing open: no effect
	w.BeginGroup()
	w.GroupError(1, "again")
	w.EndGroup([]byte("z"))
	frame := w.Bytes()
	got, err := describeAddOutput(frame)
	want := `4: [0:"bad" 3:"" last=3] "acc1" [last=-1] "" [last=-1] "in place" [1:"again" last=1] "z"`
	if err != nil || got != want {
		t.Errorf("got %s, %v\nwant %s", got, err, want)
	}

	// The zero writer works, and Reset reuses the buffer.
	var z AggWriter
	z.EndGroup([]byte("a"))
	if got, _ := describeAddOutput(z.Bytes()); got != `1: [last=-1] "a"` {
		t.Errorf("zero writer: %s", got)
	}
	z.Reset()
	if got, _ := describeAddOutput(z.Bytes()); got != "0:" {
		t.Errorf("after Reset: %s", got)
	}

	group := func(parts ...[]byte) []byte { return bytes.Join(append([][]byte{{1, 0, 0, 0}}, parts...), nil) }
	u32 := func(v uint32) []byte { return AppendAggCount(nil, int(v)) }
	for _, tc := range []struct {
		name  string
		frame []byte
	}{
		{"no count", []byte{1, 0, 0}},
		{"count over limit", u32(MaxAggCount + 1)},
		{"no error count", group()},
		{"error count over limit", group(u32(MaxAggCount + 1))},
		{"truncated index", group(u32(1), []byte{0})},
		{"index over limit", group(u32(1), u32(MaxAggCount), u32(0), u32(0))},
		{"indexes not increasing", group(u32(2), u32(1), u32(0), u32(1), u32(0), u32(0))},
		{"truncated message", group(u32(1), u32(0), u32(5), []byte("ab"))},
		{"no accumulator", group(u32(0))},
		{"absent accumulator", group(u32(0), u32(Absent))},
		{"truncated accumulator", group(u32(0), u32(4), []byte("ab"))},
		{"trailing bytes", group(u32(0), u32(0), []byte{0})},
		{"count larger than groups", append(u32(2), group(u32(0), u32(0))[4:]...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := describeAddOutput(tc.frame)
			var fe *FrameError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FrameError", err)
			}
		})
	}
}

func describeValues(frame []byte) (string, error) {
	var r AggValueReader
	n, err := r.Reset(frame)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d:", n)
	var v AggValue
	for {
		ok, err := r.Next(&v)
		if err != nil {
			return sb.String(), err
		}
		if !ok {
			return sb.String(), nil
		}
		switch {
		case v.Status == AggError:
			fmt.Fprintf(&sb, " %v %q", v.Status, v.Message)
		case v.Value == nil:
			fmt.Fprintf(&sb, " %v <nil>", v.Status)
		default:
			fmt.Fprintf(&sb, " %v %q", v.Status, v.Value)
		}
	}
}

func TestAggValueOutput(t *testing.T) {
	var w AggWriter
	w.Value([]byte("v"))
	w.Value(nil)
	w.Value([]byte{})
	w.Error("boom")
	buf := w.ValueBuffer()
	w.EndValue(append(buf, "built"...))
	w.ValueBuffer()
	w.EndValue(nil)
	buf = w.ValueBuffer()
	_ = append(buf, "dropped"...)
	w.Abort()
	got, err := describeValues(w.Bytes())
	want := `6: ok "v" ok <nil> ok "" error "boom" ok "built" ok <nil>`
	if err != nil || got != want {
		t.Errorf("got %s, %v\nwant %s", got, err, want)
	}
	if s := AggStatus(7).String(); s != "status(7)" {
		t.Errorf("AggStatus(7) = %s", s)
	}
	for _, tc := range []struct {
		name  string
		frame []byte
	}{
		{"no count", nil},
		{"count over limit", []byte{0xff, 0xff, 0xff, 0xff}},
		{"no status", []byte{1, 0, 0, 0}},
		{"unknown status", []byte{1, 0, 0, 0, 2, 0, 0, 0, 0}},
		{"truncated value", []byte{1, 0, 0, 0, 0, 3, 0, 0, 0, 'a'}},
		{"truncated message", []byte{1, 0, 0, 0, 1, 3, 0, 0}},
		{"absent message", []byte{1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff}},
		{"trailing", []byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := describeValues(tc.frame)
			var fe *FrameError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FrameError", err)
			}
		})
	}
}

func TestAggNames(t *testing.T) {
	if OpAggregate.String() != "aggregate" || OpAggregate.Export() != ExportAggAdd {
		t.Errorf("OpAggregate = %s, export %s", OpAggregate, OpAggregate.Export())
	}
	for _, op := range Ops {
		if op == OpAggregate {
			t.Error("OpAggregate is listed among the batch operations")
		}
	}
	seen := map[string]bool{}
	for _, name := range AggregateExports {
		if !strings.HasPrefix(name, "weir_agg_") || seen[name] {
			t.Errorf("aggregate export %q", name)
		}
		seen[name] = true
	}
	if msg := CheckOrder(OpAggregate, 1, -1, &Entry{}); msg == "" {
		t.Error("CheckOrder accepted an entry for aggregate, which has no output frame")
	}
}

// FuzzAggAddDecode checks that any add frame decodes or fails cleanly, and
// that a frame that decodes re-encodes to the same bytes.
func FuzzAggAddDecode(f *testing.F) {
	f.Add(encodeAdd(nil))
	f.Add(encodeAdd([]testGroup{
		{acc: []byte("acc"), recs: []testRecord{{ts: 1, key: []byte("k"), value: []byte("v"), headers: [][2]string{{"a", "b"}}}, {ts: 2}}},
		{acc: []byte{}},
	}))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, frame []byte) {
		var r AggAddReader
		n, err := r.Reset(frame)
		if err != nil {
			return
		}
		out := AppendAggCount(nil, n)
		var rec InRecord
		for {
			acc, count, ok, err := r.NextGroup()
			if err != nil {
				return
			}
			if !ok {
				break
			}
			out = AppendAggGroup(out, acc, count)
			for {
				more, err := r.Next(&rec)
				if err != nil {
					return
				}
				if !more {
					break
				}
				out = AppendRecord(out, rec.Timestamp, rec.Key, rec.Value, rec.Headers.Len())
				out = append(out, rec.Headers.Raw()...)
			}
		}
		if !bytes.Equal(out, frame) {
			t.Fatalf("re-encoded frame differs:\n got %x\nwant %x", out, frame)
		}
	})
}

// FuzzAccDecode checks that any merge or result frame decodes or fails
// cleanly, and re-encodes to the same bytes.
func FuzzAccDecode(f *testing.F) {
	f.Add(encodeAccs("a", "", "bc"), false)
	f.Add(encodePairs([2]string{"a", "b"}), true)
	f.Add([]byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, false)
	f.Fuzz(func(t *testing.T, frame []byte, pairs bool) {
		var r AccReader
		var n int
		var err error
		if pairs {
			n, err = r.ResetPairs(frame)
		} else {
			n, err = r.Reset(frame)
		}
		if err != nil {
			return
		}
		out := AppendAggCount(nil, n)
		for {
			acc, ok, err := r.Next()
			if err != nil {
				return
			}
			if !ok {
				break
			}
			out = AppendAcc(out, acc)
		}
		if !bytes.Equal(out, frame) {
			t.Fatalf("re-encoded frame differs:\n got %x\nwant %x", out, frame)
		}
	})
}

// FuzzAggAddOutputDecode checks that any add output frame decodes or fails
// cleanly, and re-encodes with AggWriter to the same bytes.
func FuzzAggAddOutputDecode(f *testing.F) {
	var w AggWriter
	w.BeginGroup()
	w.GroupError(1, "bad")
	w.EndGroup([]byte("acc"))
	w.EndGroup(nil)
	f.Add(bytes.Clone(w.Bytes()))
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, frame []byte) {
		var r AggAddOutputReader
		if _, err := r.Reset(frame); err != nil {
			return
		}
		var w AggWriter
		w.Reset()
		var g AggGroupOutput
		for {
			ok, err := r.Next(&g)
			if err != nil {
				return
			}
			if !ok {
				break
			}
			w.BeginGroup()
			prev := -1
			g.Errors.Each(func(i int, msg []byte) {
				if i <= prev {
					t.Fatalf("error index %d after %d", i, prev)
				}
				prev = i
				w.GroupError(i, string(msg))
			})
			if prev != g.Errors.Last() {
				t.Fatalf("Last() = %d, want %d", g.Errors.Last(), prev)
			}
			w.EndGroup(g.Acc)
		}
		if out := w.Bytes(); !bytes.Equal(out, frame) {
			t.Fatalf("re-encoded frame differs:\n got %x\nwant %x", out, frame)
		}
	})
}

// FuzzAggValueDecode checks that any value output frame decodes or fails
// cleanly, and re-encodes with AggWriter to the same bytes.
func FuzzAggValueDecode(f *testing.F) {
	var w AggWriter
	w.Value([]byte("v"))
	w.Value(nil)
	w.Error("e")
	f.Add(bytes.Clone(w.Bytes()))
	f.Add([]byte{1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, frame []byte) {
		var r AggValueReader
		if _, err := r.Reset(frame); err != nil {
			return
		}
		var w AggWriter
		w.Reset()
		var v AggValue
		for {
			ok, err := r.Next(&v)
			if err != nil {
				return
			}
			if !ok {
				break
			}
			if v.Status == AggError {
				w.Error(string(v.Message))
			} else {
				w.Value(v.Value)
			}
		}
		if out := w.Bytes(); !bytes.Equal(out, frame) {
			t.Fatalf("re-encoded frame differs:\n got %x\nwant %x", out, frame)
		}
	})
}

type ctxEntry struct {
	c   AggContext
	acc string
}

func encodeAccContexts(entries ...ctxEntry) []byte {
	b := AppendAggCount(nil, len(entries))
	for _, e := range entries {
		b = AppendAccContext(b, e.c, []byte(e.acc))
	}
	return b
}

// describeAccContexts decodes a result context frame into a description.
func describeAccContexts(frame []byte) (string, error) {
	var r AccContextReader
	n, err := r.Reset(frame)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d:", n)
	for {
		c, acc, ok, err := r.Next()
		if err != nil {
			return sb.String(), err
		}
		if !ok {
			return sb.String(), nil
		}
		key := "<nil>"
		if c.Key != nil {
			key = fmt.Sprintf("%q", c.Key)
		}
		fmt.Fprintf(&sb, " [%s %v %d %d %q]", key, c.Windowed, c.Start, c.End, acc)
	}
}

func TestAccContextFrame(t *testing.T) {
	frame := encodeAccContexts(
		ctxEntry{AggContext{Key: []byte("k"), Windowed: true, Start: 1000, End: 2000}, "a"},
		ctxEntry{AggContext{Key: []byte{}, Windowed: true, Start: -5, End: -5}, ""},
		ctxEntry{AggContext{}, "ccc"},
		// Bounds of a context that is not windowed are not encoded.
		ctxEntry{AggContext{Key: []byte("x"), Start: 7, End: 9}, "d"},
	)
	got, err := describeAccContexts(frame)
	want := `4: ["k" true 1000 2000 "a"] ["" true -5 -5 ""] [<nil> false 0 0 "ccc"] ["x" false 0 0 "d"]`
	if err != nil || got != want {
		t.Errorf("got %s, %v\nwant %s", got, err, want)
	}

	// The layout of ABI.md §12.5's example.
	one := encodeAccContexts(ctxEntry{AggContext{Key: []byte("k"), Windowed: true, Start: 1000, End: 2000}, "\x03\x00\x00\x00"})
	wantHex := "01000000" + "010000006b" + "01" + "e803000000000000" + "d007000000000000" + "04000000" + "03000000"
	if got := fmt.Sprintf("%x", one); got != wantHex {
		t.Errorf("frame %s\nwant  %s", got, wantHex)
	}

	u32 := func(v uint32) []byte { return AppendAggCount(nil, int(v)) }
	i64 := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
	entry := func(parts ...[]byte) []byte { return bytes.Join(append([][]byte{u32(1)}, parts...), nil) }
	for _, tc := range []struct {
		name  string
		frame []byte
	}{
		{"no count", []byte{1}},
		{"count over limit", u32(MaxAggCount + 1)},
		{"truncated key", entry(u32(3), []byte("ab"))},
		{"no flags", entry(u32(Absent))},
		{"truncated bounds", entry(u32(Absent), []byte{1}, i64(0))},
		{"unknown flags", entry(u32(Absent), []byte{2}, i64(0), i64(0), u32(0))},
		{"bounds without a window", entry(u32(Absent), []byte{0}, i64(1), i64(2), u32(0))},
		{"start after end", entry(u32(Absent), []byte{1}, i64(3), i64(2), u32(0))},
		{"no accumulator", entry(u32(Absent), []byte{1}, i64(0), i64(0))},
		{"absent accumulator", entry(u32(Absent), []byte{1}, i64(0), i64(0), u32(Absent))},
		{"truncated accumulator", entry(u32(Absent), []byte{1}, i64(0), i64(0), u32(4), []byte("ab"))},
		{"trailing", append(encodeAccContexts(ctxEntry{acc: "a"}), 0)},
		{"count larger than entries", append(u32(2), encodeAccContexts(ctxEntry{acc: "a"})[4:]...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := describeAccContexts(tc.frame)
			var fe *FrameError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FrameError", err)
			}
		})
	}
}

// FuzzAccContextDecode checks that any result context frame decodes or
// fails cleanly, and that a frame that decodes re-encodes to the same
// bytes.
func FuzzAccContextDecode(f *testing.F) {
	f.Add(encodeAccContexts())
	f.Add(encodeAccContexts(
		ctxEntry{AggContext{Key: []byte("k"), Windowed: true, Start: 1000, End: 2000}, "acc"},
		ctxEntry{AggContext{Key: []byte{}}, ""},
		ctxEntry{AggContext{Windowed: true, Start: -1 << 62, End: 1 << 62}, "z"},
	))
	f.Add([]byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, frame []byte) {
		var r AccContextReader
		n, err := r.Reset(frame)
		if err != nil {
			return
		}
		out := AppendAggCount(nil, n)
		for {
			c, acc, ok, err := r.Next()
			if err != nil {
				return
			}
			if !ok {
				break
			}
			if !c.Windowed && (c.Start != 0 || c.End != 0) || c.Start > c.End {
				t.Fatalf("decoded an inconsistent context %+v", c)
			}
			out = AppendAccContext(out, c, acc)
		}
		if !bytes.Equal(out, frame) {
			t.Fatalf("re-encoded frame differs:\n got %x\nwant %x", out, frame)
		}
	})
}
