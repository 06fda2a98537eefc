package config

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Load reads the pipeline file at path and returns it decoded and
// validated, with environment overrides from the process environment (see
// OSEnv). When the file cannot be read the error is the *os.PathError;
// otherwise a failing pipeline gives an Errors listing every problem.
func Load(path string, kinds Kinds) (*Pipeline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, OSEnv(), kinds)
}

// Parse decodes and validates the pipeline in data. filename is used in
// positions and, made absolute, to resolve relative paths; env looks up
// override variables by full name (such as os.LookupEnv or OSEnv()); a nil
// env applies no overrides, and a variable set to "" counts as unset.
// kinds are the operator types beyond the built-in ones (nil for none).
// On failure the error is an Errors holding every problem found.
func Parse(filename string, data []byte, env func(string) (string, bool), kinds Kinds) (p *Pipeline, err error) {
	display := filename
	if display == "" {
		display = "<input>"
	}
	abs, aerr := filepath.Abs(filename)
	if aerr != nil || filename == "" {
		wd, _ := os.Getwd()
		abs = filepath.Join(wd, display)
	}
	d := &decoder{
		file:    display,
		absFile: abs,
		dir:     filepath.Dir(abs),
		env:     env,
		envPos:  make(map[*yaml.Node]string),
		kinds:   kinds,
	}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(budgetExceeded); !ok {
				panic(r)
			}
			p, err = nil, Errors{{Pos: Pos{File: display}, Msg: "document too large once aliases are expanded"}}
		}
	}()
	root := d.parseYAML(data)
	if root != nil {
		p = d.pipeline(root)
	}
	if len(d.errs) > 0 {
		return nil, d.finishErrors()
	}
	return p, nil
}

// budgetExceeded is panicked (and recovered in Parse) when walking the
// document visits too many nodes, which only aliases can cause.
type budgetExceeded struct{}

type decoder struct {
	file    string // file name for positions
	absFile string
	dir     string // directory relative paths resolve against
	env     func(string) (string, bool)
	errs    Errors
	envPos  map[*yaml.Node]string // nodes made from environment variables
	budget  int
	kinds   Kinds // operator types decoded by their own packages
}

func (d *decoder) finishErrors() Errors {
	d.errs.sort()
	out := d.errs[:0]
	for i, e := range d.errs {
		if i > 0 && *e == *d.errs[i-1] {
			continue // the same node reached twice through an alias
		}
		out = append(out, e)
	}
	return out
}

// parseYAML parses data into a node tree and returns the root node of its
// single document, or nil after recording an error.
func (d *decoder) parseYAML(data []byte) *yaml.Node {
	doc, extra, read, err := decodeYAML(data)
	switch {
	case errors.Is(err, io.EOF):
		d.errAt(Pos{File: d.file}, "", "empty pipeline file")
		return nil
	case err != nil:
		d.yamlError(data, read, err)
		return nil
	case extra != nil:
		d.errorf(extra, "", "only one YAML document is allowed, found another")
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		d.errAt(Pos{File: d.file}, "", "empty pipeline file")
		return nil
	}
	d.budget = 16*countNodes(doc) + 10000
	return doc.Content[0]
}

// yamlError records the syntax error err, met with data[:read] read, at
// the offending line and column (see locateYAMLError), or at the line
// yaml.v3 names when that cannot be found.
func (d *decoder) yamlError(data []byte, read int, err error) {
	line, msg := splitYAMLError(err)
	pos := Pos{File: d.file, Line: line}
	if l, c, ok := locateYAMLError(data, msg, read); ok {
		pos.Line, pos.Col = l, c
	}
	d.errAt(pos, "", "invalid YAML: %s", msg)
}

// countNodes counts the nodes of the tree without following aliases.
func countNodes(n *yaml.Node) int {
	c := 1
	for _, k := range n.Content {
		c += countNodes(k)
	}
	return c
}

// res follows aliases and charges the visit to the budget, which bounds
// the work an alias-heavy document can cause.
func (d *decoder) res(n *yaml.Node) *yaml.Node {
	for {
		d.budget--
		if d.budget < 0 {
			panic(budgetExceeded{})
		}
		if n == nil || n.Kind != yaml.AliasNode {
			return n
		}
		n = n.Alias
	}
}

func (d *decoder) pos(n *yaml.Node) Pos {
	if name, ok := d.envPos[n]; ok {
		return Pos{Env: name}
	}
	if n == nil {
		return Pos{File: d.file}
	}
	return Pos{File: d.file, Line: n.Line, Col: n.Column}
}

