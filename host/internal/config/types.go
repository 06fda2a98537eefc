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

	DefaultKafkaClientID   = "weir"            // kafka.client_id when absent
	DefaultEmbeddedListen  = "127.0.0.1:0"     // kafka.embedded.listen when absent (an ephemeral port)
	DefaultPartitions      = 3                 // kafka.embedded.partitions when absent
	MaxPartitions          = 1024              // upper bound of kafka.embedded.partitions
	DefaultCompression     = CompressionSnappy // Kafka sink compression when absent (franz-go's default)
	DefaultAcks            = AcksAll           // Kafka sink acks when absent
	DefaultDeliveryTimeout = 2 * time.Minute   // Kafka sink delivery_timeout when absent
	MaxBatchMaxBytes       = 1 << 30           // upper bound of a Kafka sink's batch_max_bytes
	MaxTopicLength         = 249               // longest Kafka topic name
)

// SourceType is the type of a source.
type SourceType string

// Source types.
const (
	SourceFile      SourceType = "file"      // reads a file
	SourceStdin     SourceType = "stdin"     // reads standard input
	SourceGenerator SourceType = "generator" // generates synthetic records
	SourceKafka     SourceType = "kafka"     // consumes Kafka topics in a consumer group
	SourceNexmark   SourceType = "nexmark"   // generates Nexmark benchmark events (nexmark.go)
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

	// Kafka sources: each Kafka record's value is one weir record.
	KafkaFormatJSON SourceFormat = "json" // the value must be JSON; others go to the dead letters
	KafkaFormatRaw  SourceFormat = "raw"  // the value's bytes as they are
)

// StopAt says whether a Kafka source ends, as Flink's scan.bounded.mode
// does.
type StopAt string

// Where Kafka sources stop.
const (
	StopNever    StopAt = "never"  // read until stopped (the default)
	StopAtLatest StopAt = "latest" // end once every partition reaches the end offset it had when the source started
)

// StartPosition is where a Kafka source starts reading.
type StartPosition string

// Start positions of Kafka sources. Whether a group's committed offsets
// take precedence over StartEarliest, StartLatest and StartTimestamp is up
// to the Kafka source; the config only records the choice.
const (
	StartEarliest  StartPosition = "earliest"  // the oldest record still in each partition
	StartLatest    StartPosition = "latest"    // records produced after the source starts
	StartCommitted StartPosition = "committed" // the consumer group's committed offsets
	// StartTimestamp starts at the first record whose timestamp is at or
	// after Source.StartTimestamp. It is what an RFC 3339 timestamp in the
	// start field gives; the word "timestamp" itself is not accepted there.
	StartTimestamp StartPosition = "timestamp"
)

// OperatorType is the type of an operator.
type OperatorType string

// Operator types.
const (
	OperatorKeyBy   OperatorType = "key_by"   // sets the record key from a JSON field
	OperatorMap     OperatorType = "map"      // plugin: one record in, one record out
	OperatorFlatMap OperatorType = "flat_map" // plugin: one record in, zero or more out
	OperatorFilter  OperatorType = "filter"   // plugin: one record in, kept or dropped
	OperatorWindow  OperatorType = "window"   // keyed windows with built-in aggregates
	OperatorRolling OperatorType = "rolling"  // per-record aggregates over trailing windows (SQL OVER)
	OperatorLookup  OperatorType = "lookup"   // enriches records from a SQL table (a processing-time lookup join)
	// OperatorTableJoin enriches records from a Kafka topic read as a table
	// (a KStream-GlobalKTable join).
	OperatorTableJoin OperatorType = "table_join"
	// OperatorJoin pairs the records of two sources by key (an interval
	// or regular stream-stream join).
	OperatorJoin OperatorType = "join"
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
	PluginSource PluginKind = "source" // a folder of plugin source (pluginbuild.Detect)
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
	SinkKafka   SinkType = "kafka" // produces to a Kafka topic
	// SinkDatabase writes rows to a SQL table, upserting by a key.
	SinkDatabase SinkType = "database"
)

// SinkFormat is how a sink writes records.
type SinkFormat string

// Sink formats.
const (
	SinkFormatJSON SinkFormat = "json" // each record as one line of JSON
	SinkFormatRaw  SinkFormat = "raw"  // each record's value bytes as they are, one per line
)

