package config

import "time"

// Version is the only pipeline schema version this package understands.
const Version = 1

// Defaults and limits of the schema.
const (
	DefaultBatchSize        = 512                   // engine.batch_size when absent
	MaxBatchSize            = 65536                 // upper bound of every batch_size
	DefaultBatchLinger      = 20 * time.Millisecond // engine.batch_linger when absent
	DefaultQueueDepth       = 4                     // engine.queue_depth when absent
	MaxQueueDepth           = 1024                  // upper bound of engine.queue_depth
	DefaultParallelism      = 1                     // engine.parallelism when absent
	MaxParallelism          = 1024                  // upper bound of engine.parallelism
	DefaultMemoryLimitPages = 1024                  // operator memory_limit_pages when absent (64 MiB)
	MaxMemoryLimitPages     = 65536                 // upper bound of memory_limit_pages (4 GiB)
	DefaultSeed             = 1                     // generator seed when absent
	MaxStringLength         = 65536                 // upper bound of a random_string length
	MaxDecimals             = 15                    // upper bound of a random_float decimals
)

// SourceType is the type of a source.
type SourceType string

// Source types.
const (
	SourceFile      SourceType = "file"      // reads a file
	SourceStdin     SourceType = "stdin"     // reads standard input
	SourceGenerator SourceType = "generator" // generates synthetic records
)

// SourceFormat is how a file or stdin source splits its input into records.
type SourceFormat string

// Source formats.
const (
	// FormatAuto (file sources only) is FormatJSONArray when the first
	// non-space byte of the file is '[', else FormatJSONL.
	FormatAuto      SourceFormat = "auto"
	FormatJSONL     SourceFormat = "jsonl"      // one JSON value per line
	FormatJSONArray SourceFormat = "json_array" // one JSON array whose elements are the records
	FormatLines     SourceFormat = "lines"      // each line is a record, taken as raw bytes
)

// OperatorType is the type of an operator.
type OperatorType string

// Operator types.
const (
	OperatorKeyBy   OperatorType = "key_by"   // sets the record key from a JSON field
	OperatorMap     OperatorType = "map"      // plugin: one record in, one record out
	OperatorFlatMap OperatorType = "flat_map" // plugin: one record in, zero or more out
	OperatorFilter  OperatorType = "filter"   // plugin: one record in, kept or dropped
)

// IsPlugin reports whether operators of type t run a Wasm plugin.
func (t OperatorType) IsPlugin() bool {
	return t == OperatorMap || t == OperatorFlatMap || t == OperatorFilter
}

// PluginKind says what an operator's plugin path points at.
type PluginKind string

// Plugin kinds.
const (
	PluginWasm   PluginKind = "wasm"   // a compiled .wasm file
	PluginSource PluginKind = "source" // a directory of Go source using the weir SDK
)

// SinkType is the type of a sink.
type SinkType string

// Sink types.
const (
	SinkStdout SinkType = "stdout" // writes to standard output
	SinkFile   SinkType = "file"   // writes to a file
	// SinkDiscard drops every record: for benchmarks, and for pipelines run
	// for their side effects.
	SinkDiscard SinkType = "discard"
)

// SinkFormat is how a sink writes records.
type SinkFormat string

// Sink formats.
const (
	SinkFormatJSON SinkFormat = "json" // each record as one line of JSON
	SinkFormatRaw  SinkFormat = "raw"  // each record's value bytes as they are, one per line
)

// DeadLetterType is where rejected records go.
type DeadLetterType string

// Dead-letter types.
const (
	DeadLetterStderr DeadLetterType = "stderr" // standard error
	DeadLetterFile   DeadLetterType = "file"   // a file
)

// GenKind is the kind of a generator field.
type GenKind string

// Generator field kinds.
const (
	GenSequence     GenKind = "sequence"      // integers Start, Start+1, … up to End
	GenRandomFloat  GenKind = "random_float"  // uniform float in [Min, Max]
	GenRandomInt    GenKind = "random_int"    // uniform integer in [MinInt, MaxInt]
	GenRandomChoice GenKind = "random_choice" // one of Values, uniformly
	GenRandomString GenKind = "random_string" // Length random alphanumeric characters
	GenRandomBool   GenKind = "random_bool"   // true or false
	GenConstant     GenKind = "constant"      // always Value
	GenTimestamp    GenKind = "timestamp"     // event time in epoch milliseconds
)

