package abi

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestPaths(t *testing.T) {
	tests := []struct {
		name, path string
		segs       []string // nil: malformed
	}{
		{"one segment", "price", []string{"price"}},
		{"nested", "user.address.city", []string{"user", "address", "city"}},
		{"escaped separator", `a\.b.c`, []string{"a.b", "c"}},
		{"escaped escape", `a\\.b`, []string{`a\`, "b"}},
		{"escape then separator", `a\\\..b`, []string{`a\.`, "b"}},
		{"unicode", "é.ü", []string{"é", "ü"}},
		{"digits are names", "a.0", []string{"a", "0"}},
		{"empty", "", nil},
		{"leading separator", ".a", nil},
		{"trailing separator", "a.", nil},
		{"empty segment", "a..b", nil},
		{"lone escape", `a\`, nil},
		{"unknown escape", `a\n`, nil},
		{"not UTF-8", "a\xff", nil},
		{"too long", strings.Repeat("a", MaxFieldPath+1), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			segs, err := SplitPath(tt.path)
			if tt.segs == nil {
				if !errors.Is(err, ErrPath) {
					t.Fatalf("SplitPath(%q) = %q, %v; want ErrPath", tt.path, segs, err)
				}
				return
			}
			if err != nil || !slices.Equal(segs, tt.segs) {
				t.Fatalf("SplitPath(%q) = %q, %v; want %q", tt.path, segs, err, tt.segs)
			}
			if got := string(AppendPath(nil, segs...)); got != tt.path {
				t.Fatalf("AppendPath(%q) = %q, want %q", segs, got, tt.path)
			}
		})
	}
}

func TestAppendPathSegmentsNoAlloc(t *testing.T) {
	path := []byte(`user.a\.b.city`)
	segs, buf := make([][]byte, 0, 8), make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if segs, buf, err = AppendPathSegments(segs[:0], buf[:0], path); err != nil || len(segs) != 3 {
			t.Fatal(segs, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}

func TestFieldDecls(t *testing.T) {
	fields := []FieldDecl{
		{Path: "price", Type: TypeInt, Flags: FieldStrict},
		{Path: "user.name", Type: TypeString, Flags: FieldRequired | FieldStrict},
		{Path: "ok", Type: TypeBool},
		{Path: "ratio", Type: TypeFloat},
		{Path: `raw\.x`, Type: TypeRaw},
	}
	got, err := ParseFieldDecls(AppendFieldDecls(nil, fields))
	if err != nil || !slices.Equal(got, fields) {
		t.Fatalf("ParseFieldDecls = %+v, %v", got, err)
	}
	if got, err := ParseFieldDecls(AppendFieldDecls(nil, nil)); err != nil || len(got) != 0 {
		t.Fatalf("no fields: %+v, %v", got, err)
	}
}

func TestFieldDeclsMalformed(t *testing.T) {
	one := func(path string, typ FieldType, flags FieldFlags) []byte {
		return AppendFieldDecls(nil, []FieldDecl{{Path: "ok", Type: TypeInt}, {Path: path, Type: typ, Flags: flags}})
	}
	valid := one("a", TypeInt, 0)
	version := slices.Clone(valid)
	version[0] = 2
	tests := []struct {
		name  string
		frame []byte
		want  string
	}{
		{"empty", nil, "truncated"},
		{"other version", version, "version 2, but this host reads version 1"},
		{"too many fields", binary.LittleEndian.AppendUint32([]byte{1, 0, 0, 0}, MaxTypedFields+1), "over the limit"},
		{"truncated path", valid[:len(valid)-1], "field 1 path"},
		{"trailing bytes", append(slices.Clone(valid), 0), "1 bytes after the last field"},
		{"unknown type", one("a", 9, 0), `declared field 1 ("a"): unknown type 9`},
		{"null type", one("a", TypeNull, 0), `declared field 1 ("a"): unknown type 0`},
		{"unknown flags", one("a", TypeInt, 4), `declared field 1 ("a"): unknown flags 0x4`},
		{"bad path", one("a..b", TypeInt, 0), `declared field 1 ("a..b"): malformed field path "a..b": empty segment at byte 2`},
		{"duplicate path", one("ok", TypeFloat, 0), `declared field 1 ("ok"): the same path as field 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFieldDecls(tt.frame)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseFieldDecls = %+v, %v; want an error containing %q", got, err, tt.want)
			}
		})
	}
}

