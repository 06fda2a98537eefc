package weir

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/weir-stream/weir/abi"
)

// setAggregate registers the aggregate fn (nil for none) for the duration
// of the test.
func setAggregate(t testing.TB, register func()) {
	t.Helper()
	saved := aggHandler
	aggHandler = nil
	if register != nil {
		register()
	}
	t.Cleanup(func() { aggHandler = saved })
}

// sumAcc is the test accumulator: a sum and a count of integer values.
type sumAcc struct {
	sum, count int64
}

var sumCodec = Codec[sumAcc]{
	Append: func(dst []byte, a sumAcc) []byte {
		return AppendInt64(AppendInt64(dst, a.sum), a.count)
	},
	Decode: func(b []byte) (sumAcc, error) {
		d := NewAccDecoder(b)
		a := sumAcc{sum: d.Int64(), count: d.Int64()}
		return a, d.End()
	},
}

func enc(a sumAcc) []byte { return sumCodec.Append(nil, a) }

// sumFuncs sums the integer values of records. A value "bad" is rejected,
// "panic" panics, "half" panics after changing nothing; merge adds; result
// writes "sum/count", or nothing (absent) when the count is 0, and fails
// for a negative sum.
func sumFuncs() AggregateFuncs[sumAcc] {
	return AggregateFuncs[sumAcc]{
		Create: func() sumAcc { return sumAcc{} },
		Add: func(a sumAcc, r *Record) (sumAcc, error) {
			switch string(r.Value) {
			case "bad":
				return sumAcc{sum: 1 << 40}, errors.New("bad value")
			case "panic":
				panic("boom")
			}
			n, ok := atoi(r.Value)
			if !ok {
				return a, fmt.Errorf("not a number: %q", r.Value)
			}
			a.sum += n
			a.count++
			return a, nil
		},
		Merge: func(a, b sumAcc) sumAcc { return sumAcc{a.sum + b.sum, a.count + b.count} },
		Result: func(dst []byte, a sumAcc) ([]byte, error) {
			switch {
			case a.sum < 0:
				return nil, errors.New("negative sum")
			case a.count == 0:
				return nil, nil
			}
			dst = strconv.AppendInt(dst, a.sum, 10)
			dst = append(dst, '/')
			return strconv.AppendInt(dst, a.count, 10), nil
		},
		Codec: sumCodec,
	}
}

// atoi parses a non-negative decimal integer without allocating.
func atoi(b []byte) (int64, bool) {
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, len(b) > 0
}

// group is one group of a test add frame.
type group struct {
	acc  []byte
	vals []string // record values; "<nil>" is an absent value
}

func addFrame(groups ...group) []byte {
	b := abi.AppendAggCount(nil, len(groups))
	for _, g := range groups {
		b = abi.AppendAggGroup(b, g.acc, len(g.vals))
		for i, v := range g.vals {
			var val []byte
			if v != "<nil>" {
				val = []byte(v)
			}
			b = abi.AppendRecord(b, int64(i), []byte("k"), val, 0)
		}
	}
	return b
}

// describeAdd renders an add output frame: per group, its errors and its
// accumulator, decoded with sumCodec when it can be.
func describeAdd(t *testing.T, frame []byte) []string {
	t.Helper()
	var r abi.AggAddOutputReader
	if _, err := r.Reset(frame); err != nil {
		t.Fatalf("add output: %v", err)
	}
	var out []string
	var g abi.AggGroupOutput
	for {
		ok, err := r.Next(&g)
		if err != nil {
			t.Fatalf("add output: %v", err)
		}
		if !ok {
			return out
		}
		var sb strings.Builder
		g.Errors.Each(func(i int, msg []byte) { fmt.Fprintf(&sb, "error %d %q; ", i, msg) })
		if a, err := sumCodec.Decode(g.Acc); err == nil {
			fmt.Fprintf(&sb, "acc %d/%d", a.sum, a.count)
		} else {
			fmt.Fprintf(&sb, "acc %q", g.Acc)
		}
		out = append(out, sb.String())
	}
}