// Pipeline is a decoded, defaulted and validated pipeline file.
type Pipeline struct {
	Meta
	File       string     // absolute path of the pipeline file
	Dir        string     // absolute directory that relative paths were resolved against
	Version    int        // always Version
	Name       string     // pipeline name, matching [a-z0-9][a-z0-9_.-]*
	Engine     Engine     // engine settings, defaults applied
	Sources    []Source   // at least one
	Operators  []Operator // in chain order; may be empty
	Sinks      []Sink     // at least one
	DeadLetter DeadLetter // where rejected records go
}

// Engine holds the runtime settings of the pipeline.
type Engine struct {
	Meta
	BatchSize   int           // records per batch, 1..MaxBatchSize
	BatchLinger time.Duration // longest a throttled generator holds a partial batch, >= 0
	QueueDepth  int           // batches buffered between stages, 1..MaxQueueDepth
	Parallelism int           // workers running the operator chain, 1..MaxParallelism
}

// Source is one input of the pipeline. Which fields are meaningful depends on
// Type; the others are zero.
type Source struct {
	Meta
	Name string     // stage name, unique across all stages
	Type SourceType // which kind of source

	// file and stdin
	Path   string       // file: absolute path of an existing regular file
	Format SourceFormat // file: default FormatAuto; stdin: FormatJSONL or FormatLines, default FormatJSONL

	// generator
	Count  int64      // records to produce; 0 = unbounded
	Rate   float64    // records per second; 0 = unthrottled
	Seed   int64      // random seed, default DefaultSeed
	Key    string     // name of one of Fields whose value becomes the record key; "" = no key
	Fields []GenField // at least one; order is the JSON output field order
}

// GenField is one field of the records a generator source produces.
//
// Sequence semantics: a sequence yields Start, Start+1, …, *End. With
// Count == 0 the source ends when a bounded sequence is exhausted; with
// Count > 0 bounded sequences wrap around to Start and the source ends after
// Count records. A sequence without End never ends.
//
// Timestamp semantics: with Rate > 0 the i-th record (from 0) carries
// start + i*1000/Rate milliseconds, where start is the wall-clock time the
// source started, so event time is evenly spaced and reproducible relative
// to start; with Rate == 0 it carries the wall-clock time of generation.
type GenField struct {
	Meta
	Name string  // JSON field name, unique within the generator
	Kind GenKind // how values are generated

	Start int64  // sequence: first value, default 0
	End   *int64 // sequence: last value (inclusive), nil = unbounded; >= Start

	Min, Max float64 // random_float: bounds, Min <= Max
	Decimals int     // random_float: digits after the point, 0..MaxDecimals; -1 (default) = unrounded

	MinInt, MaxInt int64 // random_int: bounds (inclusive), MinInt <= MaxInt

	Values [][]byte // random_choice: candidate values as compact JSON, at least one

	Length int // random_string: characters, 1..MaxStringLength

	Value []byte // constant: the value as compact JSON
}

// Operator is one stage of the operator chain. Which fields are meaningful
// depends on Type; the others are zero.
type Operator struct {
	Meta
	Name string       // stage name, unique across all stages
	Type OperatorType // which kind of operator

	// key_by
	Field   string   // dotted JSON field path as written, e.g. "a.b.c"
	KeyPath []string // Field split at the dots

	// map, flat_map, filter
	Plugin     string     // absolute path of the plugin (.wasm file or Go source directory)
	PluginKind PluginKind // what Plugin points at
	// ConfigJSON is the plugin config as compact JSON with mapping keys in
	// YAML document order. It is {} when config is absent or null.
	ConfigJSON       []byte
	BatchSize        int           // records per plugin call; defaults to Engine.BatchSize
	MemoryLimitPages int           // 64 KiB Wasm pages, 1..MaxMemoryLimitPages, default DefaultMemoryLimitPages
	Timeout          time.Duration // per-batch deadline; 0 = none
}

// Sink is one output of the pipeline.
type Sink struct {
	Meta
	Name   string     // stage name, unique across all stages
	Type   SinkType   // which kind of sink
	Format SinkFormat // default SinkFormatJSON
	Path   string     // file: absolute path; its parent directory exists
}

// DeadLetter says where records rejected by operators or sinks are written.
type DeadLetter struct {
	Meta
	Type DeadLetterType // default DeadLetterStderr
	Path string         // file: absolute path; its parent directory exists
}