// testColumns builds the columns of a typed batch of three records with
// one field of each type.
func testColumns() []Column {
	le64 := func(vs ...uint64) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
		return b
	}
	offs := func(vs ...uint32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, v)
		}
		return b
	}
	return []Column{
		{Type: TypeInt, Values: le64(5, 6, 1<<63)},
		{Type: TypeString, Statuses: []byte{0, 1, 0}, Values: offs(0, 1, 1, 1), Data: []byte("k")},
		{Type: TypeInt, Statuses: []byte{0, 2, 3}, Values: le64(1<<53+1, 0, 0)},
		{Type: TypeFloat, Statuses: []byte{0, 1, 0}, Values: le64(math.Float64bits(0.1), 0, math.Float64bits(-2.5))},
		{Type: TypeBool, Statuses: []byte{0, 0, 2}, Values: []byte{1, 0, 0}},
		{Type: TypeString, Statuses: []byte{0, 0, 1}, Values: offs(0, 4, 4, 4), Data: []byte("café"[:4])},
		{Type: TypeRaw, Statuses: []byte{0, 2, 0}, Values: offs(0, 7, 7, 9), Data: []byte(`{"a":1}[]`)},
	}
}

func TestTypedBatchRoundTrip(t *testing.T) {
	cols := testColumns()
	prefix := []byte("xyz") // frames are aligned from their own start
	frame, err := AppendTypedBatch(slices.Clone(prefix), 3, cols)
	if err != nil {
		t.Fatal(err)
	}
	var b TypedBatch
	if n, err := b.Reset(frame[len(prefix):]); err != nil || n != 3 || b.Fields() != len(cols)-2 {
		t.Fatalf("Reset = %d, %v", n, err)
	}
	for k, want := range cols {
		if got := b.Column(k); !sameColumn(got, want) {
			t.Errorf("column %d = %+v, want %+v", k, got, want)
		}
	}
	if b.Timestamp(2) != math.MinInt64 || string(b.Key(0)) != "k" || b.Key(1) != nil || b.Key(2) == nil {
		t.Errorf("timestamps and keys: %d %q %q %q", b.Timestamp(2), b.Key(0), b.Key(1), b.Key(2))
	}
	f := b.Field(0)
	if f.Int(0) != 1<<53+1 || f.Status(1) != ValueMissing || f.Status(2) != ValueMismatch {
		t.Errorf("int field: %d %v %v", f.Int(0), f.Status(1), f.Status(2))
	}
	if b.Field(1).Float(0) != 0.1 || !b.Field(2).Bool(0) || string(b.Field(3).Bytes(0)) != "caf\xc3" {
		t.Errorf("float, bool, string fields")
	}
	if string(b.Field(4).Bytes(0)) != `{"a":1}` || string(b.Field(4).Bytes(2)) != "[]" {
		t.Errorf("raw field: %q %q", b.Field(4).Bytes(0), b.Field(4).Bytes(2))
	}
}

func sameColumn(a, b Column) bool {
	return a.Type == b.Type && bytes.Equal(a.Statuses, b.Statuses) && (a.Statuses == nil) == (b.Statuses == nil) &&
		bytes.Equal(a.Values, b.Values) && bytes.Equal(a.Data, b.Data)
}

