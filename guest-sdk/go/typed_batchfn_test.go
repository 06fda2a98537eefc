package weir

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/weir-stream/weir/abi"
)

// genBatch returns a typed batch of n records with an int field and a
// string field, each value present, null, missing or mismatched at random.
func genBatch(t *testing.T, rng *rand.Rand, n int) []byte {
	keys := make([][]byte, n)
	cells := make([][]cell, n)
	statuses := []abi.ValueStatus{abi.ValueNull, abi.ValueMissing, abi.ValueMismatch}
	for i := range n {
		if rng.IntN(5) > 0 {
			keys[i] = fmt.Appendf(nil, "k%d", rng.IntN(20))
		}
		ints := []int64{0, 1, -1, 3, math.MaxInt64, math.MinInt64, 1 << 53, rng.Int64()}
		cells[i] = []cell{ints[rng.IntN(len(ints))], strings.Repeat("é", rng.IntN(4))}
		for f := range cells[i] {
			if rng.IntN(4) == 0 {
				cells[i][f] = statuses[rng.IntN(len(statuses))]
			}
		}
	}
	return typedFrame(t, keys, []abi.FieldType{abi.TypeInt, abi.TypeString}, cells)
}

// rowMap is a per-record map that keeps, patches, re-keys and rejects.
func rowMap(r *Row, p *Patch) error {
	v, ok := r.Int(0)
	s, _ := r.Bytes(1)
	switch {
	case !ok:
		return fmt.Errorf("n is %s", r.Status(0))
	case v%3 == 0:
		return nil
	case v%3 == 1:
		p.SetKey(s)
		return nil
	}
	p.SetInt("n", v/2)
	p.SetStringBytes("s", s)
	return nil
}

// batchMap is rowMap as a batch function.
func batchMap(b *Batch) error {
	ns, ss := b.Ints(0), b.Strings(1)
	for i := range b.Len() {
		v, ok := ns.Get(i)
		s, _ := ss.Get(i)
		switch {
		case !ok:
			b.Reject(i, fmt.Errorf("n is %s", ns.Status(i)))
		case v%3 == 0:
		case v%3 == 1:
			b.Patch(i).SetKey(s)
		default:
			p := b.Patch(i)
			p.SetInt("n", v/2)
			p.SetStringBytes("s", s)
		}
	}
	return nil
}

func rowFilter(r *Row) (bool, error) {
	if r.Status(1) == Mismatch {
		return false, errors.New("s is not a string")
	}
	v, ok := r.Int(0)
	k := r.Key()
	return ok && v%2 == 0 || k != nil && len(k)%2 == 0, nil
}

func batchFilter(b *Batch) error {
	ns, ss, keys := b.Ints(0), b.Strings(1), b.Keys()
	for i := range b.Len() {
		if ss.Status(i) == Mismatch {
			b.Reject(i, errors.New("s is not a string"))
			continue
		}
		v, ok := ns.Get(i)
		k, _ := keys.Get(i)
		if ok && v%2 == 0 || k != nil && len(k)%2 == 0 {
			b.Keep(i)
		}
	}
	return nil
}

// TestBatchMatchesRows: a batch function answers generated batches
// exactly as the same logic written per record does.
func TestBatchMatchesRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	tests := []struct {
		name       string
		op         abi.Op
		row, batch func()
	}{
		{"map", abi.OpMap, func() { TypedMap(rowMap) }, func() { TypedMapBatch(batchMap) }},
		{"filter", abi.OpFilter, func() { TypedFilter(rowFilter) }, func() { TypedFilterBatch(batchFilter) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for range 200 {
				n := 1 + rng.IntN(300)
				frame := genBatch(t, rng, n)
				want := runRegistered(t, tc.op, frame, tc.row)
				got := runRegistered(t, tc.op, frame, tc.batch)
				if !slices.Equal(got, want) {
					t.Fatalf("batch of %d:\n got %q\nwant %q", n, got, want)
				}
			}
		})
	}
}

// runRegistered registers with register alone and answers frame.
func runRegistered(t *testing.T, op abi.Op, frame []byte, register func()) []string {
	t.Helper()
	var got []string
	t.Run("", func(t *testing.T) {
		setTyped(t, register)
		var p typedProc
		out, err := p.run(op, frame)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := (&abi.TypedBatch{}).ResetShape(frame)
		got = describeTyped(t, op, n, out)
	})
	return got
}

