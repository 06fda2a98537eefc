package window

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"
)

// hllBiasSeeds is how many independent sketches TestHLLBias averages over:
// the mean relative error of a point then has a standard error of about
// HLLStandardError/√hllBiasSeeds ≈ 0.16%.
const hllBiasSeeds = 100

// hllBiasRow is the error of the estimate at one cardinality over all seeds.
type hllBiasRow struct {
	n      int
	mean   float64 // mean relative error, (estimate-n)/n
	stdErr float64 // standard deviation of the relative error
}

// hllCardinalities are 8 log-spaced cardinalities a decade from 1 to 10^6,
// and a few more about the old switch from linear counting at 2.5·hllM =
// 10,240, where the old estimate was furthest off.
func hllCardinalities() []int {
	ns := []int{9500, 2.5 * hllM, 10500, 11000, 12000}
	for k := 0; k <= 48; k++ {
		ns = append(ns, int(math.Round(math.Pow(10, float64(k)/8))))
	}
	slices.Sort(ns)
	return slices.Compact(ns)
}

// hllRelErrors adds ns[len(ns)-1] distinct values, hashed as hashValue
// hashes integers, to a fresh sketch and returns the relative error of its
// estimate after each of ns.
func hllRelErrors(seed uint64, ns []int) []float64 {
	var d distinct
	d.toHLL()
	errs := make([]float64, 0, len(ns))
	b := make([]byte, 9)
	b[0] = 'n'
	next := 0
	for i := 1; next < len(ns); i++ {
		binary.LittleEndian.PutUint64(b[1:], seed<<32|uint64(i))
		d.hllAdd(hash64(b))
		if i == ns[next] {
			errs = append(errs, float64(d.count()-int64(i))/float64(i))
			next++
		}
	}
	return errs
}

// hllBias measures the estimate's error at each of ns over seeds sketches.
func hllBias(seeds int, ns []int) []hllBiasRow {
	sum := make([]float64, len(ns))
	sumSq := make([]float64, len(ns))
	for s := range seeds {
		for j, e := range hllRelErrors(uint64(s), ns) {
			sum[j] += e
			sumSq[j] += e * e
		}
	}
	rows := make([]hllBiasRow, len(ns))
	for j, n := range ns {
		mean := sum[j] / float64(seeds)
		variance := (sumSq[j] - float64(seeds)*mean*mean) / float64(seeds-1)
		rows[j] = hllBiasRow{n: n, mean: mean, stdErr: math.Sqrt(max(variance, 0))}
	}
	return rows
}

// TestHLLBias holds count_distinct's HyperLogLog estimate to being unbiased
// over the whole range, from 1 to 10^6 distinct values: the mean relative
// error over hllBiasSeeds sketches within ±1% at every cardinality, and the
// spread of the error no more than a quarter above HLLStandardError
// (1.04/√hllM) anywhere, and within a quarter of it once the sketch is past
// its small range (10·hllM). The raw HyperLogLog estimate that took over from
// linear counting at 2.5·hllM was about 2.5% high near 10,000.
func TestHLLBias(t *testing.T) {
	if testing.Short() {
		t.Skip("adds 10^8 values")
	}
	for _, r := range hllBias(hllBiasSeeds, hllCardinalities()) {
		t.Run(fmt.Sprintf("n=%d", r.n), func(t *testing.T) {
			t.Logf("n %7d: mean error %+.3f%%, standard error %.3f%%", r.n, 100*r.mean, 100*r.stdErr)
			if math.Abs(r.mean) > 0.01 {
				t.Errorf("mean relative error %+.3f%%, outside ±1%%", 100*r.mean)
			}
			if r.stdErr > 1.25*HLLStandardError {
				t.Errorf("standard error %.3f%%, above 1.25 × %.3f%%", 100*r.stdErr, 100*HLLStandardError)
			}
			if r.n >= 10*hllM && r.stdErr < 0.75*HLLStandardError {
				t.Errorf("standard error %.3f%%, below 0.75 × %.3f%%", 100*r.stdErr, 100*HLLStandardError)
			}
		})
	}
}

// TestHLLCountEdges checks count on register contents no stream of a few
// values makes: empty, saturated, and corrupt (above hllQ+1).
func TestHLLCountEdges(t *testing.T) {
	fill := func(set func(regs []uint8)) []uint8 {
		regs := make([]uint8, hllM)
		set(regs)
		return regs
	}
	saturate := func(r []uint8) {
		for i := range r {
			r[i] = hllQ + 1
		}
	}
	tests := []struct {
		name string
		regs []uint8
		want int64
	}{
		{"empty", fill(func([]uint8) {}), 0},
		{"one value", fill(func(r []uint8) { r[7] = 1 }), 1},
		{"one register high", fill(func(r []uint8) { r[7] = 40 }), 1},
		{"saturated", fill(saturate), math.MaxInt64},
		{"corrupt counts as saturated", fill(func(r []uint8) { saturate(r); r[0] = 255 }), math.MaxInt64},
		{"corrupt register alone", fill(func(r []uint8) { r[7] = 255 }), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := distinct{approx: true, regs: tt.regs}
			if got := d.count(); got != tt.want {
				t.Errorf("count = %d, want %d", got, tt.want)
			}
		})
	}
}