// lineBreaks keeps every error on one line whatever the file holds.
var lineBreaks = strings.NewReplacer("\n", `\n`, "\r", `\r`)

func (d *decoder) errAt(p Pos, path, format string, args ...any) {
	d.errs = append(d.errs, &Error{Pos: p, Path: path, Msg: lineBreaks.Replace(fmt.Sprintf(format, args...))})
}

func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) {
	d.errAt(d.pos(n), path, format, args...)
}

// abs resolves a path from the file against the pipeline directory.
func (d *decoder) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(d.dir, p)
}

// describe names the kind and value of n for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:37] + "..."
		}
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!str":
			return strconv.Quote(v)
		case "!!int":
			return "integer " + v
		case "!!float":
			return "float " + v
		case "!!bool":
			return "boolean " + v
		default:
			return n.ShortTag() + " " + strconv.Quote(v)
		}
	}
	return "nothing"
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// state says what a field getter found.
type state uint8

const (
	absent state = iota // not in the file nor the environment
	bad                 // present but invalid; the error is recorded
	good                // present and valid
)

// entry is one key/value pair of a mapping.
type entry struct {
	key, val *yaml.Node
	used     bool
}

// object is a mapping being decoded into a struct: it hands out fields by
// name, applies environment overrides, records positions into meta, and
// finally reports the fields nobody asked for.
type object struct {
	d       *decoder
	node    *yaml.Node // nil when the element is absent from the file
	meta    *Meta
	env     string // environment variable prefix; "" = no overrides
	entries []entry
	index   map[string]int
}

// object starts decoding n as a mapping. An absent n, or a null one when
// optional, gives an empty object positioned at fallback. It returns nil
// after recording an error when n is not a mapping.
func (d *decoder) object(n *yaml.Node, fallback Pos, path, env string, meta *Meta, optional bool) *object {
	meta.Where = path
	meta.Pos = fallback
	n = d.res(n)
	o := &object{d: d, meta: meta, env: env, index: map[string]int{}}
	if n == nil || optional && isNull(n) {
		return o
	}
	meta.Pos = d.pos(n)
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "expected a mapping, got %s", describe(n))
		return nil
	}
	o.node = n
	d.entries(n, path, func(name string, k, v *yaml.Node) {
		o.index[name] = len(o.entries)
		o.entries = append(o.entries, entry{key: k, val: v})
	})
	return o
}

// entries calls fn for each well-formed, first-seen key of mapping n,
// reporting non-string keys, merge keys and duplicate keys.
func (d *decoder) entries(n *yaml.Node, path string, fn func(name string, k, v *yaml.Node)) {
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := d.res(n.Content[i])
		switch {
		case k.Kind != yaml.ScalarNode:
			d.errorf(k, path, "mapping keys must be scalars, got %s", describe(k))
			continue
		case k.ShortTag() == "!!merge":
			d.errorf(k, path, `merge keys ("<<") are not supported`)
			continue
		case isNull(k):
			d.errorf(k, path, "mapping keys must not be null")
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.errorf(k, path, "duplicate field %q (first at %s)", k.Value, d.pos(first))
			continue
		}
		seen[k.Value] = k
		fn(k.Value, k, n.Content[i+1])
	}
}

// fieldKind says how an environment override of a field is typed.
type fieldKind uint8

const (
	kNode   fieldKind = iota // list or mapping: no override
	kString                  // override is a string, whatever it looks like
	kScalar                  // override is a plain YAML scalar (number, bool, string…)
	// kList: a list of strings, overridden by a comma-separated list. Only
	// kafka.brokers is such a field; other lists cannot be overridden.
	kList
)

// envScalar turns the value of an override of a number or config field
// into a node: the value read as one YAML scalar when it is one (so 42 is
// an integer and '007' a string), else the value as a string.
func envScalar(s string) *yaml.Node {
	var doc yaml.Node
	if yaml.Unmarshal([]byte(s), &doc) == nil && doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		if n := doc.Content[0]; n.Kind == yaml.ScalarNode && n.Anchor == "" {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: n.Tag, Style: n.Style, Value: n.Value}
		}
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

// envList turns the value of an override of a list field into a list of
// strings: the value split at commas, each item trimmed of spaces.
func envList(s string) *yaml.Node {
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for _, item := range strings.Split(s, ",") {
		seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: strings.TrimSpace(item)})
	}
	return seq
}

