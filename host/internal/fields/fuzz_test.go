package fields

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/abi/wjson"
)

// The reference of these fuzz tests is encoding/json: a document decoded
// with UseNumber into maps, paths looked up and patches applied there.

// fuzzFields declares a field of each type, nested paths, a path that is
// a prefix of others and an escaped name.
var fuzzFields = []abi.FieldDecl{
	{Path: "a", Type: abi.TypeInt}, {Path: "b", Type: abi.TypeFloat}, {Path: "c", Type: abi.TypeBool},
	{Path: "d", Type: abi.TypeString}, {Path: "e", Type: abi.TypeRaw}, {Path: "a.b", Type: abi.TypeInt},
	{Path: "n.s", Type: abi.TypeString}, {Path: `k\.1`, Type: abi.TypeRaw}, {Path: "n.m.f", Type: abi.TypeFloat},
	{Path: "n", Type: abi.TypeRaw},
}

var extractSeeds = []string{
	`{"a":1,"b":2.5,"c":true,"d":"x","e":[1,{"z":null}],"n":{"s":"caf\u00e9 \ud83d\ude00","m":{"f":1e400}},"k.1":{}}`,
	`{"a":9007199254740993,"b":0.30000000000000004,"c":false,"d":"","e":"","n":{"s":"\ud800x","m":{"f":-0.0}}}`,
	`{"a":1.0,"b":1e3,"a":12.5e1,"d":"\"\\\/\b\f\n\r\t","n":null}`,
	`{"a":{"b":-9223372036854775808},"a":{"c":1},"b":"1","c":1,"d":2,"e":null}`,
	`{"a":1e19,"b":1e-400,"n":{"m":{"f":5},"m":[]},"k\u002e1":7}`,
	`{"a":123456789012345678901234567890e-20,"b":-1.7976931348623157e308}`,
	`[{"a":1}]`, `null`, `"a"`, `{}`, `{"a":}`, `{"a":1`, "{\"d\":\"\xff\"}",
	strings.Repeat(`{"n":`, 50) + `{"s":"deep"}` + strings.Repeat(`}`, 50),
}

// refField is what the reference finds for a field.
type refField struct {
	status abi.ValueStatus
	why    why
	val    any  // the decoded value
	skip   bool // a number the reference cannot judge cheaply
}

// FuzzExtract holds Extract to the reference for a batch of two records,
// under the policies the bits of pol choose.
func FuzzExtract(f *testing.F) {
	for i, s := range extractSeeds {
		f.Add([]byte(s), []byte(extractSeeds[(i+1)%len(extractSeeds)]), uint32(i)*0x9e3779b9, i%3 == 0)
	}
	f.Fuzz(func(t *testing.T, doc1, doc2 []byte, pol uint32, nil2 bool) {
		fields := make([]abi.FieldDecl, len(fuzzFields))
		for k, fd := range fuzzFields {
			fd.Flags = abi.FieldFlags(pol >> (2 * k) & 3)
			fields[k] = fd
		}
		recs := []Record{{Timestamp: 1, Key: doc2, Value: doc1}, {Timestamp: 2, Value: doc2}}
		if nil2 {
			recs[1].Value = nil
		}
		b, err := NewExtractor(mustDecl(t, fields...)).Extract(recs)
		if err != nil {
			t.Fatal(err)
		}
		var tb abi.TypedBatch
		if _, err := tb.Reset(b.Frame); err != nil {
			t.Fatalf("the frame does not decode: %v", err)
		}
		kept, rejected := 0, 0
		for i, r := range recs {
			want, reason := refRecord(t, r.Value, fields)
			if reason == "skip" {
				return // a number the reference cannot afford to judge
			}
			if reason != "" {
				if rejected >= len(b.Rejects) || b.Rejects[rejected].Index != i || !strings.HasPrefix(b.Rejects[rejected].Reason, reason) {
					t.Fatalf("record %d: rejects %+v, want one starting %q", i, b.Rejects, reason)
				}
				rejected++
				continue
			}
			if kept >= len(b.Kept) || b.Kept[kept] != i {
				t.Fatalf("record %d: kept %v, rejects %+v", i, b.Kept, b.Rejects)
			}
			checkRecord(t, &tb, kept, r, want)
			kept++
		}
		if kept != len(b.Kept) || rejected != len(b.Rejects) {
			t.Fatalf("kept %v and rejected %+v, want %d and %d", b.Kept, b.Rejects, kept, rejected)
		}
	})
}

