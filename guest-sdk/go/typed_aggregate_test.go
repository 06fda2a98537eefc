package weir

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/weir-stream/weir/abi"
)

// tgroup is one group of a test typed add frame: its accumulator and its
// records' cells, one int field each unless the test says otherwise.
type tgroup struct {
	acc   []byte
	cells [][]cell
}

// typedAddFrame encodes a typed add frame of groups whose records have
// fields of types, the keys "k0", "k1", ... in batch order.
func typedAddFrame(t testing.TB, types []abi.FieldType, groups ...tgroup) []byte {
	t.Helper()
	var keys [][]byte
	var cells [][]cell
	var gs []abi.TypedGroup
	for _, g := range groups {
		for _, c := range g.cells {
			keys = append(keys, fmt.Appendf(nil, "k%d", len(keys)))
			cells = append(cells, c)
		}
		gs = append(gs, abi.TypedGroup{Acc: g.acc, Records: len(g.cells)})
	}
	b, err := abi.AppendTypedAdd(nil, gs, typedCols(keys, types, cells))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ints is a group's cells of one int field.
func ints(vs ...cell) [][]cell {
	var out [][]cell
	for _, v := range vs {
		out = append(out, []cell{v})
	}
	return out
}

// typedSumFuncs sums int field 0: a missing or null field is an error
// naming its status; 13 panics; a negative value is rejected after
// returning a changed accumulator (which must be ignored). Merge, Result
// and Codec are sumFuncs'.
func typedSumFuncs() TypedAggregateFuncs[sumAcc] {
	raw := sumFuncs()
	return TypedAggregateFuncs[sumAcc]{
		Create: raw.Create,
		Add: func(a sumAcc, r *Row) (sumAcc, error) {
			v, ok := r.Int(0)
			switch {
			case !ok:
				return a, fmt.Errorf("n is %s", r.Status(0))
			case v == 13:
				panic("unlucky")
			case v < 0:
				return sumAcc{sum: 1 << 40}, errors.New("negative")
			}
			a.sum += v
			a.count++
			return a, nil
		},
		Merge:  raw.Merge,
		Result: raw.Result,
		Codec:  raw.Codec,
	}
}

// setTypedAggregate registers the typed aggregate of register (nil for
// none) and no other function for the duration of the test.
func setTypedAggregate(t testing.TB, register func()) {
	t.Helper()
	saved, savedRaw, savedAgg := typed, handlers, aggHandler
	typed = typedRegs{}
	handlers.mapFn, handlers.mapTo, handlers.flatMap, handlers.filter = nil, nil, nil, nil
	aggHandler = nil
	t.Cleanup(func() { typed, handlers, aggHandler = saved, savedRaw, savedAgg })
	if register != nil {
		register()
	}
}

func TestTypedAggregateAdd(t *testing.T) {
	intField := []abi.FieldType{abi.TypeInt}
	typedSum := func() { TypedAggregate(typedSumFuncs()) }
	tests := []struct {
		name     string
		register func()
		groups   []tgroup
		want     []string
	}{{
		name: "no groups", register: typedSum,
	}, {
		name: "groups fold in order", register: typedSum,
		groups: []tgroup{{enc(sumAcc{}), ints(int64(1), int64(2), int64(3))}, {enc(sumAcc{10, 1}), ints(int64(5))}},
		want:   []string{"acc 6/3", "acc 15/2"},
	}, {
		name: "an empty group keeps its accumulator", register: typedSum,
		groups: []tgroup{{enc(sumAcc{1, 1}), ints(int64(2))}, {enc(sumAcc{7, 7}), nil}, {enc(sumAcc{}), ints(int64(4))}},
		want:   []string{"acc 3/2", "acc 7/7", "acc 4/1"},
	}, {
		name: "errors reject single records, numbered within the group, whose results are ignored", register: typedSum,
		groups: []tgroup{
			{enc(sumAcc{}), ints(int64(1), nil, int64(-1), abi.ValueNull, int64(2))},
			{enc(sumAcc{}), ints(int64(-5))},
		},
		want: []string{
			`error 1 "n is missing"; error 2 "negative"; error 3 "n is null"; acc 3/2`,
			`error 0 "negative"; acc 0/0`,
		},
	}, {
		name: "panics reject single records and the group goes on", register: typedSum,
		groups: []tgroup{
			{enc(sumAcc{}), ints(int64(13), int64(4), int64(13), abi.ValueMismatch, int64(5), int64(13))},
			{enc(sumAcc{}), ints(int64(1))},
		},
		want: []string{
			`error 0 "panic: unlucky"; error 2 "panic: unlucky"; error 3 "n is mismatch"; error 5 "panic: unlucky"; acc 9/2`,
			"acc 1/1",
		},
	}, {
		name: "an undecodable accumulator rejects its group only", register: typedSum,
		groups: []tgroup{{[]byte("short"), ints(int64(1), int64(2))}, {enc(sumAcc{}), ints(int64(3))}},
		want: []string{
			`error 0 "bad accumulator: weir: accumulator of 5 bytes ends inside the 8-byte number at byte 0"; ` +
				`error 1 "bad accumulator: weir: accumulator of 5 bytes ends inside the 8-byte number at byte 0"; acc "short"`,
			"acc 3/1",
		},
	}, {
		name: "an accumulator that cannot be encoded rejects its group, unchanged",
		register: func() {
			f := typedSumFuncs()
			f.Codec.Append = func(dst []byte, a sumAcc) []byte {
				if a.sum == 12 {
					panic("no encoding")
				}
				return sumCodec.Append(dst, a)
			}
			TypedAggregate(f)
		},
		groups: []tgroup{{enc(sumAcc{}), ints(int64(1), int64(-1))}, {enc(sumAcc{2, 1}), ints(int64(10), nil)}, {enc(sumAcc{}), ints(int64(4))}},
		want: []string{
			`error 1 "negative"; acc 1/1`,
			`error 0 "panic: no encoding"; error 1 "panic: no encoding"; acc 2/1`,
			"acc 4/1",
		},
	}, {
		name: "a raw aggregate has no typed add",
		register: func() {
			Aggregate(sumFuncs())
		},
		groups: []tgroup{{[]byte("a"), ints(int64(1), int64(2))}},
		want:   []string{`error 0 "plugin has no typed aggregate handler"; error 1 "plugin has no typed aggregate handler"; acc "a"`},
	}, {
		name:   "no aggregate",
		groups: []tgroup{{[]byte("a"), ints(int64(1))}, {[]byte("b"), nil}},
		want:   []string{`error 0 "plugin has no aggregate handler"; acc "a"`, `acc "b"`},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			setTypedAggregate(t, tc.register)
			var p typedAggProcessor
			frame := typedAddFrame(t, intField, tc.groups...)
			for round := range 2 { // buffers reused
				out, err := p.add(frame)
				if err != nil {
					t.Fatal(err)
				}
				if got := describeAdd(t, out); !slices.Equal(got, tc.want) {
					t.Fatalf("round %d:\n got %q\nwant %q", round, got, tc.want)
				}
			}
		})
	}
}

