package config

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/weir-stream/weir/host/internal/pluginbuild"
)

// namePattern is what pipeline and stage names must match.
var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)

// Field sets, by element kind and type.
var (
	pipelineFields = []string{"version", "name", "engine", "kafka", "state", "checkpoints", "sources", "operators", "sinks", "dead_letter"}
	engineFields   = []string{"batch_size", "batch_linger", "queue_depth", "parallelism", "memory_limit"}

	sourceFields = map[SourceType][]string{
		SourceFile:      {"name", "type", "path", "format", "event_time"},
		SourceStdin:     {"name", "type", "format", "event_time"},
		SourceGenerator: {"name", "type", "count", "rate", "seed", "key", "fields", "event_time"},
		SourceKafka:     {"name", "type", "topics", "topic_regex", "group", "instance_id", "session_timeout", "start", "stop_at", "format", "event_time"},
		SourceNexmark:   nexmarkFields,
	}
	operatorFields = map[OperatorType][]string{
		OperatorKeyBy:   {"name", "type", "field", "fields", "repartition"},
		OperatorMap:     pluginFields,
		OperatorFlatMap: pluginFields,
		OperatorFilter:  pluginFields,
		OperatorWindow:  windowFields,
		OperatorRolling: rollingFields,
		OperatorLookup:  lookupFields,

		OperatorTableJoin: tableJoinFields,
		OperatorJoin:      joinFields,
	}
	pluginFields = []string{"name", "type", "plugin", "shadow", "config", "batch_size", "memory_limit_pages", "timeout",
		"max_state_value", "max_batch_state", "max_batch_output", "state_ttl", "state_ttl_time"}
	sinkFields = map[SinkType][]string{
		SinkStdout:  {"name", "type", "format"},
		SinkFile:    {"name", "type", "format", "path"},
		SinkDiscard: {"name", "type"},
		SinkKafka: {"name", "type", "format", "topic", "topic_field", "key_field", "compression", "linger",
			"batch_max_bytes", "acks", "delivery_timeout"},
		SinkDatabase: dbSinkFields,
	}
	deadLetterFields = map[DeadLetterType][]string{
		DeadLetterStderr: {"type"},
		DeadLetterFile:   {"type", "path"},
		DeadLetterKafka:  {"type", "topic"},
	}
	genFields = map[GenKind][]string{
		GenSequence:     {"name", "kind", "start", "end"},
		GenRandomFloat:  {"name", "kind", "min", "max", "decimals"},
		GenRandomInt:    {"name", "kind", "min", "max"},
		GenRandomChoice: {"name", "kind", "values"},
		GenRandomString: {"name", "kind", "length"},
		GenRandomBool:   {"name", "kind"},
		GenConstant:     {"name", "kind", "value"},
		GenTimestamp:    {"name", "kind"},
	}

	sourceTypes     = []string{string(SourceFile), string(SourceStdin), string(SourceGenerator), string(SourceKafka), string(SourceNexmark)}
	fileFormats     = []string{string(FormatAuto), string(FormatJSONL), string(FormatJSONArray), string(FormatLines)}
	stdinFormats    = []string{string(FormatJSONL), string(FormatLines)}
	kafkaFormats    = []string{string(KafkaFormatJSON), string(KafkaFormatRaw)}
	operatorTypes   = []string{string(OperatorKeyBy), string(OperatorMap), string(OperatorFlatMap), string(OperatorFilter), string(OperatorWindow), string(OperatorRolling), string(OperatorLookup), string(OperatorTableJoin), string(OperatorJoin)}
	sinkTypes       = []string{string(SinkStdout), string(SinkFile), string(SinkDiscard), string(SinkKafka), string(SinkDatabase)}
	sinkFormats     = []string{string(SinkFormatJSON), string(SinkFormatRaw)}
	deadLetterTypes = []string{string(DeadLetterStderr), string(DeadLetterFile), string(DeadLetterKafka)}
	genKinds        = []string{
		string(GenSequence), string(GenRandomFloat), string(GenRandomInt), string(GenRandomChoice),
		string(GenRandomString), string(GenRandomBool), string(GenConstant), string(GenTimestamp),
	}
)