// get returns the resolved value of the field, from the environment when
// an override is set, marking the field used and recording its position.
func (o *object) get(name string, kind fieldKind) *yaml.Node {
	var v *yaml.Node
	if i, ok := o.index[name]; ok {
		o.entries[i].used = true
		v = o.entries[i].val
	}
	if kind != kNode && o.env != "" && o.d.env != nil {
		envName := o.env + "_" + envNorm(name)
		if s, ok := o.d.env(envName); ok && s != "" {
			switch kind {
			case kString:
				v = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
			case kList:
				v = envList(s)
				for _, item := range v.Content {
					o.d.envPos[item] = envName
				}
			default:
				v = envScalar(s)
			}
			o.d.envPos[v] = envName
		}
	}
	if v == nil {
		return nil
	}
	v = o.d.res(v)
	if o.meta.Positions == nil {
		o.meta.Positions = map[string]Pos{}
	}
	o.meta.Positions[name] = o.d.pos(v)
	return v
}

func (o *object) path(name string) string { return o.meta.FieldPath(name) }

func (o *object) fail(name string, v *yaml.Node, format string, args ...any) state {
	o.d.errorf(v, o.path(name), format, args...)
	return bad
}

// missing reports a required field that is absent. When the element is
// absent from the file but the environment set some of its fields, the
// error is placed at the first such variable.
func (o *object) missing(name string) {
	o.missingf("missing required field %q", name)
}

// missingf is missing with a message of its own.
func (o *object) missingf(format string, args ...any) {
	at := o.meta.Pos
	if o.node == nil {
		for _, f := range slices.Sorted(maps.Keys(o.meta.Positions)) {
			if p := o.meta.Positions[f]; p.IsEnv() {
				at = p
				break
			}
		}
	}
	o.d.errAt(at, o.meta.Where, format, args...)
}

// str gets a string field. Any non-null scalar is accepted as its text.
func (o *object) str(name string) (string, state) {
	s, _, st := o.strNode(name)
	return s, st
}

func (o *object) strNode(name string) (string, *yaml.Node, state) {
	v := o.get(name, kString)
	if v == nil {
		return "", nil, absent
	}
	if v.Kind != yaml.ScalarNode || isNull(v) {
		return "", v, o.fail(name, v, "expected a string, got %s", describe(v))
	}
	return v.Value, v, good
}

// nonEmpty gets a string field that must not be empty.
func (o *object) nonEmpty(name string) (string, state) {
	s, v, st := o.strNode(name)
	if st == good && s == "" {
		return "", o.fail(name, v, "must not be empty")
	}
	return s, st
}

// enum gets a string field whose value must be one of allowed.
func (o *object) enum(name string, allowed ...string) (string, state) {
	s, v, st := o.strNode(name)
	if st != good {
		return s, st
	}
	if contains(allowed, s) {
		return s, good
	}
	return "", o.badEnum(name, v, s, allowed)
}

// enumFold gets a string field whose value must be one of allowed, ignoring
// case, and returns it spelt as in allowed.
func (o *object) enumFold(name string, allowed ...string) (string, state) {
	s, v, st := o.strNode(name)
	if st != good {
		return s, st
	}
	for _, a := range allowed {
		if strings.EqualFold(a, s) {
			return a, good
		}
	}
	return "", o.badEnum(name, v, s, allowed)
}

func (o *object) badEnum(name string, v *yaml.Node, s string, allowed []string) state {
	hint := ""
	if c := suggest(s, allowed); c != "" {
		hint = fmt.Sprintf("; did you mean %q?", c)
	}
	return o.fail(name, v, "invalid value %q (want one of %s%s)", s, strings.Join(allowed, ", "), hint)
}

// bool gets a boolean field (true or false).
func (o *object) bool(name string) (bool, state) {
	v := o.get(name, kScalar)
	if v == nil {
		return false, absent
	}
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" {
		return false, o.fail(name, v, "expected true or false, got %s", describe(v))
	}
	var b bool
	if err := v.Decode(&b); err != nil {
		return false, o.fail(name, v, "invalid boolean %q", v.Value)
	}
	return b, good
}

// int gets an integer field in [lo, hi].
func (o *object) int(name string, lo, hi int64) (int64, state) {
	v := o.get(name, kScalar)
	if v == nil {
		return 0, absent
	}
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" {
		return 0, o.fail(name, v, "expected an integer, got %s", describe(v))
	}
	var n int64
	if err := v.Decode(&n); err != nil {
		return 0, o.fail(name, v, "invalid integer %q (must fit in 64 bits)", v.Value)
	}
	if n < lo || n > hi {
		return 0, o.fail(name, v, "%s", rangeMsg(n, lo, hi))
	}
	return n, good
}

