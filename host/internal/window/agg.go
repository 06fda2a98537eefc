package window

import (
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"strings"

	"github.com/weir-stream/weir/abi/wjson"
)

// spec is a compiled built-in aggregate.
type spec struct {
	fn    Func
	as    string
	field string // the dotted path, for messages
	path  int    // index into Operator.paths, or -1: no field (AggCount counts records)
	exact int    // AggCountDistinct
}

// input is one aggregate's reading of one record.
type input struct {
	kind inKind
	i    int64
	f    float64
	raw  []byte // AggFirst, AggLast: aliases the record value
	h    uint64 // AggCountDistinct
}

type inKind uint8

const (
	inNone  inKind = iota // absent or null: the aggregate skips the record
	inInt                 // a number written as an integer within int64
	inFloat               // any other number
	inRaw                 // AggFirst, AggLast
	inHash                // AggCountDistinct
)

// read sets in to what aggregate s takes from v, the value at its field,
// or returns why the record cannot be aggregated.
func (s *spec) read(v wjson.Value, in *input, scratch *[]byte) string {
	*in = input{}
	if v.Kind == wjson.Invalid || v.Kind == wjson.Null {
		switch s.fn {
		case AggSum, AggAvg, AggMin, AggMax:
			if v.Kind == wjson.Null {
				return s.fn.String() + "(" + s.field + "): field is null, not a number"
			}
			return s.fn.String() + "(" + s.field + "): field not found"
		}
		return ""
	}
	switch s.fn {
	case AggCount:
		in.kind = inRaw
	case AggSum, AggAvg, AggMin, AggMax:
		if v.Kind != wjson.Number {
			return s.fn.String() + "(" + s.field + "): field is a " + v.Kind.String() + ", not a number"
		}
		if i, err := v.Int(); err == nil {
			in.kind, in.i = inInt, i
			return ""
		}
		f, err := v.Float()
		if err != nil || math.IsInf(f, 0) {
			return s.fn.String() + "(" + s.field + "): number " + string(v.Raw) + " is out of range"
		}
		in.kind, in.f = inFloat, f
	case AggFirst, AggLast:
		in.kind, in.raw = inRaw, v.Raw
	case AggCountDistinct:
		in.kind, in.h = inHash, hashValue(v, scratch)
	}
	return ""
}

// aggVal is one built-in aggregate's accumulator.
type aggVal struct {
	n    int64   // AggCount, AggAvg: values counted
	i    int64   // AggSum, AggMin, AggMax while every value was an integer
	f    float64 // AggSum, AggMin, AggMax once one was not; AggAvg's sum
	mode uint8   // AggSum, AggMin, AggMax: numNone/numInt/numFloat; AggFirst, AggLast: 1 when set
	ts   int64   // AggFirst, AggLast: event time of the kept value
	raw  []byte  // AggFirst, AggLast: the kept value, owned
	d    *distinct
}

const (
	numNone uint8 = iota
	numInt
	numFloat
)

func (v *aggVal) reset() {
	d, raw := v.d, v.raw[:0]
	*v = aggVal{raw: raw, d: d}
	if d != nil {
		d.reset()
	}
}

func (v *aggVal) float() float64 {
	if v.mode == numInt {
		return float64(v.i)
	}
	return v.f
}

// add adds one record's input, of event time ts.
func (v *aggVal) add(s *spec, in *input, ts int64) {
	switch s.fn {
	case AggCount:
		if s.path < 0 || in.kind != inNone {
			v.n++
		}
	case AggSum:
		if in.kind == inInt {
			v.addInt(in.i)
		} else {
			v.addFloat(in.f)
		}
	case AggAvg:
		v.n++
		if in.kind == inInt {
			v.f += float64(in.i)
		} else {
			v.f += in.f
		}
	case AggMin, AggMax:
		v.minMax(s.fn == AggMin, in.kind == inInt, in.i, in.f)
	case AggFirst:
		if in.kind != inNone && (v.mode == 0 || ts < v.ts) {
			v.mode, v.ts, v.raw = 1, ts, append(v.raw[:0], in.raw...)
		}
	case AggLast:
		if in.kind != inNone && (v.mode == 0 || ts >= v.ts) {
			v.mode, v.ts, v.raw = 1, ts, append(v.raw[:0], in.raw...)
		}
	case AggCountDistinct:
		if in.kind != inNone {
			if v.d == nil {
				v.d = &distinct{}
			}
			v.d.add(in.h, s.exact)
		}
	}
}

