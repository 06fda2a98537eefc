package weir

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/weir-stream/weir/abi"
)

// cell is one value of a typed test batch column: nil is missing, a
// Status is that status, otherwise the value.
type cell any

// typedFrame encodes a typed batch of len(keys) records: timestamps 100,
// 101, ..., the keys (nil: none), and one column per field of types, from
// cells[record][field].
func typedFrame(t *testing.T, keys [][]byte, types []abi.FieldType, cells [][]cell) []byte {
	t.Helper()
	b, err := abi.AppendTypedBatch(nil, len(keys), typedCols(keys, types, cells))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// typedCols returns the columns of a typed batch, as typedFrame encodes
// them: timestamps 100, 101, ..., the keys (nil: none), and one column per
// field of types, from cells[record][field].
func typedCols(keys [][]byte, types []abi.FieldType, cells [][]cell) []abi.Column {
	ts := abi.Column{Type: abi.TypeInt}
	key := abi.Column{Type: abi.TypeString, Values: make([]byte, 4)}
	for i, k := range keys {
		ts.Values = binary.LittleEndian.AppendUint64(ts.Values, uint64(100+i))
		st := abi.ValuePresent
		if k == nil {
			st = abi.ValueNull
		}
		key.Statuses = append(key.Statuses, byte(st))
		key.Data = append(key.Data, k...)
		key.Values = binary.LittleEndian.AppendUint32(key.Values, uint32(len(key.Data)))
	}
	cols := []abi.Column{ts, key}
	for f, typ := range types {
		c := abi.Column{Type: typ}
		if typ.Width() == 0 {
			c.Values = make([]byte, 4)
		}
		for r := range keys {
			c = appendCell(c, cells[r][f])
		}
		cols = append(cols, c)
	}
	return cols
}

// appendCell appends one record's value v to column c.
func appendCell(c abi.Column, v cell) abi.Column {
	st, ok := v.(abi.ValueStatus)
	if v == nil {
		st, ok = abi.ValueMissing, true
	}
	if !ok {
		st = abi.ValuePresent
	}
	c.Statuses = append(c.Statuses, byte(st))
	switch c.Type {
	case abi.TypeInt:
		x, _ := v.(int64)
		c.Values = binary.LittleEndian.AppendUint64(c.Values, uint64(x))
	case abi.TypeFloat:
		x, _ := v.(float64)
		c.Values = binary.LittleEndian.AppendUint64(c.Values, math.Float64bits(x))
	case abi.TypeBool:
		x, _ := v.(bool)
		c.Values = append(c.Values, map[bool]byte{false: 0, true: 1}[x])
	default:
		x, _ := v.(string)
		c.Data = append(c.Data, x...)
		c.Values = binary.LittleEndian.AppendUint32(c.Values, uint32(len(c.Data)))
	}
	return c
}

// describeTyped renders a typed output frame's entries as text.
func describeTyped(t *testing.T, op abi.Op, n int, out []byte) []string {
	t.Helper()
	var r abi.TypedOutputReader
	if _, err := r.Reset(out); err != nil {
		t.Fatal(err)
	}
	var got []string
	prev := -1
	for {
		var e abi.TypedEntry
		more, err := r.Next(&e)
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			return got
		}
		if why := abi.CheckTypedOrder(op, n, prev, &e); why != "" {
			t.Fatalf("entry %d breaks the order: %s", len(got), why)
		}
		prev = e.Index
		got = append(got, describeEntry(&e))
	}
}

func describeEntry(e *abi.TypedEntry) string {
	switch e.Kind {
	case abi.KindKeep:
		return fmt.Sprintf("%d keep", e.Index)
	case abi.KindError:
		return fmt.Sprintf("%d error %s", e.Index, e.Message)
	}
	s := fmt.Sprintf("%d patch", e.Index)
	if e.Flags&abi.PatchFlagNew != 0 {
		s += " new"
	}
	if e.Flags&abi.PatchFlagKey != 0 {
		s += fmt.Sprintf(" key=%q", e.Key)
	}
	if e.Flags&abi.PatchFlagTimestamp != 0 {
		s += fmt.Sprintf(" ts=%d", e.Time)
	}
	for _, op := range e.Ops.All() {
		s += fmt.Sprintf(" %s %q", op.Kind, op.Path)
		if op.Kind == abi.PatchOpSet {
			s += "=" + opValue(op)
		}
	}
	return s
}

// opValue renders a set operation's typed value.
func opValue(op abi.PatchOp) string {
	switch op.Type {
	case abi.TypeInt:
		return fmt.Sprintf("int:%d", op.Int)
	case abi.TypeFloat:
		return fmt.Sprintf("float:%v", op.Float)
	case abi.TypeBool:
		return fmt.Sprintf("bool:%v", op.Bool)
	case abi.TypeNull:
		return "null"
	}
	return fmt.Sprintf("%s:%s", op.Type, op.Bytes)
}