func rangeMsg(n, lo, hi int64) string {
	switch {
	case hi == math.MaxInt64:
		return fmt.Sprintf("must be at least %d, got %d", lo, n)
	case lo == math.MinInt64:
		return fmt.Sprintf("must be at most %d, got %d", hi, n)
	default:
		return fmt.Sprintf("must be between %d and %d, got %d", lo, hi, n)
	}
}

// float gets a finite number field.
func (o *object) float(name string) (float64, state) {
	v := o.get(name, kScalar)
	if v == nil {
		return 0, absent
	}
	if tag := v.ShortTag(); v.Kind != yaml.ScalarNode || tag != "!!int" && tag != "!!float" {
		return 0, o.fail(name, v, "expected a number, got %s", describe(v))
	}
	var f float64
	if err := v.Decode(&f); err != nil {
		return 0, o.fail(name, v, "invalid number %q", v.Value)
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, o.fail(name, v, "must be a finite number, got %s", v.Value)
	}
	return f, good
}

// duration gets a non-negative Go duration ("20ms", "1.5s", or 0).
func (o *object) duration(name string) (time.Duration, state) {
	dur, st := o.signedDuration(name)
	if st == good && dur < 0 {
		return 0, o.fail(name, o.get(name, kString), "must not be negative, got %s", dur)
	}
	return dur, st
}

// signedDuration gets a duration field that may be negative.
func (o *object) signedDuration(name string) (time.Duration, state) {
	v := o.get(name, kString)
	if v == nil {
		return 0, absent
	}
	if v.Kind != yaml.ScalarNode || isNull(v) {
		return 0, o.fail(name, v, "expected a duration such as 20ms or 1s, got %s", describe(v))
	}
	dur, err := time.ParseDuration(v.Value)
	if err != nil {
		return 0, o.fail(name, v, "invalid duration %q (use Go syntax such as 20ms, 1.5s or 2m)", v.Value)
	}
	return dur, good
}

// list gets a list field; null counts as absent.
func (o *object) list(name string) ([]*yaml.Node, state) {
	return o.listOf(name, kNode)
}

// listOf is list for a field of the given kind: kNode, or kList for a list
// of strings the environment can override.
func (o *object) listOf(name string, kind fieldKind) ([]*yaml.Node, state) {
	v := o.get(name, kind)
	if v == nil || isNull(v) {
		return nil, absent
	}
	if v.Kind != yaml.SequenceNode {
		return nil, o.fail(name, v, "expected a list, got %s", describe(v))
	}
	return v.Content, good
}

// kindOf describes the type of an element for messages about fields that
// do not apply to it, e.g. "generator sources", noting when the type came
// from the environment.
func (o *object) kindOf(typ, plural, field string) string {
	if typ == "" {
		return ""
	}
	what := typ + " " + plural
	if p := o.meta.At(field); p.IsEnv() {
		what += " (type set by $" + p.Env + ")"
	}
	return what
}

// finish reports every field of the mapping that was not used. allowed are
// the fields of the element's type; all are the fields of any type of this
// kind of element; what names the type for messages ("generator sources").
// When the type is unknown (what == "") only fields outside all are
// reported.
func (o *object) finish(allowed, all []string, what string) {
	if o == nil || o.node == nil {
		return
	}
	candidates := allowed
	if what == "" {
		candidates = all
	}
	for _, e := range o.entries {
		if e.used || contains(allowed, e.key.Value) {
			continue
		}
		if contains(all, e.key.Value) {
			if what != "" {
				o.d.errorf(e.key, o.meta.Where, "field %q does not apply to %s", e.key.Value, what)
			}
			continue
		}
		o.d.errorf(e.key, o.meta.Where, "unknown field %q%s", e.key.Value, didYouMean(e.key.Value, candidates))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// peekName returns the name field of mapping n as written, without
// recording anything, for paths and environment prefixes.
func (d *decoder) peekName(n *yaml.Node) string {
	n = d.res(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := d.res(n.Content[i]), d.res(n.Content[i+1])
		if k.Kind == yaml.ScalarNode && k.Value == "name" {
			if v.Kind == yaml.ScalarNode && !isNull(v) {
				return v.Value
			}
			return ""
		}
	}
	return ""
}