// addInt adds x to a sum, which stays an integer until it would overflow.
func (v *aggVal) addInt(x int64) {
	switch v.mode {
	case numNone:
		v.mode, v.i = numInt, x
	case numInt:
		s := v.i + x
		if (s > v.i) == (x > 0) {
			v.i = s
			return
		}
		v.mode, v.f = numFloat, float64(v.i)+float64(x)
	default:
		v.f += float64(x)
	}
}

func (v *aggVal) addFloat(x float64) {
	if v.mode != numFloat {
		v.f = v.float()
		v.mode = numFloat
	}
	v.f += x
}

func (v *aggVal) minMax(isMin, isInt bool, i int64, f float64) {
	if v.mode == numNone {
		if isInt {
			v.mode, v.i = numInt, i
		} else {
			v.mode, v.f = numFloat, f
		}
		return
	}
	if isInt && v.mode == numInt {
		if (i < v.i) == isMin && i != v.i {
			v.i = i
		}
		return
	}
	if isInt {
		f = float64(i)
	}
	cur := v.float()
	v.mode = numFloat
	v.f = cur
	if (f < cur) == isMin && f != cur {
		v.f = f
	}
}

// merge adds o's values into v. For AggFirst and AggLast between equal
// times, v is taken as the earlier arrival.
func (v *aggVal) merge(s *spec, o *aggVal) {
	switch s.fn {
	case AggCount:
		v.n += o.n
	case AggSum:
		switch {
		case o.mode == numNone:
		case o.mode == numInt:
			v.addInt(o.i)
		default:
			v.addFloat(o.f)
		}
	case AggAvg:
		v.n += o.n
		v.f += o.f
	case AggMin, AggMax:
		if o.mode != numNone {
			v.minMax(s.fn == AggMin, o.mode == numInt, o.i, o.f)
		}
	case AggFirst:
		if o.mode != 0 && (v.mode == 0 || o.ts < v.ts) {
			v.mode, v.ts, v.raw = 1, o.ts, append(v.raw[:0], o.raw...)
		}
	case AggLast:
		if o.mode != 0 && (v.mode == 0 || o.ts >= v.ts) {
			v.mode, v.ts, v.raw = 1, o.ts, append(v.raw[:0], o.raw...)
		}
	case AggCountDistinct:
		if o.d != nil {
			if v.d == nil {
				v.d = &distinct{}
			}
			v.d.merge(o.d, s.exact)
		}
	}
}

// write writes v's result.
func (v *aggVal) write(s *spec, w *wjson.Writer) {
	switch s.fn {
	case AggCount:
		w.Int(v.n)
	case AggSum, AggMin, AggMax:
		switch v.mode {
		case numInt:
			w.Int(v.i)
		case numFloat:
			w.Float(v.f)
		default:
			w.Null()
		}
	case AggAvg:
		if v.n == 0 {
			w.Null()
		} else {
			w.Float(v.f / float64(v.n))
		}
	case AggFirst, AggLast:
		if v.mode == 0 {
			w.Null()
		} else {
			w.Raw(v.raw)
		}
	case AggCountDistinct:
		if v.d == nil {
			w.Int(0)
		} else {
			w.Int(v.d.count())
		}
	}
}

// appendState appends v's encoding (see the package documentation).
func (v *aggVal) appendState(b []byte, s *spec) []byte {
	switch s.fn {
	case AggCount:
		b = binary.AppendUvarint(b, uint64(v.n))
	case AggSum, AggMin, AggMax:
		b = append(b, v.mode)
		switch v.mode {
		case numInt:
			b = binary.AppendVarint(b, v.i)
		case numFloat:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.f))
		}
	case AggAvg:
		b = binary.AppendUvarint(b, uint64(v.n))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.f))
	case AggFirst, AggLast:
		b = append(b, v.mode)
		if v.mode != 0 {
			b = binary.AppendVarint(b, v.ts)
			b = binary.AppendUvarint(b, uint64(len(v.raw)))
			b = append(b, v.raw...)
		}
	case AggCountDistinct:
		if v.d == nil {
			return append(b, 0, 0) // exact, empty
		}
		b = v.d.appendState(b)
	}
	return b
}

var errCorrupt = errors.New("window state is corrupt")

