package astest

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero/api"

	"github.com/weir-stream/weir/abi"
)

// typedModule is typed.ts, built and initialised.
type typedModule struct {
	t       *testing.T
	mod     api.Module
	aborted *string
}

func newTypedModule(t *testing.T) *typedModule {
	t.Helper()
	if testing.Short() {
		t.Skip("builds with asc: skipped with -short")
	}
	mod, aborted := instantiate(t, build(t, "asconfig.typed.json"))
	m := &typedModule{t, mod, aborted}
	if res := m.call(abi.ExportInit, 0, 0); res != 0 {
		t.Fatalf("%s = %#x, want success", abi.ExportInit, res)
	}
	return m
}

func (m *typedModule) call(name string, args ...uint64) uint64 {
	m.t.Helper()
	return call(m.t, m.mod, m.aborted, name, args...)
}

// run writes frame where weir_alloc says, calls export on it and returns
// the frame it answers.
func (m *typedModule) run(export string, frame []byte) []byte {
	m.t.Helper()
	ptr := uint32(m.call(abi.ExportAlloc, uint64(len(frame))))
	if ptr == 0 || !m.mod.Memory().Write(ptr, frame) {
		m.t.Fatalf("%s(%d) gave no room", abi.ExportAlloc, len(frame))
	}
	out, n := abi.Unpack(m.call(export, uint64(ptr), uint64(len(frame))))
	b, ok := m.mod.Memory().Read(out, n)
	if !ok {
		m.t.Fatalf("%s: output outside memory", export)
	}
	return slices.Clone(b)
}

// The fields typed.ts declares, in order.
var typedDecls = []abi.FieldDecl{
	{Path: "n", Type: abi.TypeInt, Flags: abi.FieldStrict},
	{Path: "x", Type: abi.TypeFloat},
	{Path: "b", Type: abi.TypeBool, Flags: abi.FieldRequired},
	{Path: "s", Type: abi.TypeString},
	{Path: `a\.b.c`, Type: abi.TypeRaw, Flags: abi.FieldRequired | abi.FieldStrict},
}

// cell is one field's value in a test row: present with v, or status st.
type cell struct {
	st abi.ValueStatus
	v  any // int64, float64, bool, string (string and raw)
}

func val(v any) cell { return cell{v: v} }

var (
	missing  = cell{st: abi.ValueMissing}
	null     = cell{st: abi.ValueNull}
	mismatch = cell{st: abi.ValueMismatch}
)

// row is a record of a test batch: a timestamp, a key (nil for none) and
// the declared fields' cells.
type row struct {
	ts    int64
	key   *string
	cells [5]cell
}

func key(s string) *string { return &s }

// typedBatch is the typed batch frame of rows.
func typedBatch(t *testing.T, rows []row) []byte {
	t.Helper()
	cols := make([]abi.Column, 2+len(typedDecls))
	cols[0] = abi.Column{Type: abi.TypeInt}
	cols[1] = abi.Column{Type: abi.TypeString, Statuses: []byte{}, Values: make([]byte, 4)}
	for i, d := range typedDecls {
		cols[2+i] = abi.Column{Type: d.Type, Statuses: []byte{}}
		if d.Type.Width() == 0 {
			cols[2+i].Values = make([]byte, 4)
		}
	}
	for _, r := range rows {
		cols[0].Values = binary.LittleEndian.AppendUint64(cols[0].Values, uint64(r.ts))
		k := cell{st: abi.ValueNull}
		if r.key != nil {
			k = val(*r.key)
		}
		addCell(&cols[1], k)
		for i, c := range r.cells {
			addCell(&cols[2+i], c)
		}
	}
	frame, err := abi.AppendTypedBatch(nil, len(rows), cols)
	if err != nil {
		t.Fatal(err)
	}
	return frame
}

// addCell appends c to column col.
func addCell(col *abi.Column, c cell) {
	col.Statuses = append(col.Statuses, byte(c.st))
	v := c.v
	if c.st != abi.ValuePresent {
		v = nil
	}
	switch col.Type {
	case abi.TypeInt:
		n, _ := v.(int64)
		col.Values = binary.LittleEndian.AppendUint64(col.Values, uint64(n))
	case abi.TypeFloat:
		f, _ := v.(float64)
		col.Values = binary.LittleEndian.AppendUint64(col.Values, math.Float64bits(f))
	case abi.TypeBool:
		b, _ := v.(bool)
		col.Values = append(col.Values, map[bool]byte{false: 0, true: 1}[b])
	default:
		s, _ := v.(string)
		col.Data = append(col.Data, s...)
		col.Values = binary.LittleEndian.AppendUint32(col.Values, uint32(len(col.Data)))
	}
}