// TestTypedAggregateRows: Add sees each record of each group, by its batch
// index, with its timestamp, key and fields of every type.
func TestTypedAggregateRows(t *testing.T) {
	var seen []string
	setTypedAggregate(t, func() {
		Fields(IntField("i", 0), FloatField("f", 0), BoolField("b", 0), StringField("s", 0), RawField("r", 0))
		f := typedSumFuncs()
		f.Add = func(a sumAcc, r *Row) (sumAcc, error) {
			i, iok := r.Int(0)
			f, fok := r.Float(1)
			b, bok := r.Bool(2)
			s, sok := r.Bytes(3)
			raw, rok := r.Bytes(4)
			seen = append(seen, fmt.Sprintf("%d %q: %d %v, %v %v, %v %v, %q %v, %s %v; %s",
				r.Timestamp(), r.Key(), i, iok, f, fok, b, bok, s, sok, raw, rok, r.Status(1)))
			a.count++
			return a, nil
		}
		TypedAggregate(f)
	})
	types := []abi.FieldType{abi.TypeInt, abi.TypeFloat, abi.TypeBool, abi.TypeString, abi.TypeRaw}
	frame := typedAddFrame(t, types,
		tgroup{enc(sumAcc{}), [][]cell{{int64(-7), 2.5, true, "thé", `{"a":[1]}`}, {nil, abi.ValueNull, abi.ValueMismatch, nil, nil}}},
		tgroup{enc(sumAcc{}), nil},
		tgroup{enc(sumAcc{}), [][]cell{{int64(math.MaxInt64), math.Copysign(0, -1), false, "", `"x"`}}},
	)
	var p typedAggProcessor
	out, err := p.add(frame)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`100 "k0": -7 true, 2.5 true, true true, "thé" true, {"a":[1]} true; present`,
		`101 "k1": 0 false, 0 false, false false, "" false,  false; null`,
		`102 "k2": 9223372036854775807 true, -0 true, false true, "" true, "x" true; present`,
	}
	if !slices.Equal(seen, want) {
		t.Errorf("rows:\n got %q\nwant %q", seen, want)
	}
	if got := describeAdd(t, out); !slices.Equal(got, []string{"acc 0/2", "acc 0/0", "acc 0/1"}) {
		t.Errorf("add output %q", got)
	}
}