func TestTypedBatchEncodeRejects(t *testing.T) {
	tests := []struct {
		name   string
		n      int
		change func(cols []Column) []Column
		want   string
	}{
		{"no key column", 3, func(c []Column) []Column { return c[:1] }, "3 records and 1 columns"},
		{"timestamp statuses", 3, func(c []Column) []Column { c[0].Statuses = []byte{0, 0, 0}; return c }, "column 0: the timestamp column"},
		{"key of type raw", 3, func(c []Column) []Column { c[1].Type = TypeRaw; return c }, "column 1: the key column"},
		{"key status missing", 3, func(c []Column) []Column { c[1].Statuses[1] = 2; return c }, "column 1: record 1: status 2"},
		{"null type", 3, func(c []Column) []Column { c[2].Type = TypeNull; return c }, "column 2: type 0"},
		{"status out of range", 3, func(c []Column) []Column { c[2].Statuses[0] = 4; return c }, "column 2: record 0: status 4"},
		{"short statuses", 3, func(c []Column) []Column { c[3].Statuses = c[3].Statuses[:2]; return c }, "column 3: 2 statuses for 3 records"},
		{"short values", 3, func(c []Column) []Column { c[3].Values = c[3].Values[:8]; return c }, "column 3: 8 value bytes"},
		{"bool byte", 3, func(c []Column) []Column { c[4].Values[0] = 2; return c }, "column 4: record 0: bool byte 2"},
		{"decreasing offsets", 3, func(c []Column) []Column { c[5].Values[4] = 9; return c }, "column 5: offset 4 of record 2 after 9"},
		{"data longer than offsets", 3, func(c []Column) []Column { c[6].Data = append(c[6].Data, 'x'); return c }, "column 6: the last offset is 9"},
		{"wrong record count", 2, func(c []Column) []Column { return c }, "column 0: 24 value bytes and 0 data bytes for 2 int values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("keep")
			got, err := AppendTypedBatch(dst, tt.n, tt.change(testColumns()))
			if err == nil || !strings.Contains(err.Error(), tt.want) || string(got) != "keep" {
				t.Fatalf("AppendTypedBatch = %q, %v; want dst unchanged and an error containing %q", got, err, tt.want)
			}
		})
	}
}

func TestTypedBatchMalformed(t *testing.T) {
	valid, err := AppendTypedBatch(nil, 3, testColumns())
	if err != nil {
		t.Fatal(err)
	}
	put := func(off int, v uint32) []byte {
		b := slices.Clone(valid)
		binary.LittleEndian.PutUint32(b[off:], v)
		return b
	}
	col := func(k, field int) int { return TypedHeaderSize + TypedColumnSize*k + 4*field }
	values6 := int(binary.LittleEndian.Uint32(valid[col(6, 2):])) // column 6's offsets
	tests := []struct {
		name   string
		frame  []byte
		want   string
		record bool // a record's fault, which ResetShape does not look for
	}{
		{"empty", nil, "truncated", false},
		{"too many records", put(0, MaxBatchRecords+1), "record count", false},
		{"too many fields", put(4, MaxTypedFields+1), "field count", false},
		{"short column table", valid[:col(3, 0)], "column table: truncated", false},
		{"truncated data", valid[:len(valid)-1], "column 6: data", false},
		{"type beyond a byte", put(col(2, 0), 0x101), "column 2: type 257", false},
		{"unaligned region", put(col(2, 2), 4), "column 2: values: offset 4 is not a multiple of 8", false},
		{"region in the header", put(col(2, 2), 0), "column 2: values: 24 bytes at 0", false},
		{"region past the end", put(col(2, 2), uint32(len(valid)+15)&^7), "outside the frame", false},
		{"data offset on a fixed column", put(col(2, 3), 8), "a data offset for a column of type int", false},
		{"statuses on timestamps", put(col(0, 1), 64), "column 0: the timestamp column", false},
		{"no statuses on a field", put(col(2, 1), 0), "column 2: no statuses", false},
		{"first offset not zero", put(col(6, 2), binary.LittleEndian.Uint32(valid[col(6, 2):])+8), "column 6", false},
		{"first offset 8", put(values6, 8), "column 6: offset 8 of record 0", true},
		{"an offset past the next", put(values6+4, 0xffff), "column 6: offset", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b TypedBatch
			n, err := b.Reset(tt.frame)
			var fe *FrameError
			if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Reset = %d, %v; want a FrameError containing %q", n, err, tt.want)
			}
			n, err = b.ResetShape(tt.frame)
			switch {
			case tt.record && err != nil:
				t.Fatalf("ResetShape = %d, %v; want the frame's shape accepted", n, err)
			case !tt.record && (err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("ResetShape = %d, %v; want a FrameError containing %q", n, err, tt.want)
			}
		})
	}
}