// render renders a typed output frame, an entry a line, checking it and
// the order of its entries for op over n records.
func render(t *testing.T, op abi.Op, n int, frame []byte) []string {
	t.Helper()
	var r abi.TypedOutputReader
	if _, err := r.Reset(frame); err != nil {
		t.Fatal(err)
	}
	var lines []string
	var e abi.TypedEntry
	prev := -1
	for {
		ok, err := r.Next(&e)
		if err != nil {
			t.Fatalf("typed output frame: %v", err)
		}
		if !ok {
			return lines
		}
		if msg := abi.CheckTypedOrder(op, n, prev, &e); msg != "" {
			t.Fatalf("entry %d: %s", len(lines), msg)
		}
		prev = e.Index
		lines = append(lines, renderEntry(&e))
	}
}

func renderEntry(e *abi.TypedEntry) string {
	switch e.Kind {
	case abi.KindKeep:
		return fmt.Sprintf("%d keep", e.Index)
	case abi.KindError:
		return fmt.Sprintf("%d error %s", e.Index, e.Message)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d patch", e.Index)
	if e.Flags&abi.PatchFlagNew != 0 {
		b.WriteString(" new")
	}
	if e.Flags&abi.PatchFlagKey != 0 {
		if e.Key == nil {
			b.WriteString(" key=none")
		} else {
			fmt.Fprintf(&b, " key=%q", e.Key)
		}
	}
	if e.Flags&abi.PatchFlagTimestamp != 0 {
		fmt.Fprintf(&b, " ts=%d", e.Time)
	}
	for _, op := range e.Ops.All() {
		b.WriteString(" " + renderOp(op))
	}
	return b.String()
}

func renderOp(op abi.PatchOp) string {
	if op.Kind == abi.PatchOpRemove {
		return fmt.Sprintf("-%s", op.Path)
	}
	var v string
	switch op.Type {
	case abi.TypeNull:
		v = "null"
	case abi.TypeInt:
		v = fmt.Sprint(op.Int)
	case abi.TypeFloat:
		v = fmt.Sprintf("%gf", op.Float)
	case abi.TypeBool:
		v = fmt.Sprint(op.Bool)
	case abi.TypeString:
		v = fmt.Sprintf("%q", op.Bytes)
	case abi.TypeRaw:
		v = "`" + string(op.Bytes) + "`"
	}
	return fmt.Sprintf("%s=%s", op.Path, v)
}

func check(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\ngot  %s\nwant %s", what, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

// The rows of the batch tests; field s (cells[3]) says what typed.ts does.
var typedRows = []row{
	{ts: 5, key: key("k"), cells: [5]cell{val(int64(12)), val(1.5), val(true), val("h\u00e9llo"), val(`{"z":[1]}`)}},
	{ts: -1, cells: [5]cell{missing, null, val(false), mismatch, val("7")}},
	{ts: 7, key: key(""), cells: [5]cell{val(int64(-3)), mismatch, val(true), val("fail"), val("null")}},
	{ts: 8, key: key("q"), cells: [5]cell{val(int64(2)), missing, val(false), val("late"), val("[]")}},
	{ts: 9, cells: [5]cell{val(int64(1)), missing, val(true), val("keep"), val("{}")}},
	{ts: 10, key: key("k"), cells: [5]cell{val(int64(0)), missing, val(false), val("rekey"), val("1")}},
	{ts: 11, key: key("z"), cells: [5]cell{val(int64(1)), missing, val(false), val("stale"), val("1")}},
}

func TestTypedDeclaration(t *testing.T) {
	m := newTypedModule(t)
	if got, want := uint32(m.call(abi.ExportOps)), uint32(abi.OpSetOf(abi.OpMap, abi.OpFlatMap, abi.OpFilter, abi.OpAggregate)); got != want {
		t.Errorf("%s = %#x, want %#x", abi.ExportOps, got, want)
	}
	ptr, n := abi.Unpack(m.call(abi.ExportFields))
	frame, ok := m.mod.Memory().Read(ptr, n)
	if !ok || n == 0 {
		t.Fatalf("%s = %d bytes at %d", abi.ExportFields, n, ptr)
	}
	got, err := abi.ParseFieldDecls(frame)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, typedDecls) {
		t.Errorf("declared %v, want %v", got, typedDecls)
	}
}

func TestTypedMap(t *testing.T) {
	m := newTypedModule(t)
	out := m.run(abi.ExportTypedMap, typedBatch(t, typedRows))
	check(t, "typed map", render(t, abi.OpMap, len(typedRows), out), []string{
		`0 patch ts=5 key="k" status="present,present,present,present,present" n=12 x=1.5f b=true s="héllo" r=` + "`" + `{"z":[1]}` + "` arr=`[1,2]` -gone",
		`1 patch ts=-1 key=null status="missing,null,present,mismatch,present" b=false r=` + "`7` arr=`[1,2]` -gone",
		`2 error failed at 2`,
		`3 error weir: Patch.setKeyString called after the patch's operations`,
		`4 keep`,
		`5 patch new key=none ts=11`,
		`6 patch ts=11 key="z" status="present,missing,present,present,present" n=1 b=false s="stale" r=` + "`1` arr=`[1,2]` -gone",
	})
}

func TestTypedFlatMap(t *testing.T) {
	m := newTypedModule(t)
	out := m.run(abi.ExportTypedFlatMap, typedBatch(t, typedRows))
	check(t, "typed flat_map", render(t, abi.OpFlatMap, len(typedRows), out), []string{
		"0 keep", "0 patch i=0", "0 patch i=1", "0 patch i=2", "0 patch i=3", "0 patch i=4", "0 patch i=5",
		"0 patch i=6", "0 patch i=7", "0 patch i=8", "0 patch i=9", "0 patch i=10", "0 patch i=11", "0 keep",
		"1 keep", "1 keep",
		`2 error no `,
		"3 keep", "3 patch i=0", "3 patch i=1", "3 keep",
		"4 keep", "4 patch i=0", "4 keep",
		"5 keep", "5 keep",
		"6 error weir: Patch operation after its record was emitted",
	})
}

func TestTypedFilter(t *testing.T) {
	m := newTypedModule(t)
	out := m.run(abi.ExportTypedFilter, typedBatch(t, typedRows))
	check(t, "typed filter", render(t, abi.OpFilter, len(typedRows), out), []string{
		"0 keep", "2 error rejected 2", "4 keep",
	})
}

// TestAggResultCtx: weir_agg_result_ctx gives typed.ts's Sum each
// group's context (ABI §12.5); weir_agg_result an empty one.
func TestAggResultCtx(t *testing.T) {
	m := newTypedModule(t)
	acc := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
	values := func(out []byte) []string {
		var r abi.AggValueReader
		if _, err := r.Reset(out); err != nil {
			t.Fatal(err)
		}
		var got []string
		var v abi.AggValue
		for {
			ok, err := r.Next(&v)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				return got
			}
			if v.Status == abi.AggError {
				got = append(got, "error "+string(v.Message))
			} else {
				got = append(got, string(v.Value))
			}
		}
	}
	frame := abi.AppendAggCount(nil, 4)
	frame = abi.AppendAccContext(frame, abi.AggContext{Key: []byte("k\u00e9"), Windowed: true, Start: 1000, End: 2000}, acc(3))
	frame = abi.AppendAccContext(frame, abi.AggContext{Key: []byte{}, Windowed: true, Start: -5, End: -5}, acc(0))
	frame = abi.AppendAccContext(frame, abi.AggContext{Key: []byte("q")}, acc(-7))
	frame = abi.AppendAccContext(frame, abi.AggContext{}, acc(9))
	check(t, "weir_agg_result_ctx", values(m.run(abi.ExportAggResultCtx, frame)),
		[]string{"k\u00e9 1000-2000 3", " -5--5 0", "q - -7", "9"})
	plain := abi.AppendAcc(abi.AppendAggCount(nil, 1), acc(4))
	check(t, "weir_agg_result", values(m.run(abi.ExportAggResult, plain)), []string{"4"})
}

