package config

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// Join holds a join operator's settings: a stream-stream join of the
// records of two sources with the same key, as Flink's interval join (with
// Between) or regular join (without), inner or outer.
type Join struct {
	Left, Right string // source names: the two sides, distinct
	// Between bounds a right record's event time relative to its left's:
	// left+Lower <= right <= left+Upper. Without it every pair of a key
	// matches, and the state keeps every record.
	Between      bool
	Lower, Upper time.Duration
	// Window, when not zero, makes a tumbling window join: a left and a
	// right record match when their event times fall in the same window,
	// as Flink's window join. It excludes Between.
	Window time.Duration
	// TTL bounds a regular join's state: a record is dropped once the
	// watermark passes its event time by TTL. Not with Between or Window.
	TTL time.Duration
	// Kind is the join type: JoinInner (default), JoinLeft, JoinRight or
	// JoinFull. An outer join also emits each record of its outer side
	// (both, full) that matched nothing, once, with null for the other
	// side, when it can match nothing more: when the watermark passes its
	// last possible match (its window's end; a left's time plus Upper, a
	// right's minus Lower; its time plus the TTL), or, for a regular join
	// without a TTL, at the end of a bounded input.
	Kind string
}

// Join kinds of a join operator, beyond JoinInner and JoinLeft.
const (
	JoinRight = "right" // a right record that matched nothing is emitted with a null left
	JoinFull  = "full"  // either side's record that matched nothing is emitted, the other side null
)

var (
	joinFields      = []string{"name", "type", "left", "right", "join", "between", "window", "ttl"}
	betweenFields   = []string{"lower", "upper"}
	streamJoinKinds = []string{JoinInner, JoinLeft, JoinRight, JoinFull}
)

// join decodes a join operator's fields; crossCheckJoins checks them
// against the rest of the pipeline.
func (d *decoder) join(o *object, op *Operator) {
	j := &op.Join
	j.Kind = JoinInner
	if v, st := o.enum("join", streamJoinKinds...); st == good {
		j.Kind = v
	}
	for _, side := range []struct {
		field string
		dst   *string
	}{{"left", &j.Left}, {"right", &j.Right}} {
		if v, st := o.nonEmpty(side.field); st == absent {
			o.missing(side.field)
		} else if st == good {
			*side.dst = v
		}
	}
	if j.Left != "" && j.Left == j.Right {
		o.fail("right", o.get("right", kString), "the right side is source %q, as the left: a join needs two sources", j.Right)
	}
	if v, st := o.duration("window"); st == good {
		switch {
		case v <= 0 || v%time.Millisecond != 0:
			o.fail("window", o.get("window", kScalar), "must be a positive whole number of milliseconds, got %s", v)
		case o.get("between", kNode) != nil:
			o.fail("window", o.get("window", kScalar), "a join is a window join (window) or an interval join (between), not both")
		default:
			j.Window = v
		}
	}
	if v, st := o.duration("ttl"); st == good {
		switch {
		case v <= 0 || v%time.Millisecond != 0:
			o.fail("ttl", o.get("ttl", kScalar), "must be a positive whole number of milliseconds, got %s", v)
		case o.get("between", kNode) != nil || o.get("window", kScalar) != nil:
			o.fail("ttl", o.get("ttl", kScalar), "bounds a regular join; an interval or window join drops its records by itself")
		default:
			j.TTL = v
		}
	}
	n := o.get("between", kNode)
	if n == nil || isNull(n) {
		return
	}
	bo := d.object(n, o.meta.Pos, o.path("between"), joinEnv(o.env, "between"), &Meta{}, false)
	if bo == nil {
		return
	}
	lower, lst := bo.signedDuration("lower")
	upper, ust := bo.signedDuration("upper")
	switch {
	case lst == absent:
		bo.missing("lower")
	case ust == absent:
		bo.missing("upper")
	case lst == good && ust == good && lower > upper:
		bo.fail("upper", bo.get("upper", kScalar), "upper bound %s is below the lower bound %s", upper, lower)
	case lst == good && ust == good && (lower%time.Millisecond != 0 || upper%time.Millisecond != 0):
		bo.fail("lower", bo.get("lower", kScalar), "the bounds must be whole milliseconds")
	case lst == good && ust == good:
		j.Between, j.Lower, j.Upper = true, lower, upper
	}
	bo.finish(betweenFields, betweenFields, "a join's between block")
}

// crossCheckJoins checks that each join's sides, and the sources key_by's
// fields name, are sources of the pipeline, and that a key_by comes before
// each join, so that its records are keyed (a join of unkeyed records
// would pair every left with every right).
func (d *decoder) crossCheckJoins(p *Pipeline) {
	for i := range p.Operators {
		op := &p.Operators[i]
		for _, src := range slices.Sorted(maps.Keys(op.SourceKeyPaths)) {
			if !hasSource(p, src) {
				d.errAt(op.At("fields"), op.FieldPath("fields"), "no source is named %q%s", src, suggestSource(p, src))
			}
		}
		if op.Type != OperatorJoin {
			continue
		}
		for _, side := range []struct{ field, name string }{{"left", op.Join.Left}, {"right", op.Join.Right}} {
			if side.name != "" && !hasSource(p, side.name) {
				d.errAt(op.At(side.field), op.FieldPath(side.field), "no source is named %q%s", side.name, suggestSource(p, side.name))
			}
		}
		keyed := false
		for _, before := range p.Operators[:i] {
			keyed = keyed || before.Type == OperatorKeyBy
		}
		if !keyed {
			d.errAt(op.Pos, op.Where, "a join pairs records by key: put a key_by before it (with fields: to key each source by its own field)")
		}
	}
}

func hasSource(p *Pipeline, name string) bool {
	for i := range p.Sources {
		if p.Sources[i].Name == name {
			return true
		}
	}
	return false
}

// suggestSource names the pipeline's sources, for an error.
func suggestSource(p *Pipeline, name string) string {
	var names []string
	for i := range p.Sources {
		names = append(names, p.Sources[i].Name)
	}
	if len(names) == 0 {
		return ""
	}
	return " (the sources are " + strings.Join(names, ", ") + ")"
}

// keyFields decodes key_by's optional fields block: per source, the field
// path whose value keys that source's records instead of field's.
func (d *decoder) keyFields(o *object, op *Operator) {
	n := o.get("fields", kNode)
	if n == nil || isNull(n) {
		return
	}
	fo := d.object(n, o.meta.Pos, o.path("fields"), "", &Meta{}, false)
	if fo == nil {
		return
	}
	for _, e := range fo.entries {
		_, segs, ok := d.fieldPathItem(e.val, fo.path(e.key.Value))
		if !ok {
			continue
		}
		if op.SourceKeyPaths == nil {
			op.SourceKeyPaths = map[string][]string{}
		}
		op.SourceKeyPaths[e.key.Value] = segs
	}
}