// setTyped registers typed functions for one test, restoring the previous
// registrations after it.
func setTyped(t *testing.T, set func()) {
	saved, savedRaw := typed, handlers
	typed = typedRegs{}
	handlers.mapFn, handlers.mapTo, handlers.flatMap, handlers.filter = nil, nil, nil, nil
	t.Cleanup(func() { typed, handlers = saved, savedRaw })
	set()
}

// double is the conformance suite's typed map: price doubled, or an error.
func double(r *Row, p *Patch) error {
	v, ok := r.Int(0)
	switch {
	case !ok:
		return fmt.Errorf("price is %s", r.Status(0))
	case v > math.MaxInt64/2 || v < math.MinInt64/2:
		return errors.New("price overflows")
	}
	p.SetInt("price", 2*v)
	return nil
}

func TestTypedProcessor(t *testing.T) {
	ints := []abi.FieldType{abi.TypeInt}
	k := func(ks ...string) [][]byte {
		var out [][]byte
		for _, s := range ks {
			if s == "-" {
				out = append(out, nil)
			} else {
				out = append(out, []byte(s))
			}
		}
		return out
	}
	tests := []struct {
		name     string
		op       abi.Op
		register func()
		keys     [][]byte
		types    []abi.FieldType
		cells    [][]cell
		want     []string
	}{{
		name: "map doubles, rejects missing, null and overflow", op: abi.OpMap,
		register: func() { TypedMap(double) },
		keys:     k("a", "b", "c", "d", "e"), types: ints,
		cells: [][]cell{{int64(12)}, {nil}, {abi.ValueNull}, {int64(math.MaxInt64)}, {int64(-9007199254740993)}},
		want: []string{`0 patch set "price"=int:24`, "1 error price is missing", "2 error price is null",
			"3 error price overflows", `4 patch set "price"=int:-18014398509481986`},
	}, {
		name: "map that sets nothing keeps; key and timestamp alone patch", op: abi.OpMap,
		register: func() {
			TypedMap(func(r *Row, p *Patch) error {
				if r.Key() == nil {
					p.SetKey([]byte("none"))
					p.SetTimestamp(r.Timestamp() * 2)
				}
				return nil
			})
		},
		keys: k("a", "-"), types: nil, cells: [][]cell{{}, {}},
		want: []string{"0 keep", `1 patch key="none" ts=202`},
	}, {
		name: "a new record from every type", op: abi.OpMap,
		register: func() {
			TypedMap(func(r *Row, p *Patch) error {
				p.New()
				s, _ := r.Bytes(0)
				f, _ := r.Float(1)
				b, _ := r.Bool(2)
				raw, _ := r.Bytes(3)
				p.SetString("name", strings.ToUpper(string(s)))
				p.SetFloat("half", f/2)
				p.SetBool("flag", !b)
				p.SetRaw("tags", raw)
				p.SetNull("gone")
				p.Remove("nothing")
				return nil
			})
		},
		keys:  k("k"),
		types: []abi.FieldType{abi.TypeString, abi.TypeFloat, abi.TypeBool, abi.TypeRaw},
		cells: [][]cell{{"thé 瓷器", 0.5, true, `["x",1]`}},
		want:  []string{`0 patch new set "name"=string:THÉ 瓷器 set "half"=float:0.25 set "flag"=bool:false set "tags"=raw:["x",1] set "gone"=null remove "nothing"`},
	}, {
		name: "a failing map's patch is taken back", op: abi.OpMap,
		register: func() {
			TypedMap(func(r *Row, p *Patch) error {
				p.SetInt("price", 1)
				if v, _ := r.Int(0); v < 0 {
					return errors.New("negative")
				}
				if v, _ := r.Int(0); v == 0 {
					panic("zero")
				}
				return nil
			})
		},
		keys: k("a", "b", "c", "d"), types: ints, cells: [][]cell{{int64(-1)}, {int64(0)}, {int64(5)}, {int64(-2)}},
		want: []string{"0 error negative", "1 error panic: zero", `2 patch set "price"=int:1`, "3 error negative"},
	}, {
		name: "a header after an operation, and a field of another type, are errors", op: abi.OpMap,
		register: func() {
			TypedMap(func(r *Row, p *Patch) error {
				if r.Timestamp() == 100 {
					p.SetInt("x", 1)
					p.SetKey(nil)
				}
				r.Bytes(0)
				return nil
			})
		},
		keys: k("a", "b"), types: ints, cells: [][]cell{{int64(1)}, {int64(2)}},
		want: []string{"0 error panic: weir: set the key, the timestamp and New before the patch's operations",
			"1 error panic: weir: field 0 is int, not string or raw"},
	}, {
		name: "filter keeps the true, drops the false, rejects the rest", op: abi.OpFilter,
		register: func() {
			TypedFilter(func(r *Row) (bool, error) {
				v, ok := r.Bool(0)
				if !ok {
					return false, fmt.Errorf("flag %s", r.Status(0))
				}
				return v, nil
			})
		},
		keys: k("a", "b", "c", "d"), types: []abi.FieldType{abi.TypeBool},
		cells: [][]cell{{true}, {false}, {abi.ValueMismatch}, {true}},
		want:  []string{"0 keep", "2 error flag mismatch", "3 keep"},
	}, {
		name: "flat_map emits keeps and patches, and takes them back on error", op: abi.OpFlatMap,
		register: func() {
			TypedFlatMap(func(r *Row, emit *PatchEmitter) error {
				v, _ := r.Int(0)
				emit.Keep()
				for j := range v {
					emit.Patch().SetInt("copy", j)
				}
				emit.Patch() // the input again, as a patch of nothing
				if v > 2 {
					return errors.New("too many")
				}
				return nil
			})
		},
		keys: k("a", "b", "c"), types: ints, cells: [][]cell{{int64(2)}, {int64(3)}, {int64(0)}},
		want: []string{"0 keep", `0 patch set "copy"=int:0`, `0 patch set "copy"=int:1`, "0 patch",
			"1 error too many", "2 keep", "2 patch"},
	}, {
		name: "no typed function of the operation", op: abi.OpFilter,
		register: func() { TypedMap(double) },
		keys:     k("a"), types: ints, cells: [][]cell{{int64(1)}},
		want: []string{"0 error plugin has no filter handler"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			setTyped(t, tc.register)
			var p typedProc
			frame := typedFrame(t, tc.keys, tc.types, tc.cells)
			for round := range 2 { // buffers reused
				out, err := p.run(tc.op, frame)
				if err != nil {
					t.Fatal(err)
				}
				if got := describeTyped(t, tc.op, len(tc.keys), out); !slices.Equal(got, tc.want) {
					t.Fatalf("round %d:\n got %q\nwant %q", round, got, tc.want)
				}
			}
		})
	}
}