func TestTypedAdd(t *testing.T) {
	groups := []TypedGroup{{Acc: []byte("ab"), Records: 2}, {Acc: []byte{}, Records: 0}, {Acc: []byte("c"), Records: 1}}
	frame, err := AppendTypedAdd(nil, groups, testColumns())
	if err != nil {
		t.Fatal(err)
	}
	var r TypedAddReader
	if n, err := r.Reset(frame); err != nil || n != 3 || r.Batch.Len() != 3 {
		t.Fatalf("Reset = %d, %v", n, err)
	}
	first := 0
	for g, want := range groups {
		acc, f, n, ok := r.NextGroup()
		if !ok || string(acc) != string(want.Acc) || f != first || n != want.Records {
			t.Fatalf("group %d = %q, %d, %d, %v", g, acc, f, n, ok)
		}
		first += n
	}
	if _, _, _, ok := r.NextGroup(); ok {
		t.Fatal("a group after the last")
	}
	if string(r.Batch.Field(4).Bytes(2)) != "[]" {
		t.Fatal("batch not decoded")
	}
	if got, err := AppendTypedAdd([]byte("x"), groups[:1], testColumns()); err == nil || string(got) != "x" {
		t.Fatalf("groups of 2 records over a batch of 3: %q, %v", got, err)
	}
	bad := slices.Clone(frame)
	bad[4+4+2+4+4+0+4+4+1+4] = 1 // the padding after the group table
	if _, err := r.Reset(bad); err == nil || !strings.Contains(err.Error(), "padding") {
		t.Fatalf("non-zero padding: %v", err)
	}
	more := slices.Clone(frame)
	more[4+4+2] = 3 // the first group's record count
	if _, err := r.Reset(more); err == nil || !strings.Contains(err.Error(), "the groups have 4 records, the batch 3") {
		t.Fatalf("groups of 4 records over a batch of 3: %v", err)
	}
}

