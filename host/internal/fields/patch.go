package fields

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/abi/wjson"
)

// ErrBadRawValue is wrapped by the PatchError of a set whose raw value is
// not one JSON value: a guest bug, unlike the other PatchErrors, which
// are about the record.
var ErrBadRawValue = errors.New("the raw value is not one JSON value")

// PatchError reports an operation that could not be applied to a record
// value. It is not modified after it is returned.
type PatchError struct {
	Op     int // the operation's index in the patch
	Kind   abi.PatchOpKind
	Path   string // the operation's path
	Reason string
	Err    error // ErrBadRawValue, or nil
}

func (e *PatchError) Error() string {
	return "patch op " + strconv.Itoa(e.Op) + " (" + e.Kind.String() + " " + strconv.Quote(e.Path) + "): " + e.Reason
}

// Unwrap returns ErrBadRawValue for a bad raw value, or nil.
func (e *PatchError) Unwrap() error { return e.Err }

func patchError(i int, op *abi.PatchOp, err error) *PatchError {
	pe := &PatchError{Op: i, Kind: op.Kind, Path: string(op.Path), Reason: err.Error()}
	var se *wjson.SyntaxError
	switch {
	case errors.Is(err, ErrBadRawValue):
		pe.Err = ErrBadRawValue
	case errors.As(err, &se):
		pe.Reason = "the value is not JSON: " + err.Error()
	}
	return pe
}

// Patcher applies patches to record values (see the package
// documentation). It keeps its buffers from one call to the next, so that
// patching does not allocate once they have grown. It must be used by one
// goroutine at a time.
type Patcher struct {
	bufs    [2][]byte       // the results of alternate operations
	segs    [][]byte        // the path of the operation being applied
	segBuf  []byte          // the unescaped segments of that path
	name    []byte          // a decoded member name
	members []member        // the members of the object a remove applies to
	edits   [maxSplice]edit // ApplyPatchAt's, reused: not zeroed per call
}

// member is one member of an object, by offsets in the object's text.
type member struct {
	key, end int // where its name starts and its value ends
	drop     bool
}

// ApplyPatch applies ops, in order, to the record value doc (nil for no
// value; pass {} for a patch with abi.PatchFlagNew), and returns the
// value they make. The result aliases doc when ops is empty, and
// otherwise the Patcher's buffers, until its next call. An error is a
// *PatchError.
func (p *Patcher) ApplyPatch(doc []byte, ops abi.PatchOps) ([]byte, error) {
	cur, which := doc, 0
	var set abi.PatchOp
	for i, op := range ops.All() {
		if op.Kind == abi.PatchOpSet {
			set = op
		}
		if cur == nil && op.Kind == abi.PatchOpRemove {
			continue // no value has no field to remove
		}
		out, err := p.apply(p.bufs[which][:0], cur, &op)
		if err != nil {
			return nil, patchError(i, &op, err)
		}
		p.bufs[which], cur, which = out, out, which^1
	}
	// A set may nest objects, or a raw value, deeper than JSON's limit.
	// That takes more bytes than the limit, so only long values are read
	// again.
	if set.Kind == abi.PatchOpSet && len(cur) > wjson.MaxDepth && !wjson.Valid(cur) {
		return nil, patchError(ops.Len()-1, &set, errors.New("the patched value nests deeper than "+strconv.Itoa(wjson.MaxDepth)))
	}
	return cur, nil
}

// emptyObject is the value a set patches in place of no value or null.
var emptyObject = []byte("{}")

// apply appends to dst the result of op on doc.
func (p *Patcher) apply(dst, doc []byte, op *abi.PatchOp) ([]byte, error) {
	if len(op.Path) == 0 {
		return appendValue(dst, op)
	}
	var err error
	if p.segs, p.segBuf, err = abi.AppendPathSegments(p.segs[:0], p.segBuf[:0], op.Path); err != nil {
		return dst, err
	}
	if doc == nil {
		doc = emptyObject
	}
	if i := skipSpace(doc); i < len(doc) && doc[i] == '{' {
		// An object, validated as it is scanned: one pass, not two.
		if op.Kind == abi.PatchOpRemove {
			return p.remove(dst, doc, p.segs)
		}
		return p.set(dst, doc, p.segs, op)
	}
	v, err := wjson.Parse(doc)
	if err != nil {
		return dst, err
	}
	obj := v.Raw
	switch {
	case v.Kind != wjson.Object && op.Kind == abi.PatchOpRemove:
		return append(dst, doc...), nil
	case v.Kind == wjson.Null:
		obj = emptyObject
	case v.Kind != wjson.Object:
		return dst, errors.New("the value is " + article(v.Kind) + ", not an object")
	}
	dst = append(dst, doc[:v.Offset]...)
	if op.Kind == abi.PatchOpRemove {
		dst, err = p.remove(dst, obj, p.segs)
	} else {
		dst, err = p.set(dst, obj, p.segs, op)
	}
	return append(dst, doc[v.Offset+len(v.Raw):]...), err
}