// decodeState sets v from the encoding at the start of b and returns the
// rest of b.
func (v *aggVal) decodeState(b []byte, s *spec) ([]byte, error) {
	v.reset()
	uvar := func() uint64 {
		x, n := binary.Uvarint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return x
	}
	svar := func() int64 {
		x, n := binary.Varint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return x
	}
	f64 := func() float64 {
		if len(b) < 8 {
			b = nil
			return 0
		}
		x := math.Float64frombits(binary.LittleEndian.Uint64(b))
		b = b[8:]
		return x
	}
	ok := true
	switch s.fn {
	case AggCount:
		ok = len(b) > 0
		v.n = int64(uvar())
	case AggSum, AggMin, AggMax:
		if len(b) == 0 {
			return nil, errCorrupt
		}
		v.mode, b = b[0], b[1:]
		switch v.mode {
		case numNone:
		case numInt:
			ok = len(b) > 0
			v.i = svar()
		case numFloat:
			ok = len(b) >= 8
			v.f = f64()
		default:
			return nil, errCorrupt
		}
	case AggAvg:
		ok = len(b) > 0
		v.n = int64(uvar())
		ok = ok && len(b) >= 8
		v.f = f64()
	case AggFirst, AggLast:
		if len(b) == 0 || b[0] > 1 {
			return nil, errCorrupt
		}
		v.mode, b = b[0], b[1:]
		if v.mode != 0 {
			ok = len(b) > 0
			v.ts = svar()
			n := uvar()
			if !ok || uint64(len(b)) < n || b == nil {
				return nil, errCorrupt
			}
			v.raw = append(v.raw[:0], b[:n]...)
			b = b[n:]
		}
	case AggCountDistinct:
		if v.d == nil {
			v.d = &distinct{}
		}
		var err error
		if b, err = v.d.decodeState(b); err != nil {
			return nil, err
		}
	}
	if !ok || b == nil {
		return nil, errCorrupt
	}
	return b, nil
}

// hashValue hashes a JSON value for AggCountDistinct, so that equal values
// hash alike: a string by its decoded text, a number by its numeric value
// (1, 1.0 and 1e0 are one value), anything else by its text.
func hashValue(v wjson.Value, scratch *[]byte) uint64 {
	b := (*scratch)[:0]
	switch v.Kind {
	case wjson.String:
		b = append(b, 's')
		b = v.AppendString(b)
	case wjson.Number:
		b = append(b, 'n')
		if i, err := v.Int(); err == nil {
			b = binary.LittleEndian.AppendUint64(b, uint64(i))
		} else if f, err := v.Float(); err == nil {
			if t := math.Trunc(f); t == f && f >= -(1<<63) && f < 1<<63 {
				b = binary.LittleEndian.AppendUint64(b, uint64(int64(f)))
			} else {
				b = append(b, 'f')
				b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
			}
		} else {
			b = append(b, v.Raw...)
		}
	default:
		b = append(b, 'r')
		b = append(b, v.Raw...)
	}
	*scratch = b
	return hash64(b)
}