// refRecord looks the fields up in doc, returning them or the start of the
// reason to reject the record.
func refRecord(t *testing.T, doc []byte, fields []abi.FieldDecl) ([]refField, string) {
	var v any
	if doc != nil {
		if !json.Valid(doc) {
			return nil, "value is not JSON: "
		}
		v = decodeNumbers(t, doc)
	}
	out := make([]refField, len(fields))
	for k, fd := range fields {
		segs, _ := abi.SplitPath(fd.Path)
		out[k] = refLookup(v, doc != nil, segs, fd.Type)
		q := "field " + strconv.Quote(fd.Path) + ": "
		switch s := out[k].status; {
		case out[k].skip:
			return nil, "skip"
		case s == abi.ValueMissing && fd.Flags&abi.FieldRequired != 0:
			return nil, q + "missing"
		case s == abi.ValueNull && fd.Flags&abi.FieldRequired != 0:
			return nil, q + "null"
		case s == abi.ValueMismatch && fd.Flags&abi.FieldStrict != 0:
			return nil, q + "want " + fd.Type.String() + ", found "
		}
	}
	return out, ""
}

func decodeNumbers(t *testing.T, doc []byte) any {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("encoding/json validates %q but does not decode it: %v", doc, err)
	}
	return v
}

func refLookup(v any, present bool, segs []string, typ abi.FieldType) refField {
	for _, s := range segs {
		m, ok := v.(map[string]any)
		if !ok || !present {
			return refField{status: abi.ValueMissing}
		}
		if v, ok = m[s]; !ok {
			return refField{status: abi.ValueMissing}
		}
	}
	if v == nil {
		return refField{status: abi.ValueNull}
	}
	mismatch := refField{status: abi.ValueMismatch}
	switch x := v.(type) {
	case json.Number:
		return refNumber(x, typ)
	case bool:
		if typ == abi.TypeBool || typ == abi.TypeRaw {
			return refField{val: x}
		}
	case string:
		if typ == abi.TypeString || typ == abi.TypeRaw {
			return refField{val: x}
		}
	default:
		if typ == abi.TypeRaw {
			return refField{val: x}
		}
	}
	return mismatch
}

func refNumber(n json.Number, typ abi.FieldType) refField {
	switch typ {
	case abi.TypeRaw:
		return refField{val: n}
	case abi.TypeFloat:
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return refField{status: abi.ValueMismatch, why: whyFloat64}
		}
		return refField{val: f}
	case abi.TypeInt:
		return refInt(string(n))
	}
	return refField{status: abi.ValueMismatch}
}

// refInt judges an int with math/big, for exponents it can afford; a
// number with a larger one is not an integer within int64, unless its
// digits are all zeros or so many that they could make up for it.
func refInt(n string) refField {
	if i := strings.IndexAny(n, "eE"); i >= 0 {
		exp, err := strconv.Atoi(strings.TrimPrefix(n[i+1:], "+"))
		switch {
		case err == nil && exp >= -1000 && exp <= 1000:
		case strings.Trim(n[:i], "-0.") == "":
			return refField{val: int64(0)}
		case i > 900:
			return refField{skip: true}
		case n[i+1] == '-':
			return refField{status: abi.ValueMismatch, why: whyFraction}
		default:
			return refField{status: abi.ValueMismatch, why: whyInt64}
		}
	}
	r, ok := new(big.Rat).SetString(n)
	switch {
	case !ok:
		return refField{skip: true}
	case !r.IsInt():
		return refField{status: abi.ValueMismatch, why: whyFraction}
	case !r.Num().IsInt64():
		return refField{status: abi.ValueMismatch, why: whyInt64}
	}
	return refField{val: r.Num().Int64()}
}