// skipSpace returns the offset of the first byte of doc that is not JSON
// whitespace.
func skipSpace(doc []byte) int {
	for i, c := range doc {
		if !isSpace(c) {
			return i
		}
	}
	return len(doc)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// found is what scan finds in an object.
type found struct {
	ok     bool
	vs, ve int // the value of the last member named so
	insert int // where a new member goes: after the last value
	count  int // the members
}

// scan finds the last member of the object obj named name. obj may have
// whitespace around it.
func (p *Patcher) scan(obj, name []byte) (found, error) {
	f := found{insert: skipSpace(obj) + 1}
	err := wjson.Each(obj, func(k, v wjson.Value) bool {
		f.count++
		f.insert = v.Offset + len(v.Raw)
		if p.named(k, name) {
			f.ok, f.vs, f.ve = true, v.Offset, f.insert
		}
		return true
	})
	return f, err
}

// named reports whether the member name k decodes to name.
func (p *Patcher) named(k wjson.Value, name []byte) bool {
	p.name = k.AppendString(p.name[:0])
	return bytes.Equal(p.name, name)
}

// set appends the object obj with the member at segs set to op's value.
// Like remove, it validates obj whole as it scans it.
func (p *Patcher) set(dst, obj []byte, segs [][]byte, op *abi.PatchOp) ([]byte, error) {
	f, err := p.scan(obj, segs[0])
	if err != nil {
		return dst, err
	}
	if !f.ok {
		dst = append(dst, obj[:f.insert]...)
		if f.count > 0 {
			dst = append(dst, ',')
		}
		dst, err = appendMember(dst, segs, op)
		return append(dst, obj[f.insert:]...), err
	}
	val := obj[f.vs:f.ve]
	dst = append(dst, obj[:f.vs]...)
	switch {
	case len(segs) == 1:
		dst, err = appendValue(dst, op)
	case val[0] == '{':
		dst, err = p.set(dst, val, segs[1:], op)
	case val[0] == 'n':
		dst, err = appendObject(dst, segs[1:], op)
	default:
		v, _ := wjson.Parse(val)
		return dst, errors.New(p.prefix(len(segs)) + " is " + article(v.Kind) + ", not an object")
	}
	return append(dst, obj[f.ve:]...), err
}

// prefix quotes the path of the operation being applied up to the
// segment that has rest segments after it, for errors.
func (p *Patcher) prefix(rest int) string {
	segs := make([]string, len(p.segs)-rest+1)
	for i := range segs {
		segs[i] = string(p.segs[i])
	}
	return strconv.Quote(string(abi.AppendPath(nil, segs...)))
}

// appendObject appends an object holding only the member at segs, set to
// op's value, or with no segs op's value itself.
func appendObject(dst []byte, segs [][]byte, op *abi.PatchOp) ([]byte, error) {
	if len(segs) == 0 {
		return appendValue(dst, op)
	}
	dst, err := appendMember(append(dst, '{'), segs, op)
	return append(dst, '}'), err
}

// appendMember appends the member segs[0] with the value made of the rest.
func appendMember(dst []byte, segs [][]byte, op *abi.PatchOp) ([]byte, error) {
	dst = append(wjson.AppendQuoteBytes(dst, segs[0]), ':')
	return appendObject(dst, segs[1:], op)
}

// remove appends the object obj without the member at segs.
func (p *Patcher) remove(dst, obj []byte, segs [][]byte) ([]byte, error) {
	if len(segs) > 1 {
		f, err := p.scan(obj, segs[0])
		if err != nil || !f.ok || obj[f.vs] != '{' {
			return append(dst, obj...), err
		}
		dst = append(dst, obj[:f.vs]...)
		dst, err = p.remove(dst, obj[f.vs:f.ve], segs[1:])
		return append(dst, obj[f.ve:]...), err
	}
	p.members = p.members[:0]
	err := wjson.Each(obj, func(k, v wjson.Value) bool {
		p.members = append(p.members, member{key: k.Offset, end: v.Offset + len(v.Raw), drop: p.named(k, segs[0])})
		return true
	})
	if err != nil {
		return dst, err
	}
	return p.dropMembers(dst, obj), nil
}

// dropMembers appends the object obj without its members marked drop,
// keeping the bytes of the others and the separators that follow them.
func (p *Patcher) dropMembers(dst, obj []byte) []byte {
	ms := p.members
	if len(ms) == 0 {
		return append(dst, obj...)
	}
	dst = append(dst, obj[:ms[0].key]...)
	prev := -1
	for i, m := range ms {
		if m.drop {
			continue
		}
		if prev >= 0 {
			dst = append(dst, obj[ms[prev].end:ms[prev+1].key]...)
		}
		dst = append(dst, obj[m.key:m.end]...)
		prev = i
	}
	return append(dst, obj[ms[len(ms)-1].end:]...)
}

// appendValue appends op's value as JSON.
func appendValue(dst []byte, op *abi.PatchOp) ([]byte, error) {
	switch op.Type {
	case abi.TypeInt:
		return strconv.AppendInt(dst, op.Int, 10), nil
	case abi.TypeFloat:
		if math.IsNaN(op.Float) || math.IsInf(op.Float, 0) {
			return append(dst, "null"...), nil
		}
		return wjson.AppendFloat(dst, op.Float), nil
	case abi.TypeBool:
		return strconv.AppendBool(dst, op.Bool), nil
	case abi.TypeString:
		return wjson.AppendQuoteBytes(dst, op.Bytes), nil
	case abi.TypeRaw:
		v, err := wjson.Parse(op.Bytes)
		if err != nil {
			return dst, fmt.Errorf("%w: %v", ErrBadRawValue, err)
		}
		return append(dst, v.Raw...), nil
	}
	return append(dst, "null"...), nil
}

// article names a kind of JSON value with its article: "an array".
func article(k wjson.Kind) string {
	switch k {
	case wjson.Array, wjson.Object:
		return "an " + k.String()
	case wjson.Null:
		return "null"
	}
	return "a " + k.String()
}

// maxSplice is the most operations ApplyPatchAt splices; a longer patch
// is applied by ApplyPatch.
const maxSplice = 8

// edit is one set ApplyPatchAt splices: op replaces doc[start:end], or,
// with member, is inserted there as a new member.
type edit struct {
	start, end int
	member     bool
	op         abi.PatchOp
}

// ApplyPatchAt is ApplyPatch for a record value doc whose declared fields
// d lie at spans (its part of Batch.Spans), giving the same results. A
// patch whose operations all set declared fields to values other than raw
// JSON, each either present in doc or missing from a top-level object
// whose member it would be, is spliced in without reading doc again; any
// other goes to ApplyPatch. A patch with abi.PatchFlagNew applies to {},
// not to the record's value: pass it to ApplyPatch.
func (p *Patcher) ApplyPatchAt(doc []byte, ops abi.PatchOps, d *Decl, spans []Span) ([]byte, error) {
	n, ok := spliceable(&p.edits, doc, ops, d, spans)
	if !ok {
		return p.ApplyPatch(doc, ops)
	}
	edits := &p.edits
	out, at := p.bufs[0][:0], 0
	for i := range edits[:n] {
		e := &edits[i]
		out = append(out, doc[at:e.start]...)
		if e.member {
			if doc[e.start-1] != '{' || i > 0 && edits[i-1].member { // inserts share one place
				out = append(out, ',')
			}
			out = append(wjson.AppendQuoteBytes(out, e.op.Path), ':')
		}
		out, _ = appendValue(out, &e.op) // only raw values can fail
		at = e.end
	}
	out = append(out, doc[at:]...)
	p.bufs[0] = out
	return out, nil
}

// spliceable fills edits with the operations of ops in the order of
// where they apply, and reports whether ApplyPatchAt may splice them (see
// there): no two set the same field, and no two present fields' spans
// overlap (a field and one inside it).
func spliceable(edits *[maxSplice]edit, doc []byte, ops abi.PatchOps, d *Decl, spans []Span) (int, bool) {
	if ops.Len() == 0 || ops.Len() > maxSplice {
		return 0, false
	}
	var seen uint64 // the fields set, up to 64
	insert := -1    // where a new top-level member goes, once found
	n := 0
	for _, op := range ops.All() {
		k := -1
		if op.Kind == abi.PatchOpSet && op.Type != abi.TypeRaw && len(op.Path) > 0 {
			k = d.index(op.Path)
		}
		if k < 0 || k >= 64 || seen&(1<<k) != 0 {
			return 0, false
		}
		seen |= 1 << k
		e := edit{start: int(spans[k].Start), end: int(spans[k].End), op: op}
		if e.start < 0 {
			if !d.topLevel[k] {
				return 0, false
			}
			if insert < 0 {
				if insert = memberEnd(doc); insert < 0 {
					return 0, false
				}
			}
			e = edit{start: insert, end: insert, member: true, op: op}
		}
		j := n
		for ; j > 0 && edits[j-1].start > e.start; j-- {
			edits[j] = edits[j-1]
		}
		edits[j] = e
		n++
	}
	for i := 1; i < n; i++ {
		if edits[i].start < edits[i-1].end {
			return 0, false
		}
	}
	return n, true
}

// memberEnd returns where a new member of the JSON object doc goes, as
// ApplyPatch adds one: after its last member's value, or after the '{' of
// an empty object; or -1 when doc is not an object. doc must be valid
// JSON: its last value ends at the last byte before the closing '}' that
// is not whitespace.
func memberEnd(doc []byte) int {
	if i := skipSpace(doc); i >= len(doc) || doc[i] != '{' {
		return -1
	}
	j := len(doc) - 1
	for isSpace(doc[j]) {
		j--
	}
	for j--; isSpace(doc[j]); j-- { // j was at the closing '}'
	}
	return j + 1
}