// union returns every field of any type in m, in a stable order.
func union[K ~string](m map[K][]string, order []string) []string {
	var out []string
	for _, k := range order {
		for _, f := range m[K(k)] {
			if !contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// pipeline decodes and validates the whole document.
func (d *decoder) pipeline(root *yaml.Node) *Pipeline {
	p := &Pipeline{File: d.absFile, Dir: d.dir, Version: Version}
	o := d.object(root, Pos{File: d.file, Line: 1, Col: 1}, "", EnvPrefix, &p.Meta, false)
	if o == nil {
		return nil
	}
	if o.node == nil {
		d.errAt(Pos{File: d.file}, "", "empty pipeline file")
		return nil
	}
	if v, st := o.int("version", math.MinInt64, math.MaxInt64); st == good && v != Version {
		o.fail("version", o.get("version", kScalar), "unsupported version %d (want %d)", v, Version)
	}
	if s, st := o.str("name"); st == absent {
		o.missing("name")
	} else if st == good {
		p.Name = s
		d.checkName(o, "name", s)
	}
	p.Engine = d.engine(o.get("engine", kNode), p.Pos)
	p.Kafka = d.kafka(o.get("kafka", kNode), p.Pos)

	if items, st := o.list("sources"); st != bad {
		for i, n := range items {
			if s, ok := d.source(n, i); ok {
				p.Sources = append(p.Sources, s)
			}
		}
		if len(items) == 0 {
			d.errAt(p.At("sources"), "sources", "at least one source is required")
		}
	}
	if items, st := o.list("operators"); st != bad {
		for i, n := range items {
			if op, ok := d.operator(n, i, p.Engine.BatchSize); ok {
				p.Operators = append(p.Operators, op)
			}
		}
	}
	if items, st := o.list("sinks"); st != bad {
		for i, n := range items {
			if s, ok := d.sink(n, i); ok {
				p.Sinks = append(p.Sinks, s)
			}
		}
		if len(items) == 0 {
			d.errAt(p.At("sinks"), "sinks", "at least one sink is required")
		}
	}
	p.DeadLetter = d.deadLetter(o.get("dead_letter", kNode), p.Pos)
	p.State = d.state(o)
	p.Checkpoints = d.checkpoints(o)
	o.finish(pipelineFields, pipelineFields, "pipelines")
	for i := range p.Sources {
		if s := &p.Sources[i]; s.Type == SourceKafka && s.Group == "" {
			s.Group = p.Name
		}
	}
	d.crossCheck(p)
	d.crossCheckCheckpoints(p)
	d.crossCheckJoins(p)
	return p
}

// checkName reports a name that does not match namePattern.
func (d *decoder) checkName(o *object, field, s string) bool {
	if namePattern.MatchString(s) {
		return true
	}
	o.fail(field, o.get(field, kString), "invalid name %q: must match [a-z0-9][a-z0-9_.-]*", s)
	return false
}

func (d *decoder) engine(n *yaml.Node, fallback Pos) Engine {
	e := Engine{
		BatchSize:   DefaultBatchSize,
		BatchLinger: DefaultBatchLinger,
		QueueDepth:  DefaultQueueDepth,
		Parallelism: DefaultParallelism,
	}
	o := d.object(n, fallback, "engine", EnvName("engine"), &e.Meta, true)
	if o == nil {
		return e
	}
	if v, st := o.int("batch_size", 1, MaxBatchSize); st == good {
		e.BatchSize = int(v)
	}
	if v, st := o.duration("batch_linger"); st == good {
		e.BatchLinger = v
	}
	if v, st := o.int("queue_depth", 1, MaxQueueDepth); st == good {
		e.QueueDepth = int(v)
	}
	if v, st := o.int("parallelism", 1, MaxParallelism); st == good {
		e.Parallelism = int(v)
	}
	if s, n, st := o.strNode("memory_limit"); st == good {
		if b, err := parseBytes(s); err != nil {
			o.fail("memory_limit", n, "%v", err)
		} else {
			e.MemoryLimit = b
		}
	}
	o.finish(engineFields, engineFields, "the engine block")
	return e
}

// parseBytes parses a size: a whole number of bytes, or a number with a
// unit, KiB, MiB, GiB (powers of 1024) or KB, MB, GB (of 1000).
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	num, mult := strings.TrimSpace(s), 1.0
	for _, u := range units {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f <= 0 || f*mult > math.MaxInt64/2 {
		return 0, fmt.Errorf("invalid size %q (want a positive number of bytes, or a number with KiB, MiB, GiB, KB, MB or GB)", s)
	}
	return int64(f * mult), nil
}

// stage starts decoding item i of a stage list: it names the item by its
// name (for paths and environment variables), and decodes name and the
// type field.
func (d *decoder) stage(n *yaml.Node, list string, i int, meta *Meta, typeField string, types []string) (o *object, name, typ string) {
	path := fmt.Sprintf("%s[%d]", list, i)
	env := ""
	if raw := d.peekName(n); raw != "" {
		path += fmt.Sprintf(" %q", raw)
		env = EnvName(list, raw)
	}
	if r := d.res(n); r != nil && isNull(r) {
		d.errorf(r, path, "expected a mapping, got null")
		return nil, "", ""
	}
	o = d.object(n, Pos{File: d.file}, path, env, meta, false)
	if o == nil {
		return nil, "", ""
	}
	if s, st := o.str("name"); st == absent {
		o.missing("name")
	} else if st == good && d.checkName(o, "name", s) {
		name = s
	}
	if s, st := o.enum(typeField, types...); st == absent {
		o.missing(typeField)
	} else if st == good {
		typ = s
	}
	return o, name, typ
}

func (d *decoder) source(n *yaml.Node, i int) (Source, bool) {
	var s Source
	o, name, typ := d.stage(n, "sources", i, &s.Meta, "type", sourceTypes)
	if o == nil {
		return s, false
	}
	s.Name, s.Type = name, SourceType(typ)
	switch s.Type {
	case SourceFile:
		s.Format = FormatAuto
		if p, st := o.nonEmpty("path"); st == absent {
			o.missing("path")
		} else if st == good {
			s.Path = d.abs(p)
			d.checkInputFile(o, "path", p, s.Path)
		}
		if f, st := o.enum("format", fileFormats...); st == good {
			s.Format = SourceFormat(f)
		}
	case SourceStdin:
		s.Format = FormatJSONL
		if f, st := o.enum("format", stdinFormats...); st == good {
			s.Format = SourceFormat(f)
		}
	case SourceGenerator:
		d.generator(o, &s)
	case SourceKafka:
		d.kafkaSource(o, &s)
	case SourceNexmark:
		d.nexmark(o, &s)
	}
	d.eventTime(o, &s)
	o.finish(sourceFields[s.Type], union(sourceFields, sourceTypes), o.kindOf(typ, "sources", "type"))
	return s, true
}

// countRateSeed decodes the count, rate and seed of a generating source.
func (d *decoder) countRateSeed(o *object, s *Source) {
	if v, st := o.int("count", 0, math.MaxInt64); st == good {
		s.Count = v
	}
	if v, st := o.float("rate"); st == good {
		if v < 0 {
			o.fail("rate", o.get("rate", kScalar), "must not be negative, got %v", v)
		} else {
			s.Rate = v
		}
	}
	if v, st := o.int("seed", math.MinInt64, math.MaxInt64); st == good {
		s.Seed = v
	}
}

func (d *decoder) generator(o *object, s *Source) {
	s.Seed = DefaultSeed
	d.countRateSeed(o, s)
	key, keyState := o.nonEmpty("key")
	items, st := o.list("fields")
	if st == absent {
		o.missing("fields")
	} else if st == good && len(items) == 0 {
		o.fail("fields", o.get("fields", kNode), "at least one field is required")
	}
	seen := map[string]string{}
	for i, n := range items {
		f, ok := d.genField(n, s.Meta.FieldPath("fields"), o.env, i)
		if !ok {
			continue
		}
		if f.Name != "" {
			if prev, dup := seen[f.Name]; dup {
				d.errAt(f.At("name"), f.Where, "duplicate field name %q (also %s)", f.Name, prev)
			} else {
				seen[f.Name] = f.Where
			}
		}
		s.Fields = append(s.Fields, f)
	}
	if keyState == good {
		if _, ok := seen[key]; ok {
			s.Key = key
		} else if st == good {
			names := make([]string, 0, len(s.Fields))
			for _, f := range s.Fields {
				names = append(names, f.Name)
			}
			o.fail("key", o.get("key", kString), "key %q is not one of the generator's fields%s", key, didYouMean(key, names))
		}
	}
}

func (d *decoder) genField(n *yaml.Node, listPath, srcEnv string, i int) (GenField, bool) {
	f := GenField{Decimals: -1}
	path := fmt.Sprintf("%s[%d]", listPath, i)
	env := ""
	if raw := d.peekName(n); raw != "" {
		path += fmt.Sprintf(" %q", raw)
		if srcEnv != "" {
			env = srcEnv + "_FIELDS_" + envNorm(raw)
		}
	}
	if r := d.res(n); r != nil && isNull(r) {
		d.errorf(r, path, "expected a mapping, got null")
		return f, false
	}
	o := d.object(n, Pos{File: d.file}, path, env, &f.Meta, false)
	if o == nil {
		return f, false
	}
	if s, st := o.nonEmpty("name"); st == absent {
		o.missing("name")
	} else if st == good {
		f.Name = s
	}
	kind, st := o.enum("kind", genKinds...)
	if st == absent {
		o.missing("kind")
	}
	f.Kind = GenKind(kind)
	req := func(name string, st state) bool {
		if st == absent {
			o.missing(name)
		}
		return st == good
	}
	both := func(ok1, ok2 bool) bool { return ok1 && ok2 } // evaluates both
	switch f.Kind {
	case GenSequence:
		start, st := o.int("start", math.MinInt64, math.MaxInt64)
		if st == good {
			f.Start = start
		}
		if end, st := o.int("end", math.MinInt64, math.MaxInt64); st == good {
			if end < f.Start {
				o.fail("end", o.get("end", kScalar), "end (%d) must not be less than start (%d)", end, f.Start)
			} else {
				f.End = &end
			}
		}
	case GenRandomFloat:
		lo, st1 := o.float("min")
		hi, st2 := o.float("max")
		if both(req("min", st1), req("max", st2)) {
			if lo > hi {
				o.fail("max", o.get("max", kScalar), "max (%v) must not be less than min (%v)", hi, lo)
			}
			f.Min, f.Max = lo, hi
		}
		if v, st := o.int("decimals", 0, MaxDecimals); st == good {
			f.Decimals = int(v)
		}
	case GenRandomInt:
		lo, st1 := o.int("min", math.MinInt64, math.MaxInt64)
		hi, st2 := o.int("max", math.MinInt64, math.MaxInt64)
		if both(req("min", st1), req("max", st2)) {
			if lo > hi {
				o.fail("max", o.get("max", kScalar), "max (%d) must not be less than min (%d)", hi, lo)
			}
			f.MinInt, f.MaxInt = lo, hi
		}
	case GenRandomChoice:
		items, st := o.list("values")
		if req("values", st) {
			if len(items) == 0 {
				o.fail("values", o.get("values", kNode), "at least one value is required")
			}
			for j, v := range items {
				f.Values = append(f.Values, d.toJSON(nil, v, fmt.Sprintf("%s[%d]", o.path("values"), j), ""))
			}
		}
	case GenRandomString:
		if v, st := o.int("length", 1, MaxStringLength); req("length", st) {
			f.Length = int(v)
		}
	case GenConstant:
		if v := o.get("value", kScalar); v == nil {
			o.missing("value")
		} else {
			f.Value = d.toJSON(nil, v, o.path("value"), "")
		}
	}
	o.finish(genFields[f.Kind], union(genFields, genKinds), o.kindOf(kind, "fields", "kind"))
	return f, true
}

func (d *decoder) operator(n *yaml.Node, i int, engineBatch int) (Operator, bool) {
	var op Operator
	errs := len(d.errs)
	o, name, typ := d.stage(n, "operators", i, &op.Meta, "type", d.types())
	if o == nil {
		return op, false
	}
	defer func() {
		if len(d.errs) == errs {
			d.check(&op)
		}
	}()
	op.Name, op.Type = name, OperatorType(typ)
	switch {
	case op.Type == OperatorKeyBy:
		if f, segs, st := o.fieldPath("field"); st == absent {
			o.missing("field")
		} else if st == good {
			op.Field, op.KeyPath = f, segs
		}
		d.keyFields(o, &op)
		if v, st := o.bool("repartition"); st == good {
			op.Repartition = map[bool]RepartitionMode{true: RepartitionAlways, false: RepartitionNever}[v]
		}
	case op.Type.IsPlugin():
		op.BatchSize = engineBatch
		op.MemoryLimitPages = DefaultMemoryLimitPages
		if p, st := o.nonEmpty("plugin"); st == absent {
			o.missing("plugin")
		} else if st == good {
			op.Plugin = d.abs(p)
			op.PluginKind = d.checkPlugin(o, "plugin", p, op.Plugin)
		}
		if p, st := o.nonEmpty("shadow"); st == good {
			op.Shadow = d.abs(p)
			d.checkPlugin(o, "shadow", p, op.Shadow)
		}
		op.ConfigJSON = []byte("{}")
		if v := o.get("config", kNode); v != nil && !isNull(v) {
			op.ConfigJSON = d.toJSON(nil, v, o.path("config"), joinEnv(o.env, "config"))
		}
		if v, st := o.int("batch_size", 1, MaxBatchSize); st == good {
			op.BatchSize = int(v)
		}
		if v, st := o.int("memory_limit_pages", 1, MaxMemoryLimitPages); st == good {
			op.MemoryLimitPages = int(v)
		}
		d.pluginLimits(o, &op)
		ttl, tst := o.duration("state_ttl")
		if tst == good {
			switch {
			case ttl <= 0:
				o.fail("state_ttl", o.get("state_ttl", kScalar), "must be positive")
			case ttl%time.Millisecond != 0:
				o.fail("state_ttl", o.get("state_ttl", kScalar), "%s is not a whole number of milliseconds", ttl)
			default:
				op.StateTTL = ttl
			}
		}
		if v, st := o.enum("state_ttl_time", TTLProcessingTime, TTLEventTime); st == good {
			if tst == absent {
				o.fail("state_ttl_time", o.get("state_ttl_time", kScalar), "applies only with state_ttl")
			}
			op.StateTTLEventTime = v == TTLEventTime
		}
	case op.Type == OperatorWindow:
		d.window(o, &op)
	case op.Type == OperatorRolling:
		d.rolling(o, &op)
	case op.Type == OperatorLookup:
		d.lookup(o, &op, engineBatch)
	case op.Type == OperatorTableJoin:
		d.tableJoin(o, &op)
	case op.Type == OperatorJoin:
		d.join(o, &op)
	default:
		d.settings(o, &op)
	}
	o.finish(d.fieldsOf(op.Type), d.allOperatorFields(), o.kindOf(typ, "operators", "type"))
	return op, true
}

// pluginLimits reads the sandbox's bounds on a plugin's calls: timeout
// (a duration, or none) and the max_ sizes.
func (d *decoder) pluginLimits(o *object, op *Operator) {
	pluginTimeout(o, op)
	op.Limits.StateValue = o.size("max_state_value", MaxStateValue)
	op.Limits.StateBytes = o.size("max_batch_state", math.MaxInt32)
	op.Limits.OutputBytes = o.size("max_batch_output", math.MaxInt32)
}

// pluginTimeout reads a plugin's timeout: a duration, or none.
func pluginTimeout(o *object, op *Operator) {
	if n := o.get("timeout", kString); n != nil && n.Kind == yaml.ScalarNode && n.Value == "none" {
		op.Timeout = NoTimeout
	} else if v, st := o.duration("timeout"); st == good {
		if v == 0 {
			o.fail("timeout", n, "must be greater than 0; write none for no deadline (a plugin that never returns then holds its worker)")
		}
		op.Timeout = v
	}
}

// size gets a byte size field (see parseBytes) between 1 and hi; 0 when
// absent or invalid.
func (o *object) size(name string, hi int64) int {
	s, n, st := o.strNode(name)
	if st != good {
		return 0
	}
	b, err := parseBytes(s)
	switch {
	case err != nil:
		o.fail(name, n, "%v", err)
	case b > hi:
		o.fail(name, n, "must be at most %d bytes (%dMiB), got %s", hi, hi>>20, s)
	default:
		return int(b)
	}
	return 0
}

func joinEnv(prefix, field string) string {
	if prefix == "" {
		return ""
	}
	return prefix + "_" + envNorm(field)
}

// splitFieldPath splits a dotted JSON field path such as "a.b.c".
func splitFieldPath(s string) ([]string, error) {
	if s == "" {
		return nil, errors.New("must not be empty")
	}
	segs := strings.Split(s, ".")
	for _, seg := range segs {
		if seg == "" {
			return nil, errors.New("empty segment (use a.b.c)")
		}
		if strings.IndexFunc(seg, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			return nil, errors.New("segments must not contain spaces or control characters")
		}
	}
	return segs, nil
}

func (d *decoder) sink(n *yaml.Node, i int) (Sink, bool) {
	var s Sink
	o, name, typ := d.stage(n, "sinks", i, &s.Meta, "type", sinkTypes)
	if o == nil {
		return s, false
	}
	s.Name, s.Type = name, SinkType(typ)
	if contains(sinkFields[s.Type], "format") {
		s.Format = SinkFormatJSON
		if f, st := o.enum("format", sinkFormats...); st == good {
			s.Format = SinkFormat(f)
		}
	}
	switch s.Type {
	case SinkFile:
		s.Path = d.outputPath(o)
	case SinkKafka:
		d.kafkaSink(o, &s)
	case SinkDatabase:
		d.databaseSink(o, &s)
	}
	o.finish(sinkFields[s.Type], union(sinkFields, sinkTypes), o.kindOf(typ, "sinks", "type"))
	return s, true
}

func (d *decoder) deadLetter(n *yaml.Node, fallback Pos) DeadLetter {
	dl := DeadLetter{Type: DeadLetterStderr}
	o := d.object(n, fallback, "dead_letter", EnvName("dead_letter"), &dl.Meta, true)
	if o == nil {
		return dl
	}
	typ, st := o.enum("type", deadLetterTypes...)
	switch st {
	case good:
		dl.Type = DeadLetterType(typ)
	case bad:
		dl.Type = ""
	}
	switch dl.Type {
	case DeadLetterFile:
		dl.Path = d.outputPath(o)
	case DeadLetterKafka:
		dl.Topic, _ = d.topic(o, "topic", true)
	}
	o.finish(deadLetterFields[dl.Type], union(deadLetterFields, deadLetterTypes), o.kindOf(string(dl.Type), "dead letters", "type"))
	return dl
}

// outputPath decodes the required path of a file output and checks that
// its directory exists.
func (d *decoder) outputPath(o *object) string {
	p, st := o.nonEmpty("path")
	if st == absent {
		o.missing("path")
	}
	if st != good {
		return ""
	}
	abs := d.abs(p)
	v := o.get("path", kString)
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		o.fail("path", v, "%q is a directory", p)
		return abs
	}
	dir := filepath.Dir(abs)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		o.fail("path", v, "directory %s does not exist", dir)
	case err != nil:
		o.fail("path", v, "%v", err)
	case !fi.IsDir():
		o.fail("path", v, "%s is not a directory", dir)
	}
	return abs
}

// checkInputFile reports a file source path that is not a readable file.
func (d *decoder) checkInputFile(o *object, field, p, abs string) {
	fi, err := os.Stat(abs)
	v := o.get(field, kString)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		o.fail(field, v, "file %q does not exist (resolved to %s)", p, abs)
	case err != nil:
		o.fail(field, v, "%v", err)
	case fi.IsDir():
		o.fail(field, v, "%q is a directory, not a file", p)
	}
}

