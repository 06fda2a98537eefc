// Package config loads, overrides, decodes and validates a weir pipeline
// file before anything runs.
//
// # Schema (version 1)
//
// A pipeline file is one YAML document. Field names are snake_case; a field
// that is unknown, or that does not apply to the element's type (path on a
// generator source, say), is an error, and so is a duplicate key. Durations
// use Go syntax (20ms, 1.5s, 2m; a bare 0 is allowed).
//
//	version: 1              # optional; if given must be 1
//	name: sensor-anomaly    # required; [a-z0-9][a-z0-9_.-]*
//	engine:                 # optional, every field optional
//	  batch_size: 512       # records per batch, 1..65536, default 512
//	  batch_linger: 20ms    # longest a throttled generator holds a partial batch, >= 0, default 20ms (file and stdin sources send a partial batch whenever their input pauses)
//	  queue_depth: 4        # batches buffered between stages, 1..1024, default 4
//	  parallelism: 1        # workers running each part of the operator chain, 1..1024, default 1
//	  memory_limit: 1.5GiB  # optional: the process's soft memory limit (as GOMEMLIMIT); bytes, or KiB/MiB/GiB/KB/MB/GB
//	kafka:                  # optional: the cluster every Kafka stage uses (Kafka stages need no kafka block)
//	  brokers: [h1:9092, h2:9092]  # host:port each; absent or empty = weir starts an embedded broker
//	  client_id: weir       # default weir
//	  sasl:                 # optional; with it, all three fields are required
//	    mechanism: SCRAM-SHA-256  # PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512, any case
//	    user: alice
//	    password: secret    # better left out of the file: set WEIR_KAFKA_SASL_PASSWORD
//	  tls:                  # optional; present (even empty or null) = TLS on
//	    enabled: true       # default true; false turns TLS off and skips the file checks
//	    ca_file: ca.pem     # optional; the files must exist, relative to the pipeline file's directory
//	    cert_file: c.pem    # optional, together with key_file (both or neither)
//	    key_file: k.pem
//	    server_name: broker.example  # optional
//	    insecure_skip_verify: false  # optional, default false
//	  embedded:             # optional; only allowed without brokers
//	    listen: 127.0.0.1:0 # host:port, port 0 = ephemeral; default 127.0.0.1:0
//	    partitions: 3       # partitions of each topic weir creates, 1..1024, default 3
//	    data_dir: ""        # optional: persist the broker's data here; its parent must exist; "" = memory only
//	sources:                # at least one
//	  - name: readings      # stage names: required, [a-z0-9][a-z0-9_.-]*,
//	    type: file          #   unique across sources, operators and sinks
//	    path: readings.json # file: required, must exist; relative to the pipeline file's directory
//	    format: auto        # file: auto|jsonl|json_array|lines, default auto
//	  - name: in            #   (auto = json_array if the first non-space byte is '[', else jsonl)
//	    type: stdin         # at most one stdin source
//	    format: jsonl       # stdin: jsonl|lines, default jsonl
//	  - name: gen
//	    type: generator
//	    count: 1000         # records to produce, >= 0; 0 (default) = unbounded
//	    rate: 0             # records per second, >= 0; 0 (default) = unthrottled
//	    seed: 42            # default 1
//	    key: id             # optional: a field whose value becomes the record key
//	    fields:             # at least one, names unique; order is the JSON field order
//	      - {name: id, kind: sequence, start: 1, end: 100}    # start default 0; end optional, >= start
//	      - {name: t, kind: random_float, min: 17, max: 36, decimals: 2}  # min, max required; decimals 0..15
//	      - {name: n, kind: random_int, min: 0, max: 9}       # min, max required integers, min <= max
//	      - {name: d, kind: random_choice, values: [a, b]}    # values: non-empty list of any YAML
//	      - {name: s, kind: random_string, length: 8}         # length 1..65536, required
//	      - {name: ok, kind: random_bool}
//	      - {name: c, kind: constant, value: anything}        # value required, any YAML
//	      - {name: ts, kind: timestamp}                       # event time, epoch ms
//	  - name: nexmark
//	    type: nexmark       # Nexmark benchmark events (persons, auctions, bids; package nexmark)
//	    count: 1000000      # events of the whole stream, >= 0; 0 (default) = unbounded
//	    kinds: [bid]        # optional, non-empty: person | auction | bid; default all (skipped kinds keep their numbers)
//	    first_event_rate: 10000  # events per second of event time (spaces dateTime), (0, 1e9], default 10000
//	    base_time: 1436918400000 # dateTime of event 0, epoch ms, >= 1; default 2015-07-15T00:00:00Z
//	    rate: 0             # throttle, events per second of the whole stream; 0 (default) = unthrottled
//	    seed: 0             # default 0: event n draws from java.util.Random(n), as the spec's generator
//	  - name: events
//	    type: kafka         # consumes in a consumer group
//	    topics: [sensor.readings]  # exactly one of topics (non-empty list of topic names, no duplicates)
//	    topic_regex: "^sensor\\."  #   or topic_regex (a Go regexp matched anywhere in a name, as in franz-go)
//	    group: sensor-anomaly       # default: the pipeline name
//	    instance_id: host-1 # optional static membership (KIP-345): a restart takes its partitions back at once
//	    session_timeout: 45s # optional, 1s..30m: how long the group waits for a silent member (and a standby before taking over)
//	    start: earliest     # earliest (default) | latest | committed | an RFC 3339 timestamp (not before 1970)
//	    stop_at: never      # never (default) | latest: end once each partition reaches the end offset it had at start
//	    format: json        # json (default: values must be JSON) | raw
//	    event_time:         # any source; absent = processing time (the wall clock is the watermark)
//	      field: ts         #   dotted JSON path; absent = the record's own timestamp (Kafka's)
//	      format: epoch_ms  #   epoch_ms (default) | epoch_s | rfc3339 | sql, for field
//	      max_out_of_orderness: 5s  # watermark = highest event time seen - this, per partition
//	      idle_timeout: 30s #   a partition quiet this long stops holding the watermark back; 0 = never
//	      idle_advance: false  # when all is quiet, advance the watermark with the wall clock
//	operators:              # optional, in chain order
//	  - name: by-id
//	    type: key_by        # key_by | map | flat_map | filter | window | rolling | lookup | table_join | join | dedupe
//	    field: id           # key_by: required dotted JSON path, a.b.c
//	    fields: {persons: id}  # key_by: optional, per source name, another path for that source's records
//	  - name: detect
//	    type: flat_map
//	    plugin: plugins/x   # map/flat_map/filter: required; a .wasm file or a folder of plugin source (Go, Rust, C, AssemblyScript)
//	    config: {k: 1}      # optional, any YAML; becomes Operator.ConfigJSON
//	    batch_size: 256     # optional, 1..65536, default engine.batch_size
//	    memory_limit_pages: 1024  # the guest's memory, 64 KiB Wasm pages, 1..65536, default 1024 (64 MiB); a grow past it fails in the guest
//	    timeout: 5s         # deadline of each call into the plugin (start-up, a batch, one record re-run), > 0, default 5s;
//	                        #   a call past it is interrupted: its record is dead-lettered, the run goes on;
//	                        #   none = no deadline (unsafe: a plugin that never returns holds its worker and the drain)
//	    max_state_value: 16MiB    # a state value, default and most 16MiB; a put over it fails its record
//	    max_batch_state: 32MiB    # state one call may write (a record's rewrite of a key replaces), default 32MiB
//	    max_batch_output: 32MiB   # output one call may produce (bytes, plus about 100 per record), default 32MiB
//	                        #   a call over a max_ is re-run record by record; a record over it alone is dead-lettered naming it
//	    shadow: plugins/next  # optional: a candidate run beside plugin on the same input, outputs compared, until promoted
//	    state_ttl: 24h      # optional: the plugin's state values expire this long after their last write
//	    state_ttl_time: processing  # processing (default: the wall clock) | event (record times and the watermark)
//	  - name: charge
//	    type: window        # keyed by the record key (key_by before it)
//	    kind: tumbling      # tumbling (size) | sliding (size, slide) | session (gap) | count (count) | cumulate (size, step)
//	    size: 30s
//	    allowed_lateness: 0s  # late records within this update an emitted window
//	    emit: on_close      # on_close (default) | on_update | every (with emit_interval)
//	    key_field: key      # output field for the key, default "key"
//	    max_keys_in_memory: 100000  # optional: keep at most this many keys' windows in memory, the rest in the state store
//	    time_format: sql    # window_start/window_end: sql (yyyy-MM-dd HH:mm:ss, default) | epoch_ms | rfc3339
//	    aggregates:         # at least one; output fields in this order after key, window_start, window_end
//	      - {func: sum, field: ampere_hour, as: charge_consumed}  # sum|count|avg|min|max|first|last|count_distinct (exact: N)
//	      - {plugin: plugins/maxby, config: {by: price}, as: top}  # optional, at most one: a Wasm aggregate whose result
//	                        #   (a JSON value, null when absent) is the field as; config, memory_limit_pages and
//	                        #   timeout as for map; it is given each window's key and bounds (weir_agg_result_ctx)
//	    # or, instead of aggregates, a Wasm aggregate whose result is the whole output value: plugin, config,
//	    #   memory_limit_pages and timeout as for map, at the operator's level
//	  - name: sums
//	    type: rolling       # SQL OVER: each record, once the watermark passes it, with aggregates over trailing windows
//	    order: range        # range (default): [t-range, t], peers included | rows: the current row and rows-1 before it
//	    windows:            # at least one; names unique
//	      - {name: 10m, range: 10m}   # with order: rows, {name: last5, rows: 5}
//	    aggregates:         # at least one; sum|count|avg|min|max; output fields <as>_<window name> appended
//	      - {func: sum, field: amount, as: amount_sum}            # window by window, aggregate by aggregate
//	  - name: city
//	    type: lookup        # processing-time lookup join: each record gets the columns of a row of a SQL table
//	    database: {driver: mysql, dsn: "root@tcp(127.0.0.1:3306)/test"}  # mysql (also MariaDB) | postgres
//	    query: SELECT city FROM device_metadata WHERE device_id = ?  # exactly one ?, the value of field
//	    field: device_id    # required dotted JSON path: the lookup key
//	    join: inner         # inner (default: no row, the record is dropped) | left (no row: the columns are null)
//	    cache_ttl: 1m       # optional: reuse a row (or its absence) this long; 0 (default) = no cache
//	    cache_size: 10000   # with cache_ttl: most keys cached per worker
//	  - name: customer
//	    type: table_join    # each record gets the latest value of its key in a Kafka topic read as a table (GlobalKTable)
//	    topic: customers    # required: the table, on the pipeline's cluster; loaded before any source reads, then followed
//	    field: customer_id  # optional dotted JSON path of the table key; default the record's key
//	    into: customer      # required: the field that receives the table's value
//	    join: inner         # inner (default: no value, the record is dropped) | left (no value: null)
//	  - name: sellers
//	    type: join          # stream-stream join by key (a key_by before it): each pair once, when its later record comes
//	    left: auctions      # required: the source of the left side
//	    right: persons      # required: another source, the right side; output {"auctions": left, "persons": right}
//	    join: inner         # inner (default) | left | right | full: an outer side's record that matched nothing comes
//	                        #   once, the other side null ({"auctions": left, "persons": null}), at its own event
//	                        #   time, when the watermark passes its last match (its window's end, left+upper,
//	                        #   right-lower, or +ttl); a regular join without ttl: at the end of a bounded input
//	    between: {lower: -10s, upper: 5s}  # optional interval join: left+lower <= right <= left+upper (event time);
//	                        #   absent = regular join, every record kept in state
//	    window: 10s         # or a tumbling window join: pairs whose event times share a window (not with between)
//	    ttl: 1h             # a regular join only: drop a record once the watermark passes its event time by this
//	  - name: unique
//	    type: dedupe        # a key's first record passes, its repeats are dropped (settings decoded by host/internal/dedupe)
//	    within: 10m         # optional: a repeat is less than this from one of its key's passed records, in event time;
//	                        #   absent = for ever
//	sinks:                  # at least one
//	  - name: out
//	    type: file          # stdout | file | discard | kafka | database
//	    format: json        # stdout, file, kafka: json | raw, default json
//	    path: out.jsonl     # file: required; its directory must exist; appended to, kept on resume (see "File outputs")
//	  - name: alerts
//	    type: kafka
//	    topic: sensor.alerts       # exactly one of topic (a topic name)
//	    topic_field: meta.topic    #   or topic_field (dotted JSON path naming each record's topic)
//	    key_field: id       # optional dotted JSON path of the message key; default the record's key
//	    compression: snappy # none | gzip | snappy | lz4 | zstd, default snappy
//	    linger: 5ms         # >= 0, default 0
//	    batch_max_bytes: 1048576   # 1..1073741824; absent = the client's default
//	    acks: all           # all (default) | leader | none
//	    delivery_timeout: 2m       # > 0, default 2m
//	  - name: dashboard
//	    type: database      # one transaction per batch, committed before the batch's input is acknowledged
//	    database: {driver: postgres, dsn: "postgres://postgres@127.0.0.1:5432/test"}
//	    table: average_temperatures
//	    columns: {city: city, window_time: window_end, avg_temperature: avg_temperature}  # column: dotted JSON path
//	    key: [city, window_time]   # optional upsert key (a primary or unique key): a record written again replaces its row
//	state:                  # optional: where keyed state (plugin state, windows) is kept
//	  backend: memory       # memory (default; lost at exit) | badger (on disk, survives restarts)
//	  dir: state            # badger: required; relative to the pipeline dir; its parent must exist
//	checkpoints:            # optional: consistent checkpoints of state and source positions
//	  interval: 5s          # from the end of one to the start of the next; default 5s
//	  delivery: at_least_once  # at_least_once (default) | exactly_once (Kafka outputs: one Kafka transaction per
//	                        #   checkpoint, readers use read_committed; files: cut back to the checkpoint on restart)
//	  changelog_topic: p-changelog  # runs with a Kafka source and keyed state; default "<name>-changelog"
//	  transactional_id: weir-p      # exactly_once; default "weir-<name>" (with instances side by side, "-<instance_id or host name>" appended); stable across restarts
//	  standby_replicas: 1   # instances sharing the group by task: other instances keeping a warm copy of each task's state; default 0, at most 16
//	dead_letter:            # optional, default {type: stderr}
//	  type: file            # stderr | file | kafka
//	  path: dlq.jsonl       # file: required; its directory must exist; appended to, kept on resume, as a file sink
//	  topic: weir.dlq       # kafka: required topic name
//
// Kafka topic names are 1 to 249 ASCII letters, digits, '.', '_' and '-',
// and not "." or "..". topic_field and key_field need format json. A Kafka
// sink or dead-letter output may not write a topic that a Kafka source
// reads (by name or through its topic_regex), since records would loop, and
// two Kafka sources of one group may not read the same topic. The Kafka
// sources of one group are read through one client, one member of the
// group per instance: they name their topics (no topic_regex) and give the
// same start and stop_at, and an instance_id or session_timeout one of them
// gives is theirs all (two that differ are an error). The embedded
// broker's settings get their defaults exactly when no brokers are given;
// Pipeline.UsesKafka tells whether any stage needs the cluster at all.
//
// Checkpoints need the badger state backend (they are kept with the state)
// and sources that can resume: Kafka, a file, a generator, not standard
// input. exactly_once delivery needs outputs that can take back what they
// wrote after the last checkpoint: Kafka sinks and a Kafka dead-letter
// topic, through the checkpoint's Kafka transaction (so a pipeline that
// reads or writes Kafka reads Kafka in one consumer group and nothing
// else), files, and discard.
//
// File outputs. A file sink and a file dead-letter output each append to
// one file. A run with nothing to resume from (no checkpoints, or none
// taken yet) truncates the file before it writes, as `> out.jsonl` would:
// the file holds that run's output. A run resuming from a checkpoint keeps
// what earlier runs wrote. Each checkpoint first makes the files durable
// (fsync), so no checkpoint covers input whose results a crash can lose.
// With at_least_once, a resumed run appends after the file's last complete
// line (a line a crash cut short is dropped): every result is in the file,
// and those written after the last checkpoint before a crash can be there
// twice, since their input is processed again. With exactly_once, each
// checkpoint records the files' lengths with the state and source
// positions, and a resumed run cuts each file back to its length and
// appends: every result is in the file once. A file shorter than its
// recorded length (truncated or replaced since) stops the run at start
// with an error saying so. A file is local: a run resuming on another
// machine (a standby taking over) writes its own copy, which exactly_once
// requires to hold what the checkpoint recorded. A pipeline that reads
// Kafka and keeps no keyed state resumes from the consumer group's
// offsets, not the checkpoint's; there, exactly_once allows no file sink,
// and a dead-letter file is appended to as with at_least_once.
//
// Generator sequences yield start, start+1, …, end. With count 0 the source
// ends once a bounded sequence is exhausted; with count > 0 sequences wrap
// around to start and the source ends after count records; a sequence
// without end never ends. A timestamp field carries, with rate > 0, the
// source's start time plus i*1000/rate ms for the i-th record (evenly
// spaced event time); with rate 0, the wall-clock time at which the
// record's batch was started.
//
// Relative paths are resolved against the directory of the pipeline file
// and stored absolute. Plugin configs are converted to compact JSON by
// walking the YAML node tree: mapping keys keep their document order,
// integers stay integers, floats keep their YAML text when it is valid JSON,
// and values JSON cannot express (.inf, .nan, unknown tags) are errors. An
// absent or null config becomes {}. Anchors and aliases are followed; merge
// keys (<<) are not supported.
//
// # Errors
//
// Parse and Load check the whole pipeline and return every problem at once
// as an Errors, sorted by position, one per line:
//
//	pipeline.yaml:3:13: kafka.brokers[0]: invalid address "host1": missing port (want host:port)
//	pipeline.yaml:12:5: operators[1] "detect": unknown field "plugn" (did you mean "plugin"?)
//	pipeline.yaml:20:11: sinks[0] "out".type: invalid value "stdot" (want one of stdout, file, discard, kafka, database; did you mean "stdout"?)
//	$WEIR_ENGINE_BATCH_SIZE: engine.batch_size: expected an integer, got "lots"
//
// The form is position: path: message. The position is file:line:col of
// the offending node, or $NAME when the value came from the environment
// variable NAME. The path names the element: list items are written
// list[index] "name". Code that runs later (the plugin loader, the
// runtime) reports problems with a stage in the same format through the
// stage's embedded Meta (op.Errorf("plugin", "…")) or Pos.Errorf.
//
// # Environment overrides
//
// An environment variable WEIR_<PATH> overrides a scalar field, where PATH
// is the field's path with list items addressed by their name, each part
// uppercased and every character other than an ASCII letter or digit
// replaced by '_' (see EnvName):
//
//	name                           WEIR_NAME
//	engine.batch_size              WEIR_ENGINE_BATCH_SIZE
//	sources[name=readings].path    WEIR_SOURCES_READINGS_PATH
//	operators[name=by-id].field    WEIR_OPERATORS_BY_ID_FIELD
//	sources[name=gen].fields[name=temp].max   WEIR_SOURCES_GEN_FIELDS_TEMP_MAX
//	operators[name=detect].config.threshold   WEIR_OPERATORS_DETECT_CONFIG_THRESHOLD
//	operators[name=w].aggregates[as=top].config.by   WEIR_OPERATORS_W_AGGREGATES_TOP_CONFIG_BY
//	sinks[name=alerts].topic       WEIR_SINKS_ALERTS_TOPIC
//	kafka.sasl.password            WEIR_KAFKA_SASL_PASSWORD
//	kafka.brokers                  WEIR_KAFKA_BROKERS=h1:9092,h2:9092
//
// An override applies to every scalar field of the schema that belongs to
// an element present in the file (or to the engine, kafka and dead_letter
// blocks, which always exist), whether or not the file sets that field; so
// WEIR_ENGINE_PARALLELISM works without an engine block. The kafka block's
// sasl, tls and embedded blocks exist only when the file has them (even
// empty), so a stray WEIR_KAFKA_SASL_PASSWORD does not switch SASL on.
// Fields that do not apply to the element's type are not looked up. Lists
// are not overridden, with one exception: kafka.brokers, whose variable
// holds the whole list, comma-separated (spaces around items are ignored). Within a plugin config,
// only scalars present in the file can be overridden (through mappings,
// not lists). List items are addressed by the name written in the file.
// For number fields, generator constants and plugin config entries the
// value is read as one YAML scalar (42 is an integer, true a boolean, '007'
// in quotes a string; anything else is taken as a string); for string and
// duration fields it is taken verbatim. Relative paths from the environment
// resolve against the pipeline directory like those in the file. A variable set to the empty string
// counts as unset. Variables that match no field are ignored.
//
// Load reads the process environment with OSEnv (os.LookupEnv of the names
// the rule above gives). Parse takes the lookup as a function so tests and
// the fuzz test can inject one; tests of the process environment set
// variables with t.Setenv and pass OSEnv().
//
// The package logs nothing.
package config