func TestTypedOutputRoundTrip(t *testing.T) {
	var w TypedOutputWriter
	w.Reset()
	w.Keep(0)
	w.BeginPatch(1, 0, nil, 0)
	w.SetInt("price", -7)
	w.SetFloat("ratio", 0.1)
	w.SetBool("a.ok", true)
	w.SetString(`a\.b`, "é")
	w.SetStringBytes("s", []byte("ü\x00"))
	w.SetRaw("", []byte(`{"x":[1]}`))
	w.SetNull("gone")
	w.Remove("old.field")
	w.BeginPatch(1, PatchFlagNew|PatchFlagKey|PatchFlagTimestamp, nil, -3)
	w.BeginPatch(2, PatchFlagKey, []byte("k2"), 0)
	w.Error(3, "bad record")
	frame := w.Bytes()

	var r TypedOutputReader
	if n, err := r.Reset(frame); err != nil || n != 5 {
		t.Fatalf("Reset = %d, %v", n, err)
	}
	var got []string
	var e TypedEntry
	if err := drainTyped(&r, &e, func() { got = append(got, describeTyped(&e)) }); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"keep 0",
		"patch 1 flags 0 key <nil> ts 0: set price int -7 | set ratio float 0.1 | set a.ok bool true | set a\\.b string é | set s string ü\x00 | set  raw {\"x\":[1]} | set gone null | remove old.field",
		"patch 1 flags 7 key <nil> ts -3:",
		"patch 2 flags 2 key k2 ts 0:",
		"error 3 bad record",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// drainTyped decodes the rest of r's frame into e, calling fn after each
// entry.
func drainTyped(r *TypedOutputReader, e *TypedEntry, fn func()) error {
	for {
		ok, err := r.Next(e)
		if err != nil || !ok {
			return err
		}
		fn()
	}
}

func describeTyped(e *TypedEntry) string {
	name := map[Kind]string{KindKeep: "keep", KindError: "error", KindPatch: "patch"}[e.Kind]
	s := name + " " + strconv.Itoa(e.Index)
	switch e.Kind {
	case KindError:
		s += " " + string(e.Message)
	case KindPatch:
		key := "<nil>"
		if e.Key != nil {
			key = string(e.Key)
		}
		s += fmt.Sprintf(" flags %d key %s ts %d:", e.Flags, key, e.Time)
		for i, op := range e.Ops.All() {
			if i > 0 {
				s += " |"
			}
			s += " " + describeOp(op)
		}
	}
	return s
}

func describeOp(op PatchOp) string {
	s := op.Kind.String() + " " + string(op.Path)
	if op.Kind == PatchOpRemove {
		return s
	}
	s += " " + op.Type.String()
	switch op.Type {
	case TypeInt:
		s += " " + strconv.FormatInt(op.Int, 10)
	case TypeFloat:
		s += " " + strconv.FormatFloat(op.Float, 'g', -1, 64)
	case TypeBool:
		s += " " + strconv.FormatBool(op.Bool)
	case TypeString, TypeRaw:
		s += " " + string(op.Bytes)
	}
	return s
}

func TestTypedOutputMalformed(t *testing.T) {
	entry := func(body ...byte) []byte {
		return append([]byte{1, 0, 0, 0, byte(KindPatch), 0, 0, 0, 0}, body...)
	}
	op := func(kind PatchOpKind, path string, value ...byte) []byte {
		b := append([]byte{0, 1, 0, 0, 0, byte(kind)}, byte(len(path)), 0, 0, 0)
		return entry(append(append(b, path...), value...)...)
	}
	tests := []struct {
		name  string
		frame []byte
		want  string
	}{
		{"kind record", []byte{1, 0, 0, 0, byte(KindRecord), 0, 0, 0, 0, 0, 0, 0, 0, 0}, "unknown typed entry kind 1"},
		{"unknown flags", entry(8, 0, 0, 0, 0), "unknown patch flags 0x8"},
		{"truncated timestamp", entry(byte(PatchFlagTimestamp), 1, 2), "timestamp"},
		{"too many ops", entry(0, 1, 0, 1, 0), "op count 65537 over the limit"},
		{"unknown op", op(3, "a"), "unknown patch op 3"},
		{"remove the whole value", op(PatchOpRemove, ""), "malformed field path"},
		{"bad path", op(PatchOpSet, "a.", byte(TypeNull)), "malformed field path"},
		{"unknown value type", op(PatchOpSet, "a", 6), "unknown value type 6"},
		{"bool byte", op(PatchOpSet, "a", byte(TypeBool), 2), "bool value is not 0 or 1"},
		{"truncated int", op(PatchOpSet, "a", byte(TypeInt), 1, 2, 3), "int value: truncated"},
		{"truncated string", op(PatchOpSet, "a", byte(TypeString), 5, 0, 0, 0, 'x'), "string value of 5 bytes"},
		{"index out of range", []byte{1, 0, 0, 0, 0, 0, 0, 0, 0xff}, "input index"},
		{"trailing bytes", append(entry(0, 0, 0, 0, 0), 0), "1 bytes after the last entry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r TypedOutputReader
			if _, err := r.Reset(tt.frame); err != nil {
				t.Fatal(err)
			}
			var e TypedEntry
			ok, err := r.Next(&e)
			if err == nil && ok {
				ok, err = r.Next(&e)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Next = %v, %v; want an error containing %q", ok, err, tt.want)
			}
		})
	}
}