// checkRecord holds kept record j of the frame to the input r and the
// reference's fields.
func checkRecord(t *testing.T, tb *abi.TypedBatch, j int, r Record, want []refField) {
	if tb.Timestamp(j) != r.Timestamp || !bytes.Equal(tb.Key(j), r.Key) || (tb.Key(j) == nil) != (r.Key == nil) {
		t.Fatalf("record %d: timestamp %d key %q", j, tb.Timestamp(j), tb.Key(j))
	}
	for k, w := range want {
		c := tb.Field(k)
		if w.skip {
			continue
		}
		if c.Status(j) != w.status {
			t.Fatalf("record %d field %q: status %v, want %v (%v)", j, fuzzFields[k].Path, c.Status(j), w.status, w.val)
		}
		if w.status != abi.ValuePresent {
			continue
		}
		if got := columnValue(t, c, j); !reflect.DeepEqual(got, w.val) {
			t.Fatalf("record %d field %q: %#v, want %#v", j, fuzzFields[k].Path, got, w.val)
		}
		if c.Type == abi.TypeRaw && !bytes.Contains(r.Value, c.Bytes(j)) {
			t.Fatalf("record %d field %q: raw %q is not the source text", j, fuzzFields[k].Path, c.Bytes(j))
		}
	}
}

func columnValue(t *testing.T, c abi.Column, j int) any {
	switch c.Type {
	case abi.TypeInt:
		return c.Int(j)
	case abi.TypeFloat:
		return c.Float(j)
	case abi.TypeBool:
		return c.Bool(j)
	case abi.TypeString:
		return string(c.Bytes(j))
	}
	return decodeNumbers(t, c.Bytes(j))
}

var patchSeeds = []struct{ doc, spec string }{
	{`{"a":1,"b":{"c":2},"d":[1]}`, "ia;fb.c;s-x.y=é;rd"},
	{` { "a" : 1 , "a" : 2 } `, "ra;ib"},
	{`{"caf\u00e9":{"x":null},"k.1":3}`, `icafé.x.y;rk\.1;jz=[1, {"q":"\ud83d\ude00"}]`},
	{`{"u":"str"}`, "iu.v"},
	{`{"u":null,"v":[]}`, "iu.v.w;rv.x;nv"},
	{`[1,2]`, "ia;ra"},
	{`null`, "bx"},
	{`{}`, "j=[1];ia"},
	{`{"a":1}`, "ja={"},
	{`{"a":1,}`, "ra"},
	{`{"a":{"b":{"c":{"d":1}}},"a":{"b":2}}`, "ia.b.c;ra.b"},
	{`{"big":9007199254740993,"f":1e400,"s":"\u0000"}`, "fg;rbig;s\u00e9=\xff"},
}

// FuzzApplyPatch holds ApplyPatch to the reference: the patched document
// must decode to what the operations make of the decoded input, and keep
// the bytes and order of the top-level members no operation touches.
//
// spec holds operations separated by ';': a letter (i int, f float, b
// bool, n null, s string, j raw, r remove), the path, and for s and j
// '=' and the value.
func FuzzApplyPatch(f *testing.F) {
	for i, s := range patchSeeds {
		f.Add([]byte(s.doc), s.spec, 0.30000000000000004*float64(i), int64(9007199254740993)*int64(i-5), i == 6)
	}
	f.Fuzz(func(t *testing.T, doc []byte, spec string, fv float64, iv int64, isNil bool) {
		if isNil {
			doc = nil
		}
		ops, ok := buildOps(spec, fv, iv)
		if !ok {
			return
		}
		var p Patcher
		out, err := p.ApplyPatch(doc, ops)
		want, werr := refPatch(t, doc, ops)
		switch {
		case werr != nil && err == nil:
			t.Fatalf("ApplyPatch = %s, want an error: %v", out, werr)
		case werr == nil && err != nil:
			t.Fatalf("ApplyPatch: %v", err)
		case err != nil:
			if errors.Is(err, ErrBadRawValue) != errors.Is(werr, ErrBadRawValue) {
				t.Fatalf("ApplyPatch: %v, want %v", err, werr)
			}
			return
		}
		checkPatched(t, doc, out, ops, want)
	})
}