func TestBatchFunctions(t *testing.T) {
	cells := [][]cell{{int64(1)}, {int64(2)}, {abi.ValueNull}}
	keys := [][]byte{[]byte("a"), nil, []byte("c")}
	frame := typedFrame(t, keys, []abi.FieldType{abi.TypeInt}, cells)
	rejected := func(msg string) []string {
		return []string{"0 error " + msg, "1 error " + msg, "2 error " + msg}
	}
	tests := []struct {
		name     string
		op       abi.Op
		register func()
		want     []string
	}{
		{"a map that answers nothing keeps all", abi.OpMap,
			func() { TypedMapBatch(func(*Batch) error { return nil }) },
			[]string{"0 keep", "1 keep", "2 keep"}},
		{"a map keeps the records it skips", abi.OpMap,
			func() {
				TypedMapBatch(func(b *Batch) error { b.Patch(1).SetInt("n", 7); return nil })
			},
			[]string{"0 keep", `1 patch set "n"=int:7`, "2 keep"}},
		{"a patch that sets nothing keeps", abi.OpMap,
			func() { TypedMapBatch(func(b *Batch) error { b.Patch(0); b.Keep(2); return nil }) },
			[]string{"0 keep", "1 keep", "2 keep"}},
		{"a filter that answers nothing drops all", abi.OpFilter,
			func() { TypedFilterBatch(func(*Batch) error { return nil }) },
			nil},
		{"timestamps and keys", abi.OpFilter,
			func() {
				TypedFilterBatch(func(b *Batch) error {
					for i := range b.Len() {
						if k, ok := b.Keys().Get(i); ok && b.Timestamps().Status(i) == Present {
							ts, _ := b.Timestamps().Get(i)
							b.Reject(i, fmt.Errorf("%s@%d", k, ts))
						}
					}
					return nil
				})
			},
			[]string{"0 error a@100", "2 error c@102"}},
		{"an error rejects the batch", abi.OpFilter,
			func() {
				TypedFilterBatch(func(b *Batch) error { b.Keep(0); return errors.New("no") })
			},
			rejected("no")},
		{"answers out of order panic", abi.OpMap,
			func() { TypedMapBatch(func(b *Batch) error { b.Keep(1); b.Keep(0); return nil }) },
			rejected("panic: weir: record 0 answered out of order: the next is 2 of 3")},
		{"a filter does not patch", abi.OpFilter,
			func() { TypedFilterBatch(func(b *Batch) error { b.Patch(0); return nil }) },
			rejected("panic: weir: a filter keeps or rejects; it does not patch")},
		{"a column of another type panics", abi.OpFilter,
			func() { TypedFilterBatch(func(b *Batch) error { b.Bools(0); return nil }) },
			rejected("panic: weir: field 0 is int, not bool")},
		{"bytes of an int field panic", abi.OpFilter,
			func() { TypedFilterBatch(func(b *Batch) error { b.Strings(0); return nil }) },
			rejected("panic: weir: field 0 is int, not string or raw")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := runRegistered(t, tc.op, frame, tc.register); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestBatchRegistration(t *testing.T) {
	tests := []struct {
		name     string
		register func()
		want     string
	}{
		{"batch map after map", func() { TypedMap(double); TypedMapBatch(batchMap) }, "weir: map function already registered"},
		{"map after batch map", func() {
			TypedMapBatch(batchMap)
			Map(func(r *Record) ([]byte, error) { return r.Value, nil })
		}, "weir: map function already registered"},
		{"raw filter after batch filter", func() {
			TypedFilterBatch(batchFilter)
			Filter(func(*Record) (bool, error) { return true, nil })
		}, "weir: filter function already registered"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			setTyped(t, func() {
				defer func() {
					if got := fmt.Sprint(recover()); got != tc.want {
						t.Errorf("panic %q, want %q", got, tc.want)
					}
				}()
				tc.register()
			})
		})
	}
	setTyped(t, func() { TypedFilterBatch(batchFilter) })
	if typedDecl() == nil || registeredOps() != abi.OpFilter.Bit() {
		t.Errorf("a batch filter alone: declaration %v, ops %v", typedDecl(), registeredOps())
	}
}

// TestBatchNoAllocs: a steady stream of batches through a batch map that
// patches does not allocate in the SDK.
func TestBatchNoAllocs(t *testing.T) {
	setTyped(t, func() {
		TypedMapBatch(func(b *Batch) error {
			ns := b.Ints(0)
			for i := range b.Len() {
				if v, ok := ns.Get(i); ok && v%2 == 0 {
					b.Patch(i).SetInt("n", v/2)
				}
			}
			return nil
		})
	})
	frame := genBatch(t, rand.New(rand.NewPCG(1, 2)), 64)
	var p typedProc
	if _, err := p.run(abi.OpMap, frame); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(20, func() { p.run(abi.OpMap, frame) }); a != 0 {
		t.Errorf("%v allocations a batch", a)
	}
}