// Compression is the codec a Kafka sink compresses batches with.
type Compression string

// Compression codecs.
const (
	CompressionNone   Compression = "none"
	CompressionGzip   Compression = "gzip"
	CompressionSnappy Compression = "snappy"
	CompressionLZ4    Compression = "lz4"
	CompressionZstd   Compression = "zstd"
)

// Acks is how many replicas must have a Kafka sink's record before the
// broker acknowledges it.
type Acks string

// Acknowledgement levels.
const (
	AcksAll    Acks = "all"    // every in-sync replica
	AcksLeader Acks = "leader" // the partition leader only
	AcksNone   Acks = "none"   // no acknowledgement; records may be lost silently
)

// SASLMechanism is a Kafka SASL mechanism, in its canonical upper-case
// spelling.
type SASLMechanism string

// SASL mechanisms.
const (
	SASLPlain       SASLMechanism = "PLAIN"
	SASLScramSHA256 SASLMechanism = "SCRAM-SHA-256"
	SASLScramSHA512 SASLMechanism = "SCRAM-SHA-512"
)

// DeadLetterType is where rejected records go.
type DeadLetterType string

// Dead-letter types.
const (
	DeadLetterStderr DeadLetterType = "stderr" // standard error
	DeadLetterFile   DeadLetterType = "file"   // a file
	DeadLetterKafka  DeadLetterType = "kafka"  // a Kafka topic
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
	Kafka      Kafka      // the Kafka cluster of every Kafka stage, defaults applied
	Sources    []Source   // at least one
	Operators  []Operator // in chain order; may be empty
	Sinks      []Sink     // at least one
	DeadLetter DeadLetter // where rejected records go
	State      State      // where keyed state is kept
	// Checkpoints configures checkpoints and the delivery guarantee.
	Checkpoints Checkpoints
}

// UsesKafka reports whether any source, table_join operator, sink or the
// dead-letter output of the pipeline is Kafka.
func (p *Pipeline) UsesKafka() bool {
	for i := range p.Sources {
		if p.Sources[i].Type == SourceKafka {
			return true
		}
	}
	for i := range p.Sinks {
		if p.Sinks[i].Type == SinkKafka {
			return true
		}
	}
	for i := range p.Operators {
		if p.Operators[i].Type == OperatorTableJoin {
			return true
		}
	}
	return p.DeadLetter.Type == DeadLetterKafka
}

// Kafka is the cluster every Kafka stage of the pipeline uses: brokers to
// connect to or, when there are none, a broker weir starts in-process.
type Kafka struct {
	Meta
	// Brokers are the seed brokers, each host:port. Empty means weir starts
	// an embedded broker configured by Embedded.
	Brokers  []string
	ClientID string // client id sent to the brokers, default DefaultKafkaClientID

	SASL     KafkaSASL     // authentication; Mechanism == "" = none
	TLS      KafkaTLS      // encryption; Enabled == false = plain text
	Embedded KafkaEmbedded // the embedded broker; zero when Brokers is set
}

// IsEmbedded reports whether the pipeline's Kafka stages use a broker weir
// starts itself, because no brokers are given.
func (k Kafka) IsEmbedded() bool { return len(k.Brokers) == 0 }

// KafkaSASL is the SASL authentication of the Kafka client. The block is
// either absent (Mechanism == "") or complete.
type KafkaSASL struct {
	Meta
	Mechanism SASLMechanism // canonical upper-case; "" = no SASL
	User      string        // non-empty when Mechanism is set
	Password  string        // non-empty when Mechanism is set
}

// KafkaTLS is the TLS configuration of the Kafka client. Paths are
// absolute; when Enabled they name existing files.
type KafkaTLS struct {
	Meta
	Enabled            bool   // true when the tls block is present, unless it says enabled: false
	CAFile             string // PEM certificate authorities to trust; "" = the system's
	CertFile           string // PEM client certificate; set together with KeyFile, or neither
	KeyFile            string // PEM private key of CertFile
	ServerName         string // name to verify in the broker certificates; "" = the dialled host
	InsecureSkipVerify bool   // skip certificate verification (tests only)
}