func buildOps(spec string, fv float64, iv int64) (abi.PatchOps, bool) {
	var w abi.TypedOutputWriter
	w.Reset()
	w.BeginPatch(0, 0, nil, 0)
	for _, s := range strings.Split(spec, ";") {
		if s == "" {
			continue
		}
		path, val, _ := strings.Cut(s[1:], "=")
		switch s[0] {
		case 'i':
			w.SetInt(path, iv)
		case 'f':
			w.SetFloat(path, fv)
		case 'b':
			w.SetBool(path, iv&1 == 1)
		case 'n':
			w.SetNull(path)
		case 's':
			w.SetString(path, val)
		case 'j':
			w.SetRaw(path, []byte(val))
		default:
			w.Remove(path)
		}
	}
	var r abi.TypedOutputReader
	var e abi.TypedEntry
	if _, err := r.Reset(w.Bytes()); err != nil {
		return abi.PatchOps{}, false
	}
	if ok, err := r.Next(&e); !ok || err != nil {
		return abi.PatchOps{}, false // a malformed path
	}
	return e.Ops, true
}

// refState is the reference's value: a decoded document, no value, or
// the input's text when it is not JSON.
type refState struct {
	v       any
	absent  bool
	invalid bool
}

// refFloat is a float the patch set, which the output holds as a number.
type refFloat float64

func refPatch(t *testing.T, doc []byte, ops abi.PatchOps) (refState, error) {
	s := refState{absent: doc == nil, invalid: doc != nil && !json.Valid(doc)}
	if !s.absent && !s.invalid {
		s.v = decodeNumbers(t, doc)
	}
	for _, op := range ops.All() {
		if err := s.apply(t, &op); err != nil {
			return s, err
		}
	}
	if !s.absent && !s.invalid && depth(s.v) > wjson.MaxDepth {
		return s, errors.New("too deep")
	}
	return s, nil
}

// depth is the nesting of the containers of a decoded value.
func depth(v any) int {
	d := 0
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	case []any:
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	}
	return 0
}

func (s *refState) apply(t *testing.T, op *abi.PatchOp) error {
	if len(op.Path) == 0 {
		v, err := refValue(t, op)
		*s = refState{v: v}
		return err
	}
	segs, _ := abi.SplitPath(string(op.Path))
	switch _, isMap := s.v.(map[string]any); {
	case s.invalid:
		return errors.New("not JSON")
	case op.Kind == abi.PatchOpRemove:
		if isMap {
			refRemove(s.v.(map[string]any), segs)
		}
		return nil
	case s.absent || s.v == nil:
		*s = refState{v: map[string]any{}}
	case !isMap:
		return errors.New("not an object")
	}
	return refSet(t, s.v.(map[string]any), segs, op)
}

func refSet(t *testing.T, m map[string]any, segs []string, op *abi.PatchOp) error {
	for _, seg := range segs[:len(segs)-1] {
		switch next := m[seg].(type) {
		case map[string]any:
			m = next
		case nil:
			n := map[string]any{}
			m[seg], m = n, n
		default:
			return errors.New("not an object on the way")
		}
	}
	v, err := refValue(t, op)
	m[segs[len(segs)-1]] = v
	return err
}

func refRemove(m map[string]any, segs []string) {
	for _, seg := range segs[:len(segs)-1] {
		next, ok := m[seg].(map[string]any)
		if !ok {
			return
		}
		m = next
	}
	delete(m, segs[len(segs)-1])
}

func refValue(t *testing.T, op *abi.PatchOp) (any, error) {
	switch op.Type {
	case abi.TypeInt:
		return json.Number(strconv.FormatInt(op.Int, 10)), nil
	case abi.TypeFloat:
		if math.IsNaN(op.Float) || math.IsInf(op.Float, 0) {
			return nil, nil
		}
		return refFloat(op.Float), nil
	case abi.TypeBool:
		return op.Bool, nil
	case abi.TypeString:
		// encoding/json's replacement of invalid UTF-8, as AppendQuote's.
		q, _ := json.Marshal(string(op.Bytes))
		var s string
		return s, json.Unmarshal(q, &s)
	case abi.TypeRaw:
		if !json.Valid(op.Bytes) {
			return nil, ErrBadRawValue
		}
		return decodeNumbers(t, op.Bytes), nil
	}
	return nil, nil
}