// hash64 is 64-bit FNV-1a followed by MurmurHash3's finalizer, which spreads
// FNV's weak high bits: HyperLogLog reads the top bits for its register.
func hash64(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// HyperLogLog parameters: 2^12 registers of one byte each, a standard error
// of 1.04/√4096 ≈ 1.6%.
const (
	hllP = 12
	hllM = 1 << hllP
)

// HLLStandardError is the relative standard error of AggCountDistinct's
// estimate once it counts more than Aggregate.Exact distinct values: about
// 1.6%, so that about 99.7% of estimates fall within 3 standard errors
// (4.9%) of the true count.
const HLLStandardError = 1.04 / 64 // 1.04/√hllM

// distinct is AggCountDistinct's accumulator: the sorted hashes of the
// values seen, exactly, until there are more than the exact limit; then a
// HyperLogLog.
type distinct struct {
	set    []uint64
	approx bool
	regs   []uint8 // len hllM once approx
}

func (d *distinct) reset() {
	d.set = d.set[:0]
	d.approx = false
}

func (d *distinct) add(h uint64, exact int) {
	if d.approx {
		d.hllAdd(h)
		return
	}
	i, found := searchU64(d.set, h)
	if found {
		return
	}
	d.set = append(d.set, 0)
	copy(d.set[i+1:], d.set[i:])
	d.set[i] = h
	if len(d.set) > exactLimit(exact) {
		d.toHLL()
	}
}

func exactLimit(exact int) int {
	if exact == 0 {
		return DefaultExact
	}
	return exact
}

func searchU64(s []uint64, h uint64) (int, bool) {
	lo, hi := 0, len(s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s[m] < h {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(s) && s[lo] == h
}

func (d *distinct) toHLL() {
	if cap(d.regs) < hllM {
		d.regs = make([]uint8, hllM)
	}
	d.regs = d.regs[:hllM]
	clear(d.regs)
	d.approx = true
	for _, h := range d.set {
		d.hllAdd(h)
	}
	d.set = d.set[:0]
}

func (d *distinct) hllAdd(h uint64) {
	idx := h >> (64 - hllP)
	rank := uint8(bits.LeadingZeros64(h<<hllP|1<<(hllP-1))) + 1
	if rank > d.regs[idx] {
		d.regs[idx] = rank
	}
}

func (d *distinct) merge(o *distinct, exact int) {
	switch {
	case o.approx:
		if !d.approx {
			d.toHLL()
		}
		for i, r := range o.regs {
			if r > d.regs[i] {
				d.regs[i] = r
			}
		}
	case d.approx:
		for _, h := range o.set {
			d.hllAdd(h)
		}
	default:
		for _, h := range o.set {
			d.add(h, exact)
			if d.approx {
				break // add converted d; fall back to adding the rest to the HLL
			}
		}
		if d.approx {
			for _, h := range o.set {
				d.hllAdd(h)
			}
		}
	}
}

func (d *distinct) count() int64 {
	if !d.approx {
		return int64(len(d.set))
	}
	e := math.Round(hllEstimate(d.regs))
	if e >= math.MaxInt64 { // +Inf once every register is saturated
		return math.MaxInt64
	}
	return int64(e)
}

// hllQ is the number of hash bits below a register's index that hllAdd
// reads a rank from: ranks run from 1 to hllQ+1.
const hllQ = 64 - hllP

// hllEstimate is the cardinality estimate of the hllM registers regs, by
// Ertl's improved estimator ("New cardinality estimation algorithms for
// HyperLogLog sketches", 2017, algorithm 6; Redis's since 5.0). Computed
// from the histogram of the register values, it needs neither linear
// counting for small counts nor empirical bias correction: the classic
// estimator's switch from linear counting at 2.5·hllM left it about 2.5%
// high there. It is +Inf when every register is saturated, and 0 when none
// is set. A register above hllQ+1, possible only in corrupt state, counts as
// hllQ+1.
func hllEstimate(regs []uint8) float64 {
	var hist [hllQ + 2]int
	for _, r := range regs {
		hist[min(int(r), hllQ+1)]++
	}
	const m = float64(hllM)
	if hist[0] == len(regs) {
		return 0
	}
	z := m * hllTau(1-float64(hist[hllQ+1])/m)
	for k := hllQ; k >= 1; k-- {
		z = 0.5 * (z + float64(hist[k]))
	}
	z += m * hllSigma(float64(hist[0])/m)
	return m * m / (2 * math.Ln2 * z)
}

// hllSigma is Ertl's σ(x) = x + Σ_{k≥1} x^(2^k)·2^(k-1), for 0 <= x < 1,
// summed until the terms no longer change it.
func hllSigma(x float64) float64 {
	y, z := 1.0, x
	for {
		x *= x
		next := z + x*y
		if next == z {
			return z
		}
		z, y = next, y+y
	}
}

// hllTau is Ertl's τ(x) = (1 - x - Σ_{k≥1} (1 - x^(2^-k))²·2^-k) / 3, for
// 0 <= x <= 1, summed until the terms no longer change it.
func hllTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		y *= 0.5
		next := z - (1-x)*(1-x)*y
		if next == z {
			return z / 3
		}
		z = next
	}
}

// appendState encodes d: 0, uvarint n, n little-endian hashes while exact;
// 1 and the hllM registers once approximate.
func (d *distinct) appendState(b []byte) []byte {
	if d.approx {
		b = append(b, 1)
		return append(b, d.regs...)
	}
	b = append(b, 0)
	b = binary.AppendUvarint(b, uint64(len(d.set)))
	for _, h := range d.set {
		b = binary.LittleEndian.AppendUint64(b, h)
	}
	return b
}

func (d *distinct) decodeState(b []byte) ([]byte, error) {
	d.reset()
	if len(b) == 0 {
		return nil, errCorrupt
	}
	switch b[0] {
	case 0:
		n, k := binary.Uvarint(b[1:])
		if k <= 0 || n > MaxExact+1 || uint64(len(b)-1-k) < 8*n {
			return nil, errCorrupt
		}
		b = b[1+k:]
		for range n {
			d.set = append(d.set, binary.LittleEndian.Uint64(b))
			b = b[8:]
		}
	case 1:
		if len(b) < 1+hllM {
			return nil, errCorrupt
		}
		d.approx = true
		d.regs = append(d.regs[:0], b[1:1+hllM]...)
		b = b[1+hllM:]
	default:
		return nil, errCorrupt
	}
	return b, nil
}

// fieldText is the dotted form of a path.
func fieldText(path []string) string {
	if len(path) == 0 {
		return "*"
	}
	return strings.Join(path, ".")
}