// TestTypedAggregateFieldTypes: reading a field as another type rejects
// the record, as a panic.
func TestTypedAggregateFieldTypes(t *testing.T) {
	setTypedAggregate(t, func() {
		f := typedSumFuncs()
		f.Add = func(a sumAcc, r *Row) (sumAcc, error) {
			if r.Timestamp() == 100 {
				r.Float(0)
			} else {
				r.Status(5)
			}
			return a, nil
		}
		TypedAggregate(f)
	})
	var p typedAggProcessor
	out, err := p.add(typedAddFrame(t, []abi.FieldType{abi.TypeInt}, tgroup{enc(sumAcc{}), ints(int64(1), int64(2))}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`error 0 "panic: weir: field 0 is int, not float"; error 1 "panic: runtime error: index out of range [7] with length 3"; acc 0/0`}
	if got := describeAdd(t, out); !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestTypedAggregateRawCalls: a typed aggregate's create, merge and result
// are the raw exports'; its raw add rejects every record.
func TestTypedAggregateRawCalls(t *testing.T) {
	setTypedAggregate(t, func() {
		f := typedSumFuncs()
		f.Create = func() sumAcc { return sumAcc{0, 42} }
		TypedAggregate(f)
	})
	var p aggProcessor
	if acc, err := p.create(); err != nil || !bytes.Equal(acc, enc(sumAcc{0, 42})) {
		t.Errorf("create = %x, %v", acc, err)
	}
	out, err := p.merge(abi.AppendAcc(abi.AppendAcc(abi.AppendAggCount(nil, 1), enc(sumAcc{1, 2})), enc(sumAcc{3, 4})))
	if err != nil {
		t.Fatal(err)
	}
	if got := describeValueFrame(t, out); !slices.Equal(got, []string{"acc 4/6"}) {
		t.Errorf("merge: %q", got)
	}
	out, err = p.result(abi.AppendAcc(abi.AppendAggCount(nil, 1), enc(sumAcc{6, 3})))
	if err != nil {
		t.Fatal(err)
	}
	if got := describeValueFrame(t, out); !slices.Equal(got, []string{`"6/3"`}) {
		t.Errorf("result: %q", got)
	}
	out, err = p.add(addFrame(group{enc(sumAcc{1, 1}), []string{"1"}}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`error 0 "plugin's aggregate is typed: it reads records through weir_typed_agg_add, not weir_agg_add"; acc 1/1`}
	if got := describeAdd(t, out); !slices.Equal(got, want) {
		t.Errorf("raw add:\n got %q\nwant %q", got, want)
	}
}

// TestTypedAggregateResultCtx: a typed aggregate's ResultCtx gets each
// group's context from weir_agg_result_ctx, as a raw aggregate's does.
func TestTypedAggregateResultCtx(t *testing.T) {
	setTypedAggregate(t, func() {
		f := typedSumFuncs()
		f.Result = nil
		f.ResultCtx = func(dst []byte, a sumAcc, c AggContext) ([]byte, error) {
			return fmt.Appendf(dst, "%s %v [%d,%d) %d/%d", c.Key, c.Windowed, c.Start, c.End, a.sum, a.count), nil
		}
		TypedAggregate(f)
	})
	var p aggProcessor
	frame := abi.AppendAccContext(abi.AppendAggCount(nil, 1), AggContext{Key: []byte("k"), Windowed: true, Start: 10, End: 20}, enc(sumAcc{6, 3}))
	out, err := p.resultCtx(frame)
	if err != nil {
		t.Fatal(err)
	}
	if got := describeValueFrame(t, out); !slices.Equal(got, []string{`"k true [10,20) 6/3"`}) {
		t.Errorf("result with context: %q", got)
	}
}

// TestTypedAggregateDeclaration: a module with a typed aggregate answers
// weir_fields with its declaration (none declared: no fields) and
// implements aggregate; a raw aggregate leaves the module raw.
func TestTypedAggregateDeclaration(t *testing.T) {
	setTypedAggregate(t, func() { Aggregate(sumFuncs()) })
	if d := moduleFields(); d != nil {
		t.Fatalf("a raw aggregate declares %x", d)
	}
	setTypedAggregate(t, func() { TypedAggregate(typedSumFuncs()) })
	if fs, err := abi.ParseFieldDecls(moduleFields()); err != nil || len(fs) != 0 {
		t.Fatalf("no fields declared: %v, %v", fs, err)
	}
	setTypedAggregate(t, func() {
		Fields(IntField("n", Required|Strict), RawField("tags", 0))
		TypedAggregate(typedSumFuncs())
	})
	fs, err := abi.ParseFieldDecls(moduleFields())
	want := []abi.FieldDecl{{Path: "n", Type: abi.TypeInt, Flags: abi.FieldRequired | abi.FieldStrict},
		{Path: "tags", Type: abi.TypeRaw}}
	if err != nil || !slices.Equal(fs, want) {
		t.Fatalf("declared %v, %v; want %v", fs, err, want)
	}
	if ops := registeredOps(); ops != abi.OpAggregate.Bit() {
		t.Errorf("weir_ops %v, want aggregate", ops)
	}
	setTypedAggregate(t, func() { TypedMap(double) })
	if fs, err := abi.ParseFieldDecls(moduleFields()); err != nil || len(fs) != 0 {
		t.Fatalf("a typed map: %v, %v", fs, err)
	}
}

func TestTypedAggregateRegisterMisuse(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*TypedAggregateFuncs[sumAcc])
		want string
	}{
		{"nil Add", func(f *TypedAggregateFuncs[sumAcc]) { f.Add = nil }, "weir: nil aggregate function: TypedAggregateFuncs.Add is nil"},
		{"nil Merge", func(f *TypedAggregateFuncs[sumAcc]) { f.Merge = nil }, "weir: nil aggregate function: TypedAggregateFuncs.Merge is nil"},
		{"nil Result", func(f *TypedAggregateFuncs[sumAcc]) { f.Result = nil }, "weir: nil aggregate function: TypedAggregateFuncs.Result (and ResultCtx) is nil"},
		{"nil Codec.Append", func(f *TypedAggregateFuncs[sumAcc]) { f.Codec.Append = nil }, "weir: nil aggregate function: TypedAggregateFuncs.Codec.Append is nil"},
		{"twice", func(f *TypedAggregateFuncs[sumAcc]) { TypedAggregate(*f) }, "weir: aggregate function already registered"},
		{"after a raw one", func(f *TypedAggregateFuncs[sumAcc]) { Aggregate(sumFuncs()) }, "weir: aggregate function already registered"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			setTypedAggregate(t, nil)
			f := typedSumFuncs()
			defer func() {
				if got := recover(); got != tc.want {
					t.Errorf("panic %v, want %q", got, tc.want)
				}
			}()
			tc.mod(&f)
			TypedAggregate(f)
		})
	}
	t.Run("a raw one after", func(t *testing.T) {
		setTypedAggregate(t, func() { TypedAggregate(typedSumFuncs()) })
		defer func() {
			if got, want := recover(), "weir: aggregate function already registered"; got != want {
				t.Errorf("panic %v, want %q", got, want)
			}
		}()
		Aggregate(sumFuncs())
	})
}