// KafkaEmbedded configures the broker weir starts when Kafka.Brokers is
// empty. Its defaults are applied exactly when Kafka.IsEmbedded.
type KafkaEmbedded struct {
	Meta
	Listen     string // host:port to listen on (port 0 = ephemeral), default DefaultEmbeddedListen
	Partitions int    // partitions of each topic weir creates, 1..MaxPartitions, default DefaultPartitions
	// DataDir is the absolute directory the broker persists its data in;
	// its parent exists. "" = keep data in memory only.
	DataDir string
}

// Engine holds the runtime settings of the pipeline.
type Engine struct {
	Meta
	BatchSize   int           // records per batch, 1..MaxBatchSize
	BatchLinger time.Duration // longest a throttled generator holds a partial batch, >= 0
	QueueDepth  int           // batches buffered between stages, 1..MaxQueueDepth
	Parallelism int           // workers running the operator chain, 1..MaxParallelism
	// MemoryLimit, in bytes, is the Go runtime's soft memory limit for the
	// process (GOMEMLIMIT): the garbage collector works harder near it, so
	// that with windows bounded by max_keys_in_memory the process stays
	// near it. 0 leaves the runtime's own setting.
	MemoryLimit int64
}

// Source is one input of the pipeline. Which fields are meaningful depends on
// Type; the others are zero.
type Source struct {
	Meta
	Name string     // stage name, unique across all stages
	Type SourceType // which kind of source

	// file, stdin and kafka
	Path string // file: absolute path of an existing regular file
	// Format is, for file: default FormatAuto; for stdin: FormatJSONL or
	// FormatLines, default FormatJSONL; for kafka: KafkaFormatJSON or
	// KafkaFormatRaw, default KafkaFormatJSON.
	Format SourceFormat

	// generator
	Count  int64      // records to produce; 0 = unbounded
	Rate   float64    // records per second; 0 = unthrottled
	Seed   int64      // random seed, default DefaultSeed
	Key    string     // name of one of Fields whose value becomes the record key; "" = no key
	Fields []GenField // at least one; order is the JSON output field order

	// kafka: exactly one of Topics and TopicRegex is set.
	Topics []string // topics to consume, valid Kafka topic names, no duplicates
	// TopicRegex is a Go regexp (RE2 syntax) that compiles; it subscribes
	// to every topic it matches anywhere in the name, as franz-go does, so
	// write ^…$ to match whole names.
	TopicRegex string
	Group      string // consumer group, default the pipeline name
	// InstanceID makes the member static (group.instance.id, KIP-345): a
	// restarted instance takes its partitions back at once, rather than
	// after the session timeout of the member it replaces. Each running
	// instance needs its own.
	InstanceID string
	// SessionTimeout is how long the group waits for a member that stopped
	// heartbeating before giving its partitions to others (and, for a
	// pipeline with state, before a standby takes over); 0 = the client's
	// default, 45s.
	SessionTimeout time.Duration
	Start          StartPosition // default StartEarliest
	StartTimestamp int64         // StartTimestamp: epoch milliseconds, >= 0; 0 otherwise
	StopAt         StopAt        // default StopNever

	// nexmark (also Count, Rate and Seed; see nexmark.go)
	Nexmark NexmarkSpec

	// file, stdin, generator, kafka: nil = processing time (the wall clock
	// is the watermark)
	EventTime *EventTimeSpec
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
	// SourceKeyPaths overrides KeyPath for the records of some sources
	// (key_by's fields: source name → field path), so that a join's sides
	// are keyed by their own fields.
	SourceKeyPaths map[string][]string
	// Repartition says when the key_by's records cross a Kafka topic, so
	// that the instances of a pipeline sharing its consumer group share
	// the keyed state after it by task (see RepartitionMode).
	Repartition RepartitionMode

	// map, flat_map, filter
	Plugin     string     // absolute path of the plugin (.wasm file or Go source directory)
	PluginKind PluginKind // what Plugin points at
	// Shadow is the absolute path of a candidate plugin that runs beside
	// Plugin on the same input, its outputs compared and dropped, until it
	// is promoted; "" for none.
	Shadow string
	// ConfigJSON is the plugin config as compact JSON with mapping keys in
	// YAML document order. It is {} when config is absent or null.
	ConfigJSON       []byte
	BatchSize        int // records per plugin call; defaults to Engine.BatchSize
	MemoryLimitPages int // 64 KiB Wasm pages, 1..MaxMemoryLimitPages, default DefaultMemoryLimitPages
	// Timeout bounds each call into the plugin; 0 = the default (5s),
	// NoTimeout = none.
	Timeout time.Duration
	// Limits bound what one plugin call may make the host hold; 0 fields
	// = the defaults.
	Limits PluginLimits
	// StateTTL expires the plugin's state values not written for this
	// long; 0 = never. StateTTLEventTime measures it in event time.
	StateTTL          time.Duration
	StateTTLEventTime bool

	// window
	Window Window

	// rolling
	Rolling Rolling

	// lookup (also BatchSize)
	Lookup Lookup

	// table_join
	TableJoin TableJoin

	// join
	Join Join

	// Settings are the settings of a type of Kinds, as its Schema decoded
	// them; nil for the built-in types.
	Settings any
}