func describeValueFrame(t *testing.T, frame []byte) []string {
	t.Helper()
	var r abi.AggValueReader
	if _, err := r.Reset(frame); err != nil {
		t.Fatalf("value output: %v", err)
	}
	var out []string
	var v abi.AggValue
	for {
		ok, err := r.Next(&v)
		if err != nil {
			t.Fatalf("value output: %v", err)
		}
		if !ok {
			return out
		}
		switch {
		case v.Status == abi.AggError:
			out = append(out, "error "+strconv.Quote(string(v.Message)))
		case v.Value == nil:
			out = append(out, "<nil>")
		default:
			if a, err := sumCodec.Decode(v.Value); err == nil {
				out = append(out, fmt.Sprintf("acc %d/%d", a.sum, a.count))
			} else {
				out = append(out, strconv.Quote(string(v.Value)))
			}
		}
	}
}

func TestAggregateAdd(t *testing.T) {
	tests := []struct {
		name   string
		groups []group
		want   []string
	}{
		{name: "no groups", want: nil},
		{
			name:   "groups fold in order",
			groups: []group{{enc(sumAcc{}), []string{"1", "2", "3"}}, {enc(sumAcc{10, 1}), []string{"5"}}},
			want:   []string{"acc 6/3", "acc 15/2"},
		},
		{
			name:   "empty group keeps its accumulator",
			groups: []group{{enc(sumAcc{7, 7}), nil}},
			want:   []string{"acc 7/7"},
		},
		{
			name:   "errors reject single records, whose results are ignored",
			groups: []group{{enc(sumAcc{}), []string{"1", "bad", "x", "2"}}, {enc(sumAcc{}), []string{"bad"}}},
			want: []string{
				`error 1 "bad value"; error 2 "not a number: \"x\""; acc 3/2`,
				`error 0 "bad value"; acc 0/0`,
			},
		},
		{
			name:   "panics reject single records and the group goes on",
			groups: []group{{enc(sumAcc{}), []string{"panic", "4", "panic", "<nil>", "5"}}, {enc(sumAcc{}), []string{"1"}}},
			want: []string{
				`error 0 "panic: boom"; error 2 "panic: boom"; error 3 "not a number: \"\""; acc 9/2`,
				"acc 1/1",
			},
		},
		{
			name:   "an undecodable accumulator rejects its group only",
			groups: []group{{[]byte("short"), []string{"1", "2"}}, {enc(sumAcc{}), []string{"3"}}},
			want: []string{
				`error 0 "bad accumulator: weir: accumulator of 5 bytes ends inside the 8-byte number at byte 0"; ` +
					`error 1 "bad accumulator: weir: accumulator of 5 bytes ends inside the 8-byte number at byte 0"; acc "short"`,
				"acc 3/1",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			setAggregate(t, func() { Aggregate(sumFuncs()) })
			var p aggProcessor
			out, err := p.add(addFrame(tc.groups...))
			if err != nil {
				t.Fatal(err)
			}
			if got := describeAdd(t, out); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestAggregateRecordFields(t *testing.T) {
	var seen []string
	setAggregate(t, func() {
		f := sumFuncs()
		f.Add = func(a sumAcc, r *Record) (sumAcc, error) {
			h, _ := r.Headers.Get("h")
			seen = append(seen, fmt.Sprintf("%d %q %q %q %d", r.Timestamp, r.Key, r.Value, h, r.index))
			return a, nil
		}
		Aggregate(f)
	})
	b := abi.AppendAggCount(nil, 2)
	b = abi.AppendAggGroup(b, enc(sumAcc{}), 2)
	b = abi.AppendRecord(b, 5, nil, []byte("v"), 1)
	b = abi.AppendHeader(b, "h", []byte("x"))
	b = abi.AppendRecord(b, 6, []byte("k"), nil, 0)
	b = abi.AppendAggGroup(b, enc(sumAcc{}), 1)
	b = abi.AppendRecord(b, 7, []byte{}, []byte{}, 0)
	var p aggProcessor
	if _, err := p.add(b); err != nil {
		t.Fatal(err)
	}
	want := []string{`5 "" "v" "x" 0`, `6 "k" "" "" 1`, `7 "" "" "" 0`}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("records %q, want %q", seen, want)
	}
}

func TestAggregateEncodeFailure(t *testing.T) {
	setAggregate(t, func() {
		f := sumFuncs()
		f.Codec.Append = func(dst []byte, a sumAcc) []byte {
			if a.sum == 13 {
				panic("unlucky")
			}
			return sumCodec.Append(dst, a)
		}
		Aggregate(f)
	})
	var p aggProcessor
	out, err := p.add(addFrame(
		group{enc(sumAcc{}), []string{"1", "bad", "2"}},
		group{enc(sumAcc{}), []string{"13", "x"}},
		group{enc(sumAcc{}), []string{"4"}},
	))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`error 1 "bad value"; acc 3/2`,
		`error 0 "panic: unlucky"; error 1 "panic: unlucky"; acc 0/0`,
		"acc 4/1",
	}
	if got := describeAdd(t, out); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestAggregateMergeResult(t *testing.T) {
	setAggregate(t, func() {
		f := sumFuncs()
		f.Merge = func(a, b sumAcc) sumAcc {
			if a.count < 0 {
				panic("negative count")
			}
			return sumAcc{a.sum + b.sum, a.count + b.count}
		}
		Aggregate(f)
	})
	var p aggProcessor
	merge := abi.AppendAggCount(nil, 4)
	for _, pair := range [][2][]byte{
		{enc(sumAcc{1, 1}), enc(sumAcc{2, 3})},
		{enc(sumAcc{}), []byte("xx")},
		{enc(sumAcc{0, -1}), enc(sumAcc{})},
		{enc(sumAcc{}), enc(sumAcc{})},
	} {
		merge = abi.AppendAcc(abi.AppendAcc(merge, pair[0]), pair[1])
	}
	out, err := p.merge(merge)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"acc 3/4",
		`error "bad accumulator: weir: accumulator of 2 bytes ends inside the 8-byte number at byte 0"`,
		`error "panic: negative count"`,
		"acc 0/0",
	}
	if got := describeValueFrame(t, out); !reflect.DeepEqual(got, want) {
		t.Errorf("merge: got %q\nwant %q", got, want)
	}

	result := abi.AppendAggCount(nil, 4)
	for _, acc := range [][]byte{enc(sumAcc{6, 3}), enc(sumAcc{}), enc(sumAcc{-1, 1}), append(enc(sumAcc{}), 0)} {
		result = abi.AppendAcc(result, acc)
	}
	out, err = p.result(result)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{
		`"6/3"`,
		"<nil>",
		`error "negative sum"`,
		`error "bad accumulator: weir: accumulator of 17 bytes has 1 bytes after its last field"`,
	}
	if got := describeValueFrame(t, out); !reflect.DeepEqual(got, want) {
		t.Errorf("result: got %q\nwant %q", got, want)
	}
}

func TestAggregateResultPanicAndCopy(t *testing.T) {
	setAggregate(t, func() {
		f := sumFuncs()
		f.Result = func(dst []byte, a sumAcc) ([]byte, error) {
			switch a.sum {
			case 1:
				dst = append(dst, "partial"...)
				panic("result boom")
			case 2:
				return []byte("not in place"), nil
			case 3:
				return []byte{}, nil
			}
			return append(dst, "in place"...), nil
		}
		Aggregate(f)
	})
	var p aggProcessor
	result := abi.AppendAggCount(nil, 5)
	for _, sum := range []int64{0, 1, 2, 3, 0} {
		result = abi.AppendAcc(result, enc(sumAcc{sum, 1}))
	}
	out, err := p.result(result)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`"in place"`, `error "panic: result boom"`, `"not in place"`, `""`, `"in place"`}
	if got := describeValueFrame(t, out); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// ctxResultFrame is a result context frame of accumulators with their
// contexts.
func ctxResultFrame(entries ...struct {
	c   AggContext
	acc []byte
}) []byte {
	b := abi.AppendAggCount(nil, len(entries))
	for _, e := range entries {
		b = abi.AppendAccContext(b, e.c, e.acc)
	}
	return b
}

// TestAggregateResultCtx: ResultCtx gets each group's context from
// weir_agg_result_ctx, and the empty context from weir_agg_result; an
// aggregate with Result only answers weir_agg_result_ctx with Result.
func TestAggregateResultCtx(t *testing.T) {
	type entry = struct {
		c   AggContext
		acc []byte
	}
	frame := ctxResultFrame(
		entry{AggContext{Key: []byte("k"), Windowed: true, Start: 1000, End: 2000}, enc(sumAcc{6, 3})},
		entry{AggContext{Key: []byte{}}, enc(sumAcc{1, 1})},
		entry{AggContext{Windowed: true, Start: -5, End: 0}, enc(sumAcc{-1, 1})},
		entry{AggContext{}, []byte("x")},
	)
	plain := abi.AppendAcc(abi.AppendAggCount(nil, 1), enc(sumAcc{6, 3}))

	t.Run("ResultCtx", func(t *testing.T) {
		setAggregate(t, func() {
			f := sumFuncs()
			result := f.Result
			f.Result = nil
			f.ResultCtx = func(dst []byte, a sumAcc, c AggContext) ([]byte, error) {
				if a.sum < 0 {
					panic(fmt.Sprintf("negative sum in [%d, %d)", c.Start, c.End))
				}
				key := "<nil>"
				if c.Key != nil {
					key = strconv.Quote(string(c.Key))
				}
				dst = fmt.Appendf(dst, "%s %v [%d,%d) ", key, c.Windowed, c.Start, c.End)
				return result(dst, a)
			}
			Aggregate(f)
		})
		var p aggProcessor
		out, err := p.resultCtx(frame)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			`"\"k\" true [1000,2000) 6/3"`,
			`"\"\" false [0,0) 1/1"`,
			`error "panic: negative sum in [-5, 0)"`,
			`error "bad accumulator: weir: accumulator of 1 bytes ends inside the 8-byte number at byte 0"`,
		}
		if got := describeValueFrame(t, out); !reflect.DeepEqual(got, want) {
			t.Errorf("weir_agg_result_ctx: got %q\nwant %q", got, want)
		}
		if p.ctx.Key != nil {
			t.Error("the processor keeps the last context's key, which aliases the frame")
		}
		out, err = p.result(plain)
		if err != nil {
			t.Fatal(err)
		}
		if got := describeValueFrame(t, out); !reflect.DeepEqual(got, []string{`"<nil> false [0,0) 6/3"`}) {
			t.Errorf("weir_agg_result: got %q", got)
		}
	})

	t.Run("Result only", func(t *testing.T) {
		setAggregate(t, func() { Aggregate(sumFuncs()) })
		var p aggProcessor
		out, err := p.resultCtx(frame)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{`"6/3"`, `"1/1"`, `error "negative sum"`,
			`error "bad accumulator: weir: accumulator of 1 bytes ends inside the 8-byte number at byte 0"`}
		if got := describeValueFrame(t, out); !reflect.DeepEqual(got, want) {
			t.Errorf("weir_agg_result_ctx: got %q\nwant %q", got, want)
		}
	})

	t.Run("no aggregate", func(t *testing.T) {
		setAggregate(t, nil)
		var p aggProcessor
		out, err := p.resultCtx(ctxResultFrame(entry{AggContext{}, nil}))
		if err != nil {
			t.Fatal(err)
		}
		if got := describeValueFrame(t, out); !reflect.DeepEqual(got, []string{`error "plugin has no aggregate handler"`}) {
			t.Errorf("got %q", got)
		}
	})
}

func TestAggregateCreate(t *testing.T) {
	t.Run("create", func(t *testing.T) {
		setAggregate(t, func() {
			f := sumFuncs()
			f.Create = func() sumAcc { return sumAcc{0, 42} }
			Aggregate(f)
		})
		var p aggProcessor
		acc, err := p.create()
		if err != nil || !bytes.Equal(acc, enc(sumAcc{0, 42})) {
			t.Errorf("create = %x, %v", acc, err)
		}
	})
	t.Run("nil create is the zero value", func(t *testing.T) {
		setAggregate(t, func() {
			f := sumFuncs()
			f.Create = nil
			Aggregate(f)
		})
		var p aggProcessor
		acc, err := p.create()
		if err != nil || !bytes.Equal(acc, enc(sumAcc{})) {
			t.Errorf("create = %x, %v", acc, err)
		}
	})
	t.Run("panic", func(t *testing.T) {
		setAggregate(t, func() {
			f := sumFuncs()
			f.Create = func() sumAcc { panic("no") }
			Aggregate(f)
		})
		var p aggProcessor
		if _, err := p.create(); err == nil || err.Error() != "panic: no" {
			t.Errorf("create error %v", err)
		}
	})
	t.Run("empty encoding is present", func(t *testing.T) {
		setAggregate(t, func() {
			Aggregate(AggregateFuncs[[]byte]{
				Add:    func(a []byte, r *Record) ([]byte, error) { return a, nil },
				Merge:  func(a, b []byte) []byte { return a },
				Result: func(dst, a []byte) ([]byte, error) { return append(dst, a...), nil },
				Codec:  BytesCodec,
			})
		})
		var p aggProcessor
		if acc, err := p.create(); acc == nil || len(acc) != 0 || err != nil {
			t.Errorf("create = %#v, %v", acc, err)
		}
	})
}

func TestAggregateBytesCodec(t *testing.T) {
	// An aggregate over raw bytes: the accumulator is the concatenation of
	// the values, modified in place.
	setAggregate(t, func() {
		Aggregate(AggregateFuncs[[]byte]{
			Create: func() []byte { return []byte("<") },
			Add: func(a []byte, r *Record) ([]byte, error) {
				if len(a) > 0 {
					a[0] = '['
				}
				return append(a, r.Value...), nil
			},
			Merge:  func(a, b []byte) []byte { return append(a, b...) },
			Result: func(dst, a []byte) ([]byte, error) { return append(append(dst, a...), ']'), nil },
			Codec:  BytesCodec,
		})
	})
	var p aggProcessor
	acc, err := p.create()
	if err != nil || string(acc) != "<" {
		t.Fatalf("create = %q, %v", acc, err)
	}
	frame := addFrame(group{acc, []string{"a", "b"}}, group{[]byte("<x"), []string{"y"}})
	out, err := p.add(frame)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`acc "[ab"`, `acc "[xy"`}
	if got := describeAdd(t, out); !reflect.DeepEqual(got, want) {
		t.Errorf("add: got %q, want %q", got, want)
	}
	out, err = p.merge(abi.AppendAcc(abi.AppendAcc(abi.AppendAggCount(nil, 1), []byte("ab")), []byte("cd")))
	if err != nil {
		t.Fatal(err)
	}
	if got := describeValueFrame(t, out); !reflect.DeepEqual(got, []string{`"abcd"`}) {
		t.Errorf("merge: got %q", got)
	}
	out, err = p.result(abi.AppendAcc(abi.AppendAggCount(nil, 1), []byte("ab")))
	if err != nil {
		t.Fatal(err)
	}
	if got := describeValueFrame(t, out); !reflect.DeepEqual(got, []string{`"ab]"`}) {
		t.Errorf("result: got %q", got)
	}
}