func TestTypedAggregateMalformedFrames(t *testing.T) {
	setTypedAggregate(t, func() { TypedAggregate(typedSumFuncs()) })
	good := typedAddFrame(t, []abi.FieldType{abi.TypeInt}, tgroup{enc(sumAcc{}), ints(int64(1), int64(2))})
	miscounted := bytes.Clone(good)
	miscounted[4+4+16] = 3 // the group's record count
	for name, frame := range map[string][]byte{
		"empty":                nil,
		"truncated batch":      good[:len(good)-1],
		"counts do not add up": miscounted,
		"no batch":             good[:4+4+16+4],
	} {
		t.Run(name, func(t *testing.T) {
			var p typedAggProcessor
			if out, err := p.add(frame); err == nil {
				t.Fatalf("no error; output %x", out)
			}
		})
	}
}

// TestTypedAggregateNoAllocs: a steady stream of typed add calls does not
// allocate in the SDK.
func TestTypedAggregateNoAllocs(t *testing.T) {
	setTypedAggregate(t, func() { TypedAggregate(typedSumFuncs()) })
	frame := benchTypedAddFrame(t, 4, 64)
	var p typedAggProcessor
	for range 3 {
		if _, err := p.add(frame); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(100, func() { p.add(frame) }); n != 0 {
		t.Errorf("%v allocations per call, want 0", n)
	}
}

// TestTypedAggDirective checks the export of typed_aggregate_wasip1.go
// against package abi, as TestDirectivesMatchABI does for
// exports_wasip1.go.
func TestTypedAggDirective(t *testing.T) {
	got := directives(t, "typed_aggregate_wasip1.go", "//go:wasmexport ")
	compare(t, "wasmexport", got, map[string]string{"exportTypedAggAdd": abi.ExportTypedAggAdd})
	if !reflect.DeepEqual(abi.OpAggregate.TypedExport(), abi.ExportTypedAggAdd) {
		t.Errorf("the aggregate's typed export is %q", abi.OpAggregate.TypedExport())
	}
}

// benchTypedAddFrame is a typed add frame of groups groups of n int
// records each.
func benchTypedAddFrame(t testing.TB, groups, n int) []byte {
	var gs []tgroup
	for g := range groups {
		var cells []cell
		for i := range n {
			cells = append(cells, int64(100+g*n+i)) // none 13, none negative: no errors
		}
		gs = append(gs, tgroup{enc(sumAcc{}), ints(cells...)})
	}
	return typedAddFrame(t, []abi.FieldType{abi.TypeInt}, gs...)
}

func BenchmarkTypedAggregateAdd(b *testing.B) {
	setTypedAggregate(b, func() { TypedAggregate(typedSumFuncs()) })
	frame := benchTypedAddFrame(b, 8, 64)
	var p typedAggProcessor
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.add(frame); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*8*64), "ns/record")
}

