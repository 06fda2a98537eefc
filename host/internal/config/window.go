package config

import (
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// WindowKind is the kind of a window operator.
type WindowKind string

// Window kinds.
const (
	WindowTumbling WindowKind = "tumbling" // fixed, non-overlapping windows of size
	WindowSliding  WindowKind = "sliding"  // windows of size starting every slide (hop)
	WindowSession  WindowKind = "session"  // a key's records less than gap apart
	WindowCount    WindowKind = "count"    // every count records of a key
	WindowCumulate WindowKind = "cumulate" // windows growing by step up to size, as Flink's CUMULATE
)

// Emit modes of window operators.
const (
	EmitOnClose  = "on_close"  // once, when the watermark passes the window's end (default)
	EmitOnUpdate = "on_update" // after every record that changes the window
	EmitEvery    = "every"     // every emit_interval of processing time, and at the close
)

// Window time formats, for window_start and window_end.
const (
	WindowTimeSQL     = "sql"      // yyyy-MM-dd HH:mm:ss, UTC, as Flink SQL prints TIMESTAMP(3) (default)
	WindowTimeEpochMS = "epoch_ms" // milliseconds since the epoch
	WindowTimeRFC3339 = "rfc3339"  // RFC 3339, UTC
)

// Aggregate functions of window operators.
var aggregateFuncs = []string{"sum", "count", "avg", "min", "max", "first", "last", "count_distinct"}

// Window holds a window operator's settings.
type Window struct {
	Kind            WindowKind
	Size            time.Duration // tumbling, sliding, cumulate
	Slide           time.Duration // sliding
	Step            time.Duration // cumulate
	Gap             time.Duration // session
	Count           int64         // count
	AllowedLateness time.Duration // late records within this update closed windows; default 0
	Emit            string        // EmitOnClose (default), EmitOnUpdate or EmitEvery
	EmitInterval    time.Duration // EmitEvery: > 0
	KeyField        string        // output field holding the key, default "key"
	TimeFormat      string        // WindowTime…, default WindowTimeSQL
	// Aggregates are the built-in aggregates and at most one plugin
	// aggregate (AggregateSpec.Plugin), in output order. Without them,
	// the operator's Plugin is the window's aggregate, its result the
	// output value.
	Aggregates []AggregateSpec
	// MaxKeysInMemory bounds the keys whose windows stay in memory between
	// calls; the others are in the state store only (spilled). 0 means no
	// bound.
	MaxKeysInMemory int64
}

// AggregateSpec is one aggregate of a window or rolling operator: a
// built-in function, or, in a window, the operator's plugin aggregate.
type AggregateSpec struct {
	Meta
	Func  string   // one of sum, count, avg, min, max, first, last, count_distinct; "" for the plugin
	Field string   // dotted JSON path, as written; empty for count(*)
	Path  []string // Field split at the dots
	As    string   // output field name
	Exact int      // count_distinct: exact up to this many values, then approximate; 0 = the operator's default
	// Plugin marks the entry of a window's plugin aggregate, whose
	// result, a JSON value, is the field As. The plugin itself is the
	// operator's (Operator.Plugin, ConfigJSON, MemoryLimitPages, Timeout),
	// given in this entry.
	Plugin bool
}

// PluginAggregate returns the entry of w's plugin aggregate among its
// aggregates, or nil when it has none there (its plugin, if any, is then
// the operator's own, whose result is the output value).
func (w *Window) PluginAggregate() *AggregateSpec {
	for i := range w.Aggregates {
		if w.Aggregates[i].Plugin {
			return &w.Aggregates[i]
		}
	}
	return nil
}

// EventTimeSpec says where a source's event time comes from and how its
// watermarks follow it.
type EventTimeSpec struct {
	Meta
	Field             string   // dotted JSON path; "" = the record's own timestamp
	Path              []string // Field split at the dots
	Format            string   // epoch_ms (default) | epoch_s | rfc3339 | sql
	MaxOutOfOrderness time.Duration
	IdleTimeout       time.Duration // 0 = a quiet partition always holds the watermark
	IdleAdvance       bool          // advance with the wall clock when every partition is idle
}

var (
	windowFields = []string{"name", "type", "kind", "size", "slide", "step", "gap", "count", "allowed_lateness",
		"emit", "emit_interval", "key_field", "time_format", "aggregates", "plugin", "config", "max_keys_in_memory",
		"memory_limit_pages", "timeout"}
	windowKinds     = []string{string(WindowTumbling), string(WindowSliding), string(WindowSession), string(WindowCount), string(WindowCumulate)}
	emitModes       = []string{EmitOnClose, EmitOnUpdate, EmitEvery}
	windowTimes     = []string{WindowTimeSQL, WindowTimeEpochMS, WindowTimeRFC3339}
	aggregateFields = []string{"func", "field", "as", "exact"}
	// pluginAggFields are those of a plugin aggregate's entry; allAggFields
	// those of either kind of entry.
	pluginAggFields = []string{"plugin", "config", "as", "memory_limit_pages", "timeout"}
	allAggFields    = []string{"func", "field", "as", "exact", "plugin", "config", "memory_limit_pages", "timeout"}
	eventTimeFields = []string{"field", "format", "max_out_of_orderness", "idle_timeout", "idle_advance"}
	eventTimeFormat = []string{"epoch_ms", "epoch_s", "rfc3339", "sql"}
	// kindNeeds lists the size fields each kind requires; the others must
	// be absent.
	kindNeeds = map[WindowKind][]string{
		WindowTumbling: {"size"},
		WindowSliding:  {"size", "slide"},
		WindowSession:  {"gap"},
		WindowCount:    {"count"},
		WindowCumulate: {"size", "step"},
	}
)

// window decodes a window operator's fields. The rules between them
// (slide and size, emit and emit_interval, distinct output names...) are
// the window package's, applied by its Schema's Check.
func (d *decoder) window(o *object, op *Operator) {
	w := &op.Window
	w.Emit, w.KeyField, w.TimeFormat = EmitOnClose, "key", WindowTimeSQL
	if v, st := o.int("max_keys_in_memory", 0, 1<<40); st == good {
		w.MaxKeysInMemory = v
	}
	k, kst := o.enum("kind", windowKinds...)
	if kst == absent {
		o.missing("kind")
	}
	w.Kind = WindowKind(k)
	durs := map[string]*time.Duration{"size": &w.Size, "slide": &w.Slide, "step": &w.Step, "gap": &w.Gap}
	for _, f := range []string{"size", "slide", "step", "gap"} {
		if v, st := o.duration(f); st == good {
			if v <= 0 {
				o.fail(f, o.get(f, kString), "must be positive")
			}
			*durs[f] = v
		}
	}
	if v, st := o.int("count", 1, 1<<40); st == good {
		w.Count = v
	}
	if kst == good {
		needs := kindNeeds[w.Kind]
		for _, f := range []string{"size", "slide", "step", "gap", "count"} {
			given := o.get(f, kNode) != nil
			switch {
			case contains(needs, f) && !given:
				o.missingf("a %s window needs %q", w.Kind, f)
			case !contains(needs, f) && given:
				o.fail(f, o.get(f, kNode), "does not apply to a %s window (it takes %v)", w.Kind, needs)
			}
		}
	}
	if v, st := o.duration("allowed_lateness"); st == good {
		w.AllowedLateness = v
	}
	if e, st := o.enum("emit", emitModes...); st == good {
		w.Emit = e
	}
	if v, st := o.duration("emit_interval"); st == good {
		w.EmitInterval = v
	}
	if s, st := o.nonEmpty("key_field"); st == good {
		w.KeyField = s
	}
	if s, st := o.enum("time_format", windowTimes...); st == good {
		w.TimeFormat = s
	}
	// A window aggregates with built-in functions, with a Wasm aggregate
	// plugin (create/add/merge/result), whose result is the output value,
	// or with both: the plugin is then an entry of aggregates, its result
	// a field of the output (pluginAggregate).
	if p, pst := o.nonEmpty("plugin"); pst == good {
		op.Plugin = d.abs(p)
		op.PluginKind = d.checkPlugin(o, "plugin", p, op.Plugin)
		op.ConfigJSON = []byte("{}")
		if v := o.get("config", kNode); v != nil && !isNull(v) {
			op.ConfigJSON = d.toJSON(nil, v, o.path("config"), joinEnv(o.env, "config"))
		}
		op.MemoryLimitPages = DefaultMemoryLimitPages
		if v, st := o.int("memory_limit_pages", 1, MaxMemoryLimitPages); st == good {
			op.MemoryLimitPages = int(v)
		}
		pluginTimeout(o, op)
		if o.get("aggregates", kNode) != nil {
			o.fail("aggregates", o.get("aggregates", kNode),
				"a window takes either aggregates or a plugin, not both; to combine built-in aggregates with a plugin's, list the plugin among them: {plugin: %s, as: …}", p)
		}
		return
	}
	for _, f := range []string{"config", "memory_limit_pages", "timeout"} {
		if o.get(f, kNode) != nil {
			o.fail(f, o.get(f, kNode), "only applies with a plugin (a plugin in aggregates takes it in its entry)")
		}
	}
	items, st := o.list("aggregates")
	if st == absent || (st == good && len(items) == 0) {
		o.missingf("a window needs at least one entry in %q, or a %q", "aggregates", "plugin")
	}
	pluginAt := -1 // the index of the plugin's entry
	for i, n := range items {
		path := fmt.Sprintf("%s[%d]", o.path("aggregates"), i)
		if d.hasField(n, "plugin") {
			if a, ok := d.pluginAggregate(n, op, path, o.env, pluginAt); ok {
				pluginAt = i
				w.Aggregates = append(w.Aggregates, a)
			}
			continue
		}
		a, ao := d.aggregate(n, op, path, aggregateFuncs)
		if ao == nil {
			continue
		}
		if s, ast := ao.nonEmpty("as"); ast == absent {
			ao.missing("as")
		} else if ast == good {
			a.As = s
		}
		if v, est := ao.int("exact", 1, 1<<16); est == good {
			a.Exact = int(v)
		}
		ao.finish(aggregateFields, allAggFields, "a built-in aggregate (func)")
		w.Aggregates = append(w.Aggregates, a)
	}
}

// hasField reports whether n is a mapping with the field name.
func (d *decoder) hasField(n *yaml.Node, name string) bool {
	n = d.res(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := d.res(n.Content[i]); k.Kind == yaml.ScalarNode && k.Value == name {
			return true
		}
	}
	return false
}

// pluginAggregate decodes the entry of a window's aggregates that names a
// plugin, {plugin: …, config: {…}, as: …}: the plugin, its config,
// memory_limit_pages and timeout become the operator's (as a window's
// plugin field sets them), and its result the output field as. prev is
// the index of an earlier plugin entry, or -1. env is the operator's
// environment prefix: the entry's config (only) is overridden from
// <env>_AGGREGATES_<as>_CONFIG_….
func (d *decoder) pluginAggregate(n *yaml.Node, op *Operator, path, env string, prev int) (AggregateSpec, bool) {
	a := AggregateSpec{Plugin: true}
	ao := d.object(n, op.Pos, path, "", &a.Meta, false)
	if ao == nil {
		return a, false
	}
	cfgEnv := ""
	if s, st := ao.nonEmpty("as"); st == absent {
		ao.missingf("a plugin aggregate needs %q, the output field of its result", "as")
	} else if st == good {
		a.As = s
		cfgEnv = joinEnv(joinEnv(joinEnv(env, "aggregates"), s), "config")
	}
	if v := ao.get("func", kNode); v != nil {
		ao.fail("func", v, "an aggregate takes either func or plugin, not both")
	}
	p, pst := ao.nonEmpty("plugin")
	if pst != good {
		return a, false
	}
	if prev >= 0 {
		ao.fail("plugin", ao.get("plugin", kString), "a window takes one plugin aggregate; aggregates[%d] is one already", prev)
		return a, false
	}
	op.Plugin = d.abs(p)
	op.PluginKind = d.checkPlugin(ao, "plugin", p, op.Plugin)
	op.ConfigJSON = []byte("{}")
	if v := ao.get("config", kNode); v != nil && !isNull(v) {
		op.ConfigJSON = d.toJSON(nil, v, ao.path("config"), cfgEnv)
	}
	op.MemoryLimitPages = DefaultMemoryLimitPages
	if v, st := ao.int("memory_limit_pages", 1, MaxMemoryLimitPages); st == good {
		op.MemoryLimitPages = int(v)
	}
	pluginTimeout(ao, op)
	ao.finish(pluginAggFields, allAggFields, "a plugin aggregate")
	return a, true
}

// aggregate decodes the func and field of one aggregate entry, with funcs
// the functions allowed. The caller decodes the rest (as, exact) and calls
// finish; a nil object means the entry was not a mapping.
func (d *decoder) aggregate(n *yaml.Node, op *Operator, path string, funcs []string) (AggregateSpec, *object) {
	a := AggregateSpec{}
	ao := d.object(n, op.Pos, path, "", &a.Meta, false)
	if ao == nil {
		return a, nil
	}
	if f, fst := ao.enum("func", funcs...); fst == absent {
		ao.missing("func")
	} else if fst == good {
		a.Func = f
	}
	if f, segs, fst := ao.fieldPath("field"); fst == good {
		a.Field, a.Path = f, segs
	} else if fst == absent && a.Func != "" && a.Func != "count" {
		ao.missingf("%s needs a %q", a.Func, "field")
	}
	return a, ao
}

// eventTime decodes a source's event_time block.
func (d *decoder) eventTime(o *object, s *Source) {
	n := o.get("event_time", kNode)
	if n == nil {
		return
	}
	et := &EventTimeSpec{Format: "epoch_ms"}
	eo := d.object(n, s.Pos, o.path("event_time"), joinEnv(o.env, "event_time"), &et.Meta, true)
	if eo == nil {
		return
	}
	if f, st := eo.str("field"); st == good {
		if segs, err := splitFieldPath(f); err != nil {
			eo.fail("field", eo.get("field", kString), "invalid field path %q: %v", f, err)
		} else {
			et.Field, et.Path = f, segs
		}
	}
	if f, st := eo.enum("format", eventTimeFormat...); st == good {
		if et.Field == "" {
			eo.fail("format", eo.get("format", kString), "only applies with a field")
		}
		et.Format = f
	}
	for name, dst := range map[string]*time.Duration{"max_out_of_orderness": &et.MaxOutOfOrderness, "idle_timeout": &et.IdleTimeout} {
		if v, st := eo.duration(name); st == good {
			*dst = v
		}
	}
	if b, st := eo.bool("idle_advance"); st == good {
		et.IdleAdvance = b
	}
	eo.finish(eventTimeFields, eventTimeFields, "")
	s.EventTime = et
}