func TestTypedAggAdd(t *testing.T) {
	m := newTypedModule(t)
	acc := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
	// Group 0: rows 0 and 1 (n 12, n missing); group 1: rows 2 to 4 (n -3, 2, 1).
	frame := typedBatch(t, typedRows[:5])
	head := abi.AppendAggCount(nil, 2)
	head = abi.AppendAggGroup(head, acc(100), 2)
	head = abi.AppendAggGroup(head, acc(10), 3)
	for len(head)%abi.TypedAlign != 0 {
		head = append(head, 0)
	}
	out := m.run(abi.ExportTypedAggAdd, append(head, frame...))
	var r abi.AggAddOutputReader
	if n, err := r.Reset(out); err != nil || n != 2 {
		t.Fatalf("add output frame: %d groups, %v", n, err)
	}
	var got []string
	var g abi.AggGroupOutput
	for {
		ok, err := r.Next(&g)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		g.Errors.Each(func(i int, msg []byte) { got = append(got, fmt.Sprintf("error %d %s", i, msg)) })
		got = append(got, fmt.Sprintf("acc %d", int64(binary.LittleEndian.Uint64(g.Acc))))
	}
	check(t, "typed agg add", got, []string{"error 1 n is missing in 1", "acc 112", "acc 10"})
}