// checkPlugin reports a plugin path that is neither a .wasm file nor a
// directory holding Go source, and returns which of the two it is.
func (d *decoder) checkPlugin(o *object, field, p, abs string) PluginKind {
	fi, err := os.Stat(abs)
	v := o.get(field, kString)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		o.fail(field, v, "plugin %q does not exist (resolved to %s)", p, abs)
	case err != nil:
		o.fail(field, v, "%v", err)
	case fi.IsDir():
		if _, err := pluginbuild.Detect(abs); err != nil {
			o.fail(field, v, "plugin directory %q holds no plugin source (Go or C files, a Cargo.toml, or an AssemblyScript package)", p)
			return ""
		}
		return PluginSource
	case !fi.Mode().IsRegular() || !strings.EqualFold(filepath.Ext(abs), ".wasm"):
		o.fail(field, v, "plugin %q must be a .wasm file or a directory of plugin source", p)
	default:
		return PluginWasm
	}
	return ""
}

// crossCheck validates what involves more than one element.
func (d *decoder) crossCheck(p *Pipeline) {
	type stageRef struct {
		meta *Meta
		name string
	}
	var stages []stageRef
	for i := range p.Sources {
		stages = append(stages, stageRef{&p.Sources[i].Meta, p.Sources[i].Name})
	}
	for i := range p.Operators {
		stages = append(stages, stageRef{&p.Operators[i].Meta, p.Operators[i].Name})
	}
	for i := range p.Sinks {
		stages = append(stages, stageRef{&p.Sinks[i].Meta, p.Sinks[i].Name})
	}
	byName := map[string]*Meta{}
	byEnv := map[string]*Meta{}
	for _, s := range stages {
		if s.name == "" {
			continue
		}
		if prev, dup := byName[s.name]; dup {
			d.errAt(s.meta.At("name"), s.meta.Where, "duplicate stage name %q (also %s at %s)", s.name, prev.Where, prev.At("name"))
			continue
		}
		byName[s.name] = s.meta
		list, _, _ := strings.Cut(s.meta.Where, "[")
		env := EnvName(list, s.name)
		if prev, dup := byEnv[env]; dup {
			d.errAt(s.meta.At("name"), s.meta.Where,
				"name %q maps to the same environment variables (%s_*) as %s", s.name, env, prev.Where)
			continue
		}
		byEnv[env] = s.meta
	}

	var stdin *Source
	for i := range p.Sources {
		s := &p.Sources[i]
		if s.Type != SourceStdin {
			continue
		}
		if stdin != nil {
			d.errAt(s.At("type"), s.Where, "only one source may read stdin (also %s)", stdin.Where)
			continue
		}
		stdin = s
	}

	inputs := map[string]*Meta{}
	for i := range p.Sources {
		if s := &p.Sources[i]; s.Type == SourceFile && s.Path != "" {
			inputs[s.Path] = &s.Meta
		}
	}
	outputs := map[string]*Meta{}
	checkOut := func(m *Meta, path string) {
		if path == "" {
			return
		}
		if prev, dup := outputs[path]; dup {
			d.errAt(m.At("path"), m.FieldPath("path"), "%s is also written by %s", path, prev.Where)
			return
		}
		if src, ok := inputs[path]; ok {
			d.errAt(m.At("path"), m.FieldPath("path"), "%s is the input of %s", path, src.Where)
		}
		outputs[path] = m
	}
	for i := range p.Sinks {
		if s := &p.Sinks[i]; s.Type == SinkFile {
			checkOut(&s.Meta, s.Path)
		}
	}
	if p.DeadLetter.Type == DeadLetterFile {
		checkOut(&p.DeadLetter.Meta, p.DeadLetter.Path)
	}
	d.crossCheckKafka(p)
}