func TestCheckTypedOrder(t *testing.T) {
	tests := []struct {
		name string
		op   Op
		prev int
		e    TypedEntry
		bad  bool
	}{
		{"map patch in order", OpMap, 0, TypedEntry{Kind: KindPatch, Index: 1}, false},
		{"map skips an input", OpMap, 0, TypedEntry{Kind: KindPatch, Index: 2}, true},
		{"flat_map patches one input twice", OpFlatMap, 1, TypedEntry{Kind: KindPatch, Index: 1}, false},
		{"filter keeps", OpFilter, 0, TypedEntry{Kind: KindKeep, Index: 2}, false},
		{"filter may not patch", OpFilter, 0, TypedEntry{Kind: KindPatch, Index: 2}, true},
		{"index beyond the batch", OpFlatMap, 0, TypedEntry{Kind: KindKeep, Index: 3}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if msg := CheckTypedOrder(tt.op, 3, tt.prev, &tt.e); (msg != "") != tt.bad {
				t.Fatalf("CheckTypedOrder = %q, want a violation: %v", msg, tt.bad)
			}
		})
	}
}

func TestTypedNames(t *testing.T) {
	for _, op := range append(Ops[:], OpAggregate) {
		if got := op.TypedExport(); got != "weir_typed_"+strings.TrimPrefix(op.Export(), "weir_") {
			t.Errorf("%v.TypedExport() = %q", op, got)
		}
	}
	if Op(9).TypedExport() != "" {
		t.Error("Op(9) has a typed export")
	}
	for _, n := range []string{ExportFields, ExportTypedMap, ExportTypedFlatMap, ExportTypedFilter, ExportTypedAggAdd} {
		if _, ok := ParseVersionExport(n); ok || !strings.HasPrefix(n, "weir_") {
			t.Errorf("export %q", n)
		}
	}
}