func TestAggregateNoHandler(t *testing.T) {
	setAggregate(t, nil)
	var p aggProcessor
	if _, err := p.create(); err == nil || err.Error() != "plugin has no aggregate handler" {
		t.Errorf("create error %v", err)
	}
	out, err := p.add(addFrame(group{[]byte("a"), []string{"1", "2"}}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`error 0 "plugin has no aggregate handler"; error 1 "plugin has no aggregate handler"; acc "a"`}
	if got := describeAdd(t, out); !reflect.DeepEqual(got, want) {
		t.Errorf("add: got %q", got)
	}
	out, err = p.merge(abi.AppendAcc(abi.AppendAcc(abi.AppendAggCount(nil, 1), nil), nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := describeValueFrame(t, out); !reflect.DeepEqual(got, []string{`error "plugin has no aggregate handler"`}) {
		t.Errorf("merge: got %q", got)
	}
	out, err = p.result(abi.AppendAcc(abi.AppendAggCount(nil, 1), nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := describeValueFrame(t, out); !reflect.DeepEqual(got, []string{`error "plugin has no aggregate handler"`}) {
		t.Errorf("result: got %q", got)
	}
}

func TestAggregateMalformedFrames(t *testing.T) {
	setAggregate(t, func() { Aggregate(sumFuncs()) })
	good := addFrame(group{enc(sumAcc{}), []string{"1", "2"}})
	goodAccs := abi.AppendAcc(abi.AppendAcc(abi.AppendAggCount(nil, 1), enc(sumAcc{})), enc(sumAcc{}))
	tests := []struct {
		name string
		call func(*aggProcessor, []byte) ([]byte, error)
		in   []byte
	}{
		{"add: empty", (*aggProcessor).add, nil},
		{"add: truncated record", (*aggProcessor).add, good[:len(good)-1]},
		{"add: trailing bytes", (*aggProcessor).add, append(bytes.Clone(good), 0)},
		{"merge: truncated", (*aggProcessor).merge, goodAccs[:len(goodAccs)-1]},
		{"merge: trailing", (*aggProcessor).merge, append(bytes.Clone(goodAccs), 0)},
		{"result: count too large", (*aggProcessor).result, append([]byte{3, 0, 0, 0}, goodAccs[4:]...)},
		{"result: no count", (*aggProcessor).result, []byte{1}},
		{"result with context: plain accumulators", (*aggProcessor).resultCtx, abi.AppendAcc(abi.AppendAggCount(nil, 1), enc(sumAcc{}))},
		{"result with context: trailing", (*aggProcessor).resultCtx, append(abi.AppendAccContext(abi.AppendAggCount(nil, 1), AggContext{}, enc(sumAcc{})), 0)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p aggProcessor
			_, err := tc.call(&p, tc.in)
			var fe *abi.FrameError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v, want an *abi.FrameError", err)
			}
		})
	}
}

func TestAggregateRegisterMisuse(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*AggregateFuncs[sumAcc])
		want string
	}{
		{"nil Add", func(f *AggregateFuncs[sumAcc]) { f.Add = nil }, "weir: nil aggregate function: AggregateFuncs.Add is nil"},
		{"nil Merge", func(f *AggregateFuncs[sumAcc]) { f.Merge = nil }, "weir: nil aggregate function: AggregateFuncs.Merge is nil"},
		{"nil Result", func(f *AggregateFuncs[sumAcc]) { f.Result = nil }, "weir: nil aggregate function: AggregateFuncs.Result (and ResultCtx) is nil"},
		{"nil Codec.Decode", func(f *AggregateFuncs[sumAcc]) { f.Codec.Decode = nil }, "weir: nil aggregate function: AggregateFuncs.Codec.Decode is nil"},
		{"twice", func(f *AggregateFuncs[sumAcc]) { Aggregate(*f) }, "weir: aggregate function already registered"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			setAggregate(t, nil)
			f := sumFuncs()
			defer func() {
				if got := recover(); got != tc.want {
					t.Errorf("panic %v, want %q", got, tc.want)
				}
			}()
			tc.mod(&f)
			Aggregate(f)
		})
	}
}

