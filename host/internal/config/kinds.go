package config

import (
	"errors"
	"maps"
	"slices"
	"time"
)

// Kinds are what the operator table's rows add to Parse: operator types
// whose settings their own packages decode (beyond the types this package
// knows), and rules their packages check. A pipeline file may name the
// added types as it names the built-in ones, and Parse checks their fields
// with the same positions, environment overrides and messages. Kinds is
// read-only once given to Parse.
type Kinds map[OperatorType]Schema

// Schema is what Parse takes from an operator type's package.
type Schema struct {
	// Fields are the type's fields besides name and type; any other field
	// is an error. Only for a type Parse does not know.
	Fields []string
	// Decode reads the fields through f, reporting each problem at its
	// field, and returns the settings, which Parse stores in
	// Operator.Settings for the kind's Load. It is called once per
	// operator of the type, and only from Parse. Only for a type Parse
	// does not know.
	Decode func(f *Fields) any
	// Check, if set, returns what breaks the kind's rules in an operator
	// decoded without errors, each made with its element's Meta.Errorf, so
	// that the kind states its rules once, for the pipeline file and its
	// own constructor alike. Any type may have one.
	Check func(op *Operator) []error
}

// Fields hands an operator's own fields to a Schema's Decode. A getter
// returns ok when the field is present and valid; when it is present and
// invalid the problem is already reported at its position, and Has tells
// absent from invalid. A Fields is valid only during Decode.
type Fields struct{ o *object }

// Has reports whether the field is given, in the file or the environment.
func (f *Fields) Has(name string) bool { return f.o.get(name, kString) != nil }

// String gets a non-empty string field.
func (f *Fields) String(name string) (string, bool) {
	s, st := f.o.nonEmpty(name)
	return s, st == good
}

// Enum gets a string field that must be one of allowed.
func (f *Fields) Enum(name string, allowed ...string) (string, bool) {
	s, st := f.o.enum(name, allowed...)
	return s, st == good
}

// Bool gets a boolean field.
func (f *Fields) Bool(name string) (bool, bool) {
	b, st := f.o.bool(name)
	return b, st == good
}

// Int gets an integer field in [lo, hi].
func (f *Fields) Int(name string, lo, hi int64) (int64, bool) {
	n, st := f.o.int(name, lo, hi)
	return n, st == good
}

// Duration gets a non-negative duration field ("20ms", "1.5s", "2h").
func (f *Fields) Duration(name string) (time.Duration, bool) {
	d, st := f.o.duration(name)
	return d, st == good
}

// FieldPath gets a dotted JSON field path, as written and split at the
// dots.
func (f *Fields) FieldPath(name string) (string, []string, bool) {
	s, segs, st := f.o.fieldPath(name)
	return s, segs, st == good
}

// Fail reports a problem with the field, at its position (the operator's,
// when the field is absent).
func (f *Fields) Fail(name, format string, args ...any) {
	if v := f.o.get(name, kString); v != nil {
		f.o.fail(name, v, format, args...)
		return
	}
	f.o.missingf(name+": "+format, args...)
}

// Missing reports a required field that is absent.
func (f *Fields) Missing(name string) { f.o.missing(name) }

// types returns every operator type a pipeline file may name: the
// built-in ones, then those of d.kinds in name order.
func (d *decoder) types() []string {
	out := slices.Clone(operatorTypes)
	for _, t := range slices.Sorted(maps.Keys(d.kinds)) {
		if !contains(out, string(t)) {
			out = append(out, string(t))
		}
	}
	return out
}

// fieldsOf returns the fields an operator of type t may have.
func (d *decoder) fieldsOf(t OperatorType) []string {
	if fs, ok := operatorFields[t]; ok {
		return fs
	}
	if s, ok := d.kinds[t]; ok {
		return append([]string{"name", "type"}, s.Fields...)
	}
	return nil
}

// allOperatorFields returns the fields of any operator type.
func (d *decoder) allOperatorFields() []string {
	all := union(operatorFields, operatorTypes)
	for _, t := range d.types() {
		for _, f := range d.fieldsOf(OperatorType(t)) {
			if !contains(all, f) {
				all = append(all, f)
			}
		}
	}
	return all
}

// settings decodes the fields of an operator whose type is one of d.kinds.
func (d *decoder) settings(o *object, op *Operator) {
	if s, ok := d.kinds[op.Type]; ok && s.Decode != nil {
		op.Settings = s.Decode(&Fields{o: o})
	}
}

// check reports what the Check of op's type finds.
func (d *decoder) check(op *Operator) {
	s, ok := d.kinds[op.Type]
	if !ok || s.Check == nil {
		return
	}
	for _, err := range s.Check(op) {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Pos: op.Pos, Path: op.Where, Msg: err.Error()}
		}
		d.errs = append(d.errs, e)
	}
}