// TestMixedConventions: a module that registers typed and raw functions
// together fails to load with the reason, instead of loading with its raw
// functions never called.
func TestMixedConventions(t *testing.T) {
	keep := func(*Record) (bool, error) { return true, nil }
	tests := []struct {
		name     string
		register func()
		mixed    bool
	}{
		{"raw map and typed filter", func() { Map(func(r *Record) ([]byte, error) { return r.Value, nil }); TypedFilter(rowFilter) }, true},
		{"typed map and raw filter", func() { TypedMapBatch(batchMap); Filter(keep) }, true},
		{"raw aggregate and typed map", func() { Aggregate(sumFuncs()); TypedMap(double) }, true},
		{"typed aggregate and raw filter", func() { TypedAggregate(typedSumFuncs()); Filter(keep) }, true},
		{"typed map and typed aggregate", func() { TypedMap(double); TypedAggregate(typedSumFuncs()) }, false},
		{"raw filter and raw aggregate", func() { Filter(keep); Aggregate(sumFuncs()) }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			setTypedAggregate(t, tc.register)
			defer func() {
				v := recover()
				if got := v != nil && strings.Contains(fmt.Sprint(v), "typed and raw functions"); got != tc.mixed {
					t.Errorf("panic %v; want one: %v", v, tc.mixed)
				}
			}()
			moduleFields()
		})
	}
}