// TestTypedDeclaration: the module answers weir_fields with its
// declaration only when a typed function is registered, and a bad
// declaration fails at registration.
func TestTypedDeclaration(t *testing.T) {
	setTyped(t, func() { Map(func(r *Record) ([]byte, error) { return r.Value, nil }) })
	if d := typedDecl(); d != nil {
		t.Fatalf("a raw module declares %x", d)
	}
	setTyped(t, func() { TypedFilter(func(*Row) (bool, error) { return true, nil }) })
	if fs, err := abi.ParseFieldDecls(typedDecl()); err != nil || len(fs) != 0 {
		t.Fatalf("no fields declared: %v, %v", fs, err)
	}
	setTyped(t, func() {
		Fields(IntField("price", Strict), StringField(`a\.b.c`, Required|Strict))
		TypedMap(double)
	})
	fs, err := abi.ParseFieldDecls(typedDecl())
	want := []abi.FieldDecl{{Path: "price", Type: abi.TypeInt, Flags: abi.FieldStrict},
		{Path: `a\.b.c`, Type: abi.TypeString, Flags: abi.FieldRequired | abi.FieldStrict}}
	if err != nil || !slices.Equal(fs, want) {
		t.Fatalf("declared %v, %v; want %v", fs, err, want)
	}
	if ops := registeredOps(); ops != abi.OpMap.Bit() {
		t.Errorf("weir_ops %v, want map", ops)
	}
	for name, bad := range map[string][]Field{
		"twice":     {IntField("a", 0), FloatField("a", 0)},
		"empty dot": {BoolField("a..b", 0)},
	} {
		setTyped(t, func() {})
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Fields did not panic", name)
				}
			}()
			Fields(bad...)
		}()
	}
	setTyped(t, func() { Map(func(r *Record) ([]byte, error) { return nil, nil }) })
	defer func() {
		if recover() == nil {
			t.Error("a typed map beside a raw one did not panic")
		}
	}()
	TypedMap(double)
}

// TestTypedProcessorNoAllocs: a steady stream of typed batches does not
// allocate in the SDK.
func TestTypedProcessorNoAllocs(t *testing.T) {
	setTyped(t, func() { TypedMap(double) })
	cells := make([][]cell, 64)
	keys := make([][]byte, 64)
	for i := range cells {
		cells[i], keys[i] = []cell{int64(i)}, []byte("k")
	}
	frame := typedFrame(t, keys, []abi.FieldType{abi.TypeInt}, cells)
	var p typedProc
	if _, err := p.run(abi.OpMap, frame); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(20, func() { p.run(abi.OpMap, frame) }); a != 0 {
		t.Errorf("%v allocations a batch", a)
	}
}