func TestAccDecoder(t *testing.T) {
	b := AppendInt64(nil, -5)
	b = AppendUint64(b, 1<<63)
	b = AppendFloat64(b, 2.5)
	b = AppendString(b, "TR")
	b = AppendBytes(b, nil)
	d := NewAccDecoder(b)
	i, u, f, s, e := d.Int64(), d.Uint64(), d.Float64(), string(d.Bytes()), d.Bytes()
	if err := d.End(); err != nil || i != -5 || u != 1<<63 || f != 2.5 || s != "TR" || len(e) != 0 {
		t.Fatalf("decoded %d %d %v %q %q, %v", i, u, f, s, e, err)
	}

	tests := []struct {
		name string
		in   []byte
		read func(*AccDecoder)
		want string
	}{
		{"short number", []byte{1, 2, 3}, func(d *AccDecoder) { d.Int64() }, "weir: accumulator of 3 bytes ends inside the 8-byte number at byte 0"},
		{"short length", AppendInt64(nil, 1)[:8], func(d *AccDecoder) { d.Int64(); d.Bytes() }, "weir: accumulator of 8 bytes ends inside the byte string at byte 8"},
		{"short string", AppendString(nil, "abc")[:6], func(d *AccDecoder) { d.Bytes() }, "weir: accumulator of 6 bytes ends inside the byte string at byte 0"},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff}, func(d *AccDecoder) { d.Bytes() }, "weir: accumulator of 4 bytes ends inside the byte string at byte 0"},
		{"trailing", AppendInt64(nil, 1), func(d *AccDecoder) {}, "weir: accumulator of 8 bytes has 8 bytes after its last field"},
		{"first error wins", []byte{1}, func(d *AccDecoder) { d.Bytes(); d.Int64() }, "weir: accumulator of 1 bytes ends inside the byte string at byte 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := NewAccDecoder(tc.in)
			tc.read(&d)
			err := d.End()
			var de *AccDecodeError
			if !errors.As(err, &de) || err.Error() != tc.want {
				t.Errorf("End() = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestAggregateZeroAllocs(t *testing.T) {
	setAggregate(t, func() { Aggregate(sumFuncs()) })
	var vals []string
	for i := range 64 {
		vals = append(vals, strconv.Itoa(i))
	}
	add := addFrame(group{enc(sumAcc{}), vals}, group{enc(sumAcc{1, 1}), vals[:3]})
	merge := abi.AppendAcc(abi.AppendAcc(abi.AppendAggCount(nil, 1), enc(sumAcc{1, 2})), enc(sumAcc{3, 4}))
	result := abi.AppendAcc(abi.AppendAggCount(nil, 1), enc(sumAcc{3, 4}))
	resultCtx := abi.AppendAccContext(abi.AppendAggCount(nil, 1), AggContext{Key: []byte("k"), Windowed: true, End: 5}, enc(sumAcc{3, 4}))
	calls := []struct {
		name  string
		call  func(*aggProcessor, []byte) ([]byte, error)
		frame []byte
	}{
		{"add", (*aggProcessor).add, add},
		{"merge", (*aggProcessor).merge, merge},
		{"result", (*aggProcessor).result, result},
		{"result with context", (*aggProcessor).resultCtx, resultCtx},
		{"create", func(p *aggProcessor, _ []byte) ([]byte, error) { return p.create() }, nil},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			var p aggProcessor
			for range 3 {
				if _, err := c.call(&p, c.frame); err != nil {
					t.Fatal(err)
				}
			}
			if n := testing.AllocsPerRun(100, func() { c.call(&p, c.frame) }); n != 0 {
				t.Errorf("%v allocations per call, want 0", n)
			}
		})
	}
}

func BenchmarkAggregateAdd(b *testing.B) {
	setAggregate(b, func() { Aggregate(sumFuncs()) })
	var groups []group
	for g := range 8 {
		var vals []string
		for i := range 64 {
			vals = append(vals, strconv.Itoa(g*64+i))
		}
		groups = append(groups, group{enc(sumAcc{}), vals})
	}
	frame := addFrame(groups...)
	var p aggProcessor
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.add(frame); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*8*64), "ns/record")
}
