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
	bufs    [2][]byte // the results of alternate operations
	segs    [][]byte  // the path of the operation being applied
	segBuf  []byte    // the unescaped segments of that path
	name    []byte    // a decoded member name
	members []member  // the members of the object a remove applies to
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
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return i
		}
	}
	return len(doc)
}

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