// workedExample holds the frames of ABI.md §14.6.
var workedExample = struct{ decl, batch, output string }{
	decl: "01000000 01000000 01 02 05000000 7072696365",
	batch: "01000000 01000000" +
		" 01000000 00000000 38000000 00000000" +
		" 04000000 40000000 48000000 50000000" +
		" 01000000 58000000 60000000 00000000" +
		" 0500000000000000 0000000000000000 0000000001000000 6b00000000000000" +
		" 0000000000000000 0c00000000000000",
	output: "01000000 03 00000000 00 01000000 01 05000000 7072696365 01 1800000000000000",
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTypedWorkedExample checks the bytes of ABI.md §14.6.
func TestTypedWorkedExample(t *testing.T) {
	decl := AppendFieldDecls(nil, []FieldDecl{{Path: "price", Type: TypeInt, Flags: FieldStrict}})
	if want := unhex(t, workedExample.decl); !bytes.Equal(decl, want) {
		t.Errorf("declaration\n got %x\nwant %x", decl, want)
	}
	batch, err := AppendTypedBatch(nil, 1, []Column{
		{Type: TypeInt, Values: binary.LittleEndian.AppendUint64(nil, 5)},
		{Type: TypeString, Statuses: []byte{0}, Values: []byte{0, 0, 0, 0, 1, 0, 0, 0}, Data: []byte("k")},
		{Type: TypeInt, Statuses: []byte{0}, Values: binary.LittleEndian.AppendUint64(nil, 12)},
	})
	if want := unhex(t, workedExample.batch); err != nil || !bytes.Equal(batch, want) {
		t.Errorf("typed batch (%v)\n got %x\nwant %x", err, batch, want)
	}
	var b TypedBatch
	if _, err := b.Reset(batch); err != nil || b.Field(0).Int(0) != 12 || binary.LittleEndian.Uint32(batch[8+16*2+8:]) != 0x60 {
		t.Errorf("reading the price: %v", err)
	}
	var w TypedOutputWriter
	w.Reset()
	w.BeginPatch(0, 0, nil, 0)
	w.SetInt("price", 24)
	if want := unhex(t, workedExample.output); !bytes.Equal(w.Bytes(), want) {
		t.Errorf("typed output\n got %x\nwant %x", w.Bytes(), want)
	}
}

func TestTypedOutputReaderNoAllocs(t *testing.T) {
	frame := unhex(t, workedExample.output)
	var r TypedOutputReader
	var e TypedEntry
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(frame)
		err := drainTyped(&r, &e, func() {
			for range e.Ops.All() {
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}

// TestTypedOutputRewind takes back a patch begun after a mark: the frame
// decodes as if only the entries before the mark, and the error entry
// after the rewind, had been written.
func TestTypedOutputRewind(t *testing.T) {
	var w TypedOutputWriter
	w.Reset()
	w.Keep(0)
	m := w.Mark()
	w.BeginPatch(1, PatchFlagTimestamp, nil, 7)
	w.SetInt("price", 2)
	w.Rewind(m)
	w.Error(1, "price overflows")
	var r TypedOutputReader
	n, err := r.Reset(w.Bytes())
	if err != nil || n != 2 {
		t.Fatalf("Reset: %d entries, %v; want 2", n, err)
	}
	var e TypedEntry
	for i, want := range []Kind{KindKeep, KindError} {
		if ok, err := r.Next(&e); !ok || err != nil || e.Kind != want || e.Index != i {
			t.Fatalf("entry %d: %+v, %v, %v; want kind %d", i, e, ok, err, want)
		}
	}
	if string(e.Message) != "price overflows" {
		t.Errorf("message %q", e.Message)
	}
	if ok, err := r.Next(&e); ok || err != nil {
		t.Errorf("a third entry: %v, %v", ok, err)
	}
}

// TestPatchSet: PatchSet writes, in one step, the bytes BeginPatch and a
// set operation write, and leaves the patch open for more operations.
func TestPatchSet(t *testing.T) {
	put64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	tests := []struct {
		name  string
		i     int
		path  string
		typ   FieldType
		value []byte
		slow  func(w *TypedOutputWriter, path string)
		more  bool // a second operation follows
	}{
		{"int", 0, "n", TypeInt, put64(1 << 60), func(w *TypedOutputWriter, p string) { w.SetInt(p, 1<<60) }, false},
		{"float", 70000, "a.b", TypeFloat, put64(math.Float64bits(-0.1)), func(w *TypedOutputWriter, p string) { w.SetFloat(p, -0.1) }, false},
		{"string", 3, "name", TypeString, append(binary.LittleEndian.AppendUint32(nil, 4), "h\u00e9\x00"...),
			func(w *TypedOutputWriter, p string) { w.SetString(p, "h\u00e9\x00") }, false},
		{"null, then another operation", 1 << 20, "", TypeNull, nil, func(w *TypedOutputWriter, p string) { w.SetNull(p) }, true},
		{"a long path", 9, strings.Repeat("p.", 300) + "q", TypeInt, put64(7), func(w *TypedOutputWriter, p string) { w.SetInt(p, 7) }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var fast, slow TypedOutputWriter
			for _, w := range []*TypedOutputWriter{&fast, &slow} {
				w.Reset()
				w.Keep(0)
			}
			copy(fast.PatchSet(tc.i, tc.path, tc.typ, len(tc.value)), tc.value)
			slow.BeginPatch(tc.i, 0, nil, 0)
			tc.slow(&slow, tc.path)
			if tc.more {
				fast.Remove("x")
				slow.Remove("x")
			}
			fast.Keep(tc.i + 1)
			slow.Keep(tc.i + 1)
			if got, want := fast.Bytes(), slow.Bytes(); !bytes.Equal(got, want) {
				t.Fatalf("PatchSet wrote\n%x\nwant\n%x", got, want)
			}
		})
	}
}