// checkPatched checks the output of a patch that applied.
func checkPatched(t *testing.T, doc, out []byte, ops abi.PatchOps, want refState) {
	if want.absent || want.invalid {
		if !bytes.Equal(out, doc) || (out == nil) != (doc == nil) {
			t.Fatalf("ApplyPatch = %q, want the input %q unchanged", out, doc)
		}
		return
	}
	if !json.Valid(out) {
		t.Fatalf("ApplyPatch = %q: not JSON", out)
	}
	if got := decodeNumbers(t, out); !sameJSON(got, want.v) {
		t.Fatalf("ApplyPatch = %s\ndecoded %#v\n   want %#v", out, got, want.v)
	}
	touched := map[string]bool{}
	for _, op := range ops.All() {
		if len(op.Path) == 0 {
			return // the whole value was replaced
		}
		segs, _ := abi.SplitPath(string(op.Path))
		touched[segs[0]] = true
	}
	if a, b := untouched(doc, touched), untouched(out, touched); a != b {
		t.Fatalf("the untouched members changed:\n%s\nbecame\n%s", a, b)
	}
}

// untouched lists the top-level members of doc not named in touched, as
// their exact text, in order.
func untouched(doc []byte, touched map[string]bool) string {
	var b strings.Builder
	wjson.Each(doc, func(k, v wjson.Value) bool {
		if !touched[k.String()] {
			b.WriteString(string(k.Raw) + ":" + string(v.Raw) + "\n")
		}
		return true
	})
	return b.String()
}

// sameJSON compares a decoded output with the reference, whose floats set
// by the patch must read back to the same bits.
func sameJSON(got, want any) bool {
	switch w := want.(type) {
	case refFloat:
		n, ok := got.(json.Number)
		f, err := strconv.ParseFloat(string(n), 64)
		return ok && err == nil && math.Float64bits(f) == math.Float64bits(float64(w))
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for k, wv := range w {
			if gv, ok := g[k]; !ok || !sameJSON(gv, wv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !sameJSON(g[i], w[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(got, want)
}

// FuzzApplyPatchAt holds ApplyPatchAt to ApplyPatch: for a record that
// Extract keeps under fuzzFields, patching at its spans gives the same
// bytes, or the same error, as patching by reading it again.
func FuzzApplyPatchAt(f *testing.F) {
	for i, s := range extractSeeds {
		f.Add([]byte(s), patchSeeds[i%len(patchSeeds)].spec+";ia;fb;sd=x;nn.s", 0.1*float64(i), int64(i)<<40)
	}
	f.Add([]byte(`{"a":1,"b":2,"a":3}`), "ia;fb", 2.5, int64(-7))
	f.Add([]byte(` { "n" : { "s" : "x" } , "d" : "y" } `), "sn.s=é;bd;in", 0.0, int64(1))
	f.Add([]byte(`{"n":{"m":{"f":1}},"e":[]}`), "fn.m.f;ie;fn.m.f", 1e300, int64(0))
	f.Add([]byte(`{}`), "ia;fb;sd=x", 0.5, int64(3))
	f.Add([]byte(" { \n} "), "sd=é;nc", 0.5, int64(3))
	f.Add([]byte(`{"x":[1,{"a":2}] , "b":true }`+"\n"), "ia;fb;ia", -0.0, int64(-1))
	f.Add([]byte(`{"x":1}`), "in.s;bc", 1.0, int64(1))
	d, err := NewDecl(fuzzFields...)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, doc []byte, spec string, fv float64, iv int64) {
		ops, ok := buildOps(spec, fv, iv)
		if !ok {
			return
		}
		b, err := NewExtractor(d).Extract([]Record{{Value: doc}})
		if err != nil || len(b.Kept) == 0 {
			return
		}
		var at, full Patcher
		got, gerr := at.ApplyPatchAt(doc, ops, d, b.Spans[:d.Len()])
		want, werr := full.ApplyPatch(doc, ops)
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Fatalf("ApplyPatchAt: %v, ApplyPatch: %v", gerr, werr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("ApplyPatchAt = %s\nApplyPatch   = %s", got, want)
		}
	})
}
