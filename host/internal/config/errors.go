package config

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Pos is a position in the pipeline file, or the environment variable that
// supplied a value.
type Pos struct {
	File string // file name as given to Load or Parse
	Line int    // 1-based; 0 = unknown
	Col  int    // 1-based; 0 = unknown
	Env  string // name of the environment variable the value came from; "" = from File
}

// String formats p as file:line:col, file:line when the column is unknown,
// or $NAME when the value came from the environment variable NAME.
func (p Pos) String() string {
	switch {
	case p.Env != "":
		return "$" + p.Env
	case p.Line <= 0:
		if p.File == "" {
			return "<unknown>"
		}
		return p.File
	case p.Col <= 0:
		return p.File + ":" + strconv.Itoa(p.Line)
	default:
		return p.File + ":" + strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Col)
	}
}

// IsEnv reports whether the position is an environment variable.
func (p Pos) IsEnv() bool { return p.Env != "" }

// Errorf returns an *Error at p. path names the element of the pipeline the
// error is about, as in `operators[1] "detect".plugin`; it may be empty.
func (p Pos) Errorf(path, format string, args ...any) error {
	return &Error{Pos: p, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// compare orders file positions before environment variables, file
// positions by file, line and column, environment variables by name.
func (p Pos) compare(q Pos) int {
	return cmp.Or(
		cmp.Compare(p.Env, q.Env), // "" (a file position) sorts first
		cmp.Compare(p.File, q.File),
		cmp.Compare(p.Line, q.Line),
		cmp.Compare(p.Col, q.Col),
	)
}

// Error is one problem in a pipeline file. Its text is
//
//	file:line:col: path: message
//
// with "path: " left out when Path is empty.
type Error struct {
	Pos  Pos    // where the problem is
	Path string // element the error is about, e.g. `sources[0] "readings".path`
	Msg  string // what is wrong
}

// Error implements error.
func (e *Error) Error() string {
	if e.Path == "" {
		return e.Pos.String() + ": " + e.Msg
	}
	return e.Pos.String() + ": " + e.Path + ": " + e.Msg
}

// Errors is every problem found in a pipeline file, sorted by position. Load
// and Parse return a non-empty Errors as their error.
type Errors []*Error

// Error joins the errors one per line.
func (es Errors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap returns the errors, so that errors.As finds an *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// sort orders es by position, keeping the order of errors at one position.
func (es Errors) sort() {
	slices.SortStableFunc(es, func(a, b *Error) int { return a.Pos.compare(b.Pos) })
}

// Meta is the position and path of one element of the pipeline (the
// pipeline itself, the engine block, the kafka block or one of its sasl,
// tls and embedded blocks, a stage, a generator field or the dead-letter
// block), embedded in its type so that code running later can report
// errors about it in the same format as this package.
type Meta struct {
	Pos Pos // position of the element's mapping (of the document, or of the enclosing block, when the element is absent)
	// Where is the element's path in the document, as used in Error.Path:
	// `operators[1] "detect"`, `sources[0] "gen".fields[2] "n"`, "engine",
	// "kafka.tls", "dead_letter", or "" for the pipeline itself.
	Where string
	// Positions maps each field name given in the file or the environment
	// to the position of its value.
	Positions map[string]Pos
}

// At returns the position of the named field's value, or of the element
// when the field was not given.
func (m Meta) At(field string) Pos {
	if p, ok := m.Positions[field]; ok {
		return p
	}
	return m.Pos
}

// FieldPath returns the path of the named field, e.g.
// `operators[1] "detect".plugin`.
func (m Meta) FieldPath(field string) string {
	return joinPath(m.Where, field)
}

// Errorf returns an *Error about the named field (about the element itself
// when field is empty), at the field's position.
func (m Meta) Errorf(field, format string, args ...any) error {
	if field == "" {
		return m.Pos.Errorf(m.Where, format, args...)
	}
	return m.At(field).Errorf(m.FieldPath(field), format, args...)
}

func joinPath(base, field string) string {
	switch {
	case field == "":
		return base
	case base == "":
		return field
	default:
		return base + "." + field
	}
}

// ErrInvalid is wrapped by every error about a pipeline file itself
// (host.ErrConfig is this value): the pipeline did not start.
var ErrInvalid = errors.New("invalid pipeline")

// Invalid marks err as an error about the pipeline file: it wraps
// ErrInvalid, and reads as err.
func Invalid(err error) error { return invalidError{err} }

type invalidError struct{ err error }

func (e invalidError) Error() string   { return e.err.Error() }
func (e invalidError) Unwrap() []error { return []error{ErrInvalid, e.err} }