// Values of a plugin operator's state_ttl_time.
const (
	TTLProcessingTime = "processing" // the wall clock (default)
	TTLEventTime      = "event"      // record timestamps and the watermark
)

// Sink is one output of the pipeline. Which fields are meaningful depends
// on Type; the others are zero.
type Sink struct {
	Meta
	Name   string     // stage name, unique across all stages
	Type   SinkType   // which kind of sink
	Format SinkFormat // stdout, file and kafka: default SinkFormatJSON
	Path   string     // file: absolute path; its parent directory exists

	// kafka: exactly one of Topic and TopicField is set.
	Topic      string   // the topic every record goes to, a valid Kafka topic name
	TopicField string   // dotted JSON path of the field naming each record's topic, as written
	TopicPath  []string // TopicField split at the dots
	// KeyField is the dotted JSON path of the field whose value becomes the
	// Kafka key, as written; "" = the record's own key (from key_by), if
	// any. TopicField and KeyField require SinkFormatJSON.
	KeyField        string
	KeyPath         []string      // KeyField split at the dots
	Compression     Compression   // default DefaultCompression
	Linger          time.Duration // how long to wait for a batch to fill, >= 0, default 0
	BatchMaxBytes   int32         // largest batch, 1..MaxBatchMaxBytes; 0 = the client's default
	Acks            Acks          // default DefaultAcks
	DeliveryTimeout time.Duration // how long a record may take to be acknowledged, > 0, default DefaultDeliveryTimeout

	// database
	Database Database
	Table    string       // a plain SQL name, optionally schema.table
	Columns  []SinkColumn // at least one, in the order written
	// Key names the columns of a primary or unique key of Table: rows are
	// upserted by it, so a record written again replaces its row. Empty =
	// plain inserts.
	Key []string
}

// DeadLetter says where records rejected by operators or sinks are written.
type DeadLetter struct {
	Meta
	Type  DeadLetterType // default DeadLetterStderr
	Path  string         // file: absolute path; its parent directory exists
	Topic string         // kafka: a valid Kafka topic name
}

// NoTimeout is Operator.Timeout for "timeout: none".
const NoTimeout time.Duration = -1

// MaxStateValue is the most max_state_value may be: the ABI's bound on a
// state value.
const MaxStateValue = 16 << 20

// PluginLimits are a plugin operator's max_state_value, max_batch_state and
// max_batch_output, in bytes; 0 = the default.
type PluginLimits struct {
	StateValue  int
	StateBytes  int
	OutputBytes int
}

// OperatorTypes returns every operator type a pipeline file may name.
func OperatorTypes() []OperatorType {
	out := make([]OperatorType, len(operatorTypes))
	for i, t := range operatorTypes {
		out[i] = OperatorType(t)
	}
	return out
}

// RepartitionMode is a key_by's repartition setting: whether the records
// it keys, when keyed state follows, cross a repartition topic.
type RepartitionMode uint8

const (
	// RepartitionAuto (repartition unset): through the topic while the
	// instance shares the pipeline's tasks with others, in process while
	// it owns every task and the topic holds nothing unread.
	RepartitionAuto RepartitionMode = iota
	// RepartitionAlways (repartition: true): always through the topic,
	// even for an instance that owns every task.
	RepartitionAlways
	// RepartitionNever (repartition: false): never; the keyed state after
	// the key_by is then one instance's, others waiting as standbys.
	RepartitionNever
)
