package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics, that failures are well-formed
// Errors, and that every pipeline it accepts satisfies the schema's
// invariants.
func FuzzParse(f *testing.F) {
	dir := f.TempDir()
	for name, data := range map[string]string{
		"readings.json":            "[]",
		"other.json":               "{}",
		"plugins/anomaly/main.go":  "package main\n",
		"plugins/double.wasm":      "\x00asm",
		"plugins/empty/.keep":      "",
		"out/.keep":                "",
		"plugins/notes.txt":        "x",
		"plugins/anomaly/README":   "x",
		"plugins/anomaly/sub/x.go": "package sub\n",
		"certs/ca.pem":             "ca",
		"certs/client.pem":         "cert",
		"certs/client.key":         "key",
	} {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	filename := filepath.Join(dir, "pipeline.yaml")

	f.Add([]byte(fullPipeline), "")
	f.Add([]byte(kafkaPipeline), "")
	f.Add([]byte(kafkaPipeline), "a:9092,b:9093")
	f.Add([]byte(kafkaMinimal), "")
	f.Add([]byte(kafkaMinimal), "latest")
	f.Add([]byte(kafkaEnvBase), "host:9092")
	f.Add([]byte(kafkaEmbedded), "")
	f.Add([]byte(envBase), "")
	f.Add([]byte(envBase), "7")
	f.Add([]byte(envBase), "'x'")
	for _, tt := range parseErrorCases {
		f.Add([]byte(tt.doc), "")
	}
	f.Add([]byte("name: p\nsources: [{name: g, type: generator, fields: [{name: x, kind: sequence}]}]\nsinks: [{name: out, type: stdout}]\n"), "-1")
	f.Add([]byte(`name: db
sources: [{name: in, type: stdin}]
operators:
  - {name: city, type: lookup, database: {driver: mysql, dsn: "root@tcp(h:3306)/t"}, query: "SELECT c FROM t WHERE id = ? AND n <> '?'", field: a.id, join: left, cache_ttl: 1m, cache_size: 9}
sinks:
  - {name: out, type: database, database: {driver: postgres, dsn: "postgres://u@h/t"}, table: s.t, columns: {c: c, w: a.w}, key: [c]}
`), "x")
	f.Add([]byte(`name: db
sources: [{name: in, type: stdin}]
operators:
  - {name: city, type: lookup, database: {driver: mysql, dsn: "root@tcp(h:3306)/t"}, query: "SELECT c FROM t WHERE id = ?", field: a.id}
sinks:
  - {name: out, type: database, database: {driver: postgres, dsn: "postgres://u@h/t"}, table: s.t, columns: {c: c}}
`), "")
	f.Add([]byte("name: p\nsources: [{name: in, type: stdin}]\noperators: [{name: c, type: table_join, topic: customers, field: a.id, into: c, join: left}]\nsinks: [{name: out, type: stdout}]\n"), "")
	f.Add([]byte("name: p\nsources: [{name: a, type: stdin}, {name: b, type: generator, fields: [{name: x, kind: sequence}]}]\noperators: [{name: k, type: key_by, field: x, fields: {a: y.z}}, {name: j, type: join, left: a, right: b, between: {lower: -1s, upper: 2s}}]\nsinks: [{name: out, type: stdout}]\n"), "")
	f.Add([]byte("a: &a [*a]\n"), "")
	f.Add([]byte("{name: p, <<: {x: 1}}"), "")
	f.Add([]byte("name: p\nsources: [{name: g, type: generator, fields: [{name: x, kind: constant, value: !!binary aGk=}]}]\nsinks: [{name: out, type: stdout}]\n"), "")

	f.Fuzz(func(t *testing.T, data []byte, envVal string) {
		env := func(name string) (string, bool) {
			switch name {
			case "WEIR_ENGINE_BATCH_SIZE", "WEIR_SOURCES_GEN_COUNT", "WEIR_SOURCES_G_FIELDS_X_START",
				"WEIR_OPERATORS_DETECT_CONFIG_THRESHOLD", "WEIR_SINKS_OUT_FORMAT", "WEIR_DEAD_LETTER_TYPE",
				"WEIR_KAFKA_BROKERS", "WEIR_KAFKA_SASL_MECHANISM", "WEIR_SOURCES_READINGS_START",
				"WEIR_SINKS_ALERTS_TOPIC", "WEIR_KAFKA_EMBEDDED_LISTEN", "WEIR_OPERATORS_CITY_QUERY",
				"WEIR_SINKS_OUT_TABLE", "WEIR_OPERATORS_CITY_DATABASE_DSN":
				return envVal, true
			}
			return "", false
		}
		p, err := Parse(filename, data, env, nil)
		if err != nil {
			if p != nil {
				t.Fatalf("pipeline returned with error %v", err)
			}
			checkErrors(t, err)
			return
		}
		checkPipeline(t, p)
	})
}

func checkErrors(t *testing.T, err error) {
	var errs Errors
	if !errors.As(err, &errs) || len(errs) == 0 {
		t.Fatalf("error %T is not a non-empty Errors: %v", err, err)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(errs) {
		t.Fatalf("%d errors print as %d lines:\n%v", len(errs), len(lines), err)
	}
	for i, e := range errs {
		if e.Msg == "" {
			t.Errorf("error %d has no message", i)
		}
		if i > 0 && errs[i-1].Pos.compare(e.Pos) > 0 {
			t.Errorf("errors not sorted: %v before %v", errs[i-1].Pos, e.Pos)
		}
	}
}

func checkPipeline(t *testing.T, p *Pipeline) {
	if p.Version != Version || !namePattern.MatchString(p.Name) {
		t.Errorf("version %d, name %q", p.Version, p.Name)
	}
	e := p.Engine
	if e.BatchSize < 1 || e.BatchSize > MaxBatchSize || e.BatchLinger < 0 || e.QueueDepth < 1 ||
		e.QueueDepth > MaxQueueDepth || e.Parallelism < 1 || e.Parallelism > MaxParallelism {
		t.Errorf("engine out of range: %+v", e)
	}
	if len(p.Sources) == 0 || len(p.Sinks) == 0 {
		t.Errorf("%d sources, %d sinks", len(p.Sources), len(p.Sinks))
	}
	names := map[string]bool{}
	stage := func(m Meta, name string) {
		if !namePattern.MatchString(name) || names[name] {
			t.Errorf("stage name %q invalid or duplicate", name)
		}
		names[name] = true
		if m.Where == "" {
			t.Errorf("stage %q has no path", name)
		}
	}
	abs := func(what, path string) {
		if !filepath.IsAbs(path) {
			t.Errorf("%s path %q is not absolute", what, path)
		}
	}
	stdin := 0
	for _, s := range p.Sources {
		stage(s.Meta, s.Name)
		switch s.Type {
		case SourceFile:
			abs("source", s.Path)
			if !contains(fileFormats, string(s.Format)) {
				t.Errorf("file format %q", s.Format)
			}
		case SourceStdin:
			stdin++
			if s.Format != FormatJSONL && s.Format != FormatLines {
				t.Errorf("stdin format %q", s.Format)
			}
		case SourceGenerator:
			checkGenerator(t, s)
		case SourceKafka:
			checkKafkaSource(t, p, s)
		default:
			t.Errorf("source type %q", s.Type)
		}
	}
	if stdin > 1 {
		t.Errorf("%d stdin sources", stdin)
	}
	for _, op := range p.Operators {
		stage(op.Meta, op.Name)
		switch {
		case op.Type == OperatorKeyBy:
			if len(op.KeyPath) == 0 || strings.Join(op.KeyPath, ".") != op.Field {
				t.Errorf("key_by path %q %q", op.Field, op.KeyPath)
			}
			for src, path := range op.SourceKeyPaths {
				if len(path) == 0 || !slices.ContainsFunc(p.Sources, func(s Source) bool { return s.Name == src }) {
					t.Errorf("key_by fields: source %q path %q", src, path)
				}
			}
		case op.Type.IsPlugin():
			abs("plugin", op.Plugin)
			if op.PluginKind != PluginWasm && op.PluginKind != PluginSource {
				t.Errorf("plugin kind %q", op.PluginKind)
			}
			if !json.Valid(op.ConfigJSON) {
				t.Errorf("ConfigJSON not valid JSON: %s", op.ConfigJSON)
			}
			if op.BatchSize < 1 || op.BatchSize > MaxBatchSize || op.MemoryLimitPages < 1 ||
				op.MemoryLimitPages > MaxMemoryLimitPages || (op.Timeout < 0 && op.Timeout != NoTimeout) ||
				op.Limits.StateValue < 0 || op.Limits.StateValue > MaxStateValue || op.Limits.StateBytes < 0 || op.Limits.OutputBytes < 0 {
				t.Errorf("operator out of range: %+v", op)
			}
		case op.Type == OperatorWindow, op.Type == OperatorRolling:
		case op.Type == OperatorLookup:
			l := op.Lookup
			if countPlaceholders(l.Query) != 1 || strings.Join(l.Path, ".") != l.Field || len(l.Path) == 0 ||
				(l.Join != JoinInner && l.Join != JoinLeft) || l.CacheTTL < 0 || op.BatchSize < 1 {
				t.Errorf("lookup %+v", l)
			}
		case op.Type == OperatorJoin:
			j := op.Join
			if j.Left == "" || j.Right == "" || j.Left == j.Right || (j.Between && j.Lower > j.Upper) || j.Window < 0 || (j.Window > 0 && j.Between) || j.TTL < 0 || (j.TTL > 0 && (j.Between || j.Window > 0)) {
				t.Errorf("join %+v", j)
			}
		case op.Type == OperatorTableJoin:
			tj := op.TableJoin
			if checkTopic(tj.Topic) != nil || tj.Into == "" || strings.Join(tj.Path, ".") != tj.Field ||
				(tj.Join != JoinInner && tj.Join != JoinLeft) {
				t.Errorf("table_join %+v", tj)
			}
			if !p.UsesKafka() {
				t.Errorf("a pipeline with table_join %q does not use Kafka", op.Name)
			}
		default:
			t.Errorf("operator type %q", op.Type)
		}
	}
	for _, s := range p.Sinks {
		stage(s.Meta, s.Name)
		if s.Type != SinkDatabase && s.Format != SinkFormatJSON && s.Format != SinkFormatRaw {
			t.Errorf("sink format %q", s.Format)
		}
		switch s.Type {
		case SinkFile:
			abs("sink", s.Path)
		case SinkKafka:
			checkKafkaSink(t, s)
		case SinkDatabase:
			if s.Table == "" || len(s.Columns) == 0 {
				t.Errorf("database sink %+v", s)
			}
		case SinkStdout, SinkDiscard:
		default:
			t.Errorf("sink type %q", s.Type)
		}
	}
	switch p.DeadLetter.Type {
	case DeadLetterFile:
		abs("dead letter", p.DeadLetter.Path)
	case DeadLetterKafka:
		if checkTopic(p.DeadLetter.Topic) != nil {
			t.Errorf("dead letter topic %q", p.DeadLetter.Topic)
		}
	case DeadLetterStderr:
	default:
		t.Errorf("dead letter type %q", p.DeadLetter.Type)
	}
	checkKafka(t, &p.Kafka)
}

func checkKafka(t *testing.T, k *Kafka) {
	for _, b := range k.Brokers {
		if checkHostPort(b, false) != nil {
			t.Errorf("broker %q", b)
		}
	}
	if k.ClientID == "" {
		t.Errorf("empty client id")
	}
	if sa := k.SASL; sa.Mechanism != "" && (!contains(saslMechanisms, string(sa.Mechanism)) || sa.User == "" || sa.Password == "") ||
		sa.Mechanism == "" && (sa.User != "" || sa.Password != "") {
		t.Errorf("sasl %+v", sa)
	}
	tl := k.TLS
	if (tl.CertFile == "") != (tl.KeyFile == "") {
		t.Errorf("tls cert %q key %q", tl.CertFile, tl.KeyFile)
	}
	for _, f := range []string{tl.CAFile, tl.CertFile, tl.KeyFile} {
		if f != "" && !filepath.IsAbs(f) {
			t.Errorf("tls file %q is not absolute", f)
		}
	}
	e := k.Embedded
	if k.IsEmbedded() {
		if checkHostPort(e.Listen, true) != nil || e.Partitions < 1 || e.Partitions > MaxPartitions ||
			e.DataDir != "" && !filepath.IsAbs(e.DataDir) {
			t.Errorf("embedded %+v", e)
		}
	} else if e.Listen != "" || e.Partitions != 0 || e.DataDir != "" {
		t.Errorf("embedded settings %+v with brokers %q", e, k.Brokers)
	}
}

func checkKafkaSource(t *testing.T, p *Pipeline, s Source) {
	if (len(s.Topics) == 0) == (s.TopicRegex == "") {
		t.Errorf("kafka source topics %q regex %q", s.Topics, s.TopicRegex)
	}
	for _, topic := range s.Topics {
		if checkTopic(topic) != nil {
			t.Errorf("kafka source topic %q", topic)
		}
	}
	if s.Group == "" || s.Format != KafkaFormatJSON && s.Format != KafkaFormatRaw {
		t.Errorf("kafka source %+v", s)
	}
	switch s.Start {
	case StartEarliest, StartLatest, StartCommitted:
		if s.StartTimestamp != 0 {
			t.Errorf("start %q with timestamp %d", s.Start, s.StartTimestamp)
		}
	case StartTimestamp:
		if s.StartTimestamp < 0 {
			t.Errorf("start timestamp %d", s.StartTimestamp)
		}
	default:
		t.Errorf("start %q", s.Start)
	}
	if !p.UsesKafka() {
		t.Errorf("UsesKafka false with a kafka source")
	}
}

func checkKafkaSink(t *testing.T, s Sink) {
	if (s.Topic == "") == (s.TopicField == "") {
		t.Errorf("kafka sink topic %q topic_field %q", s.Topic, s.TopicField)
	}
	if s.Topic != "" && checkTopic(s.Topic) != nil {
		t.Errorf("kafka sink topic %q", s.Topic)
	}
	if strings.Join(s.TopicPath, ".") != s.TopicField || strings.Join(s.KeyPath, ".") != s.KeyField {
		t.Errorf("kafka sink paths %q %q / %q %q", s.TopicField, s.TopicPath, s.KeyField, s.KeyPath)
	}
	if s.Format == SinkFormatRaw && (s.TopicField != "" || s.KeyField != "") {
		t.Errorf("raw kafka sink with field paths")
	}
	if !contains(compressions, string(s.Compression)) || !contains(acksLevels, string(s.Acks)) ||
		s.Linger < 0 || s.DeliveryTimeout <= 0 || s.BatchMaxBytes < 0 || s.BatchMaxBytes > MaxBatchMaxBytes {
		t.Errorf("kafka sink %+v", s)
	}
}

func checkGenerator(t *testing.T, s Source) {
	if len(s.Fields) == 0 || s.Count < 0 || s.Rate < 0 {
		t.Errorf("generator %+v", s)
	}
	fields := map[string]bool{}
	for _, f := range s.Fields {
		if f.Name == "" || fields[f.Name] {
			t.Errorf("generator field name %q empty or duplicate", f.Name)
		}
		fields[f.Name] = true
		switch f.Kind {
		case GenSequence:
			if f.End != nil && *f.End < f.Start {
				t.Errorf("sequence %d..%d", f.Start, *f.End)
			}
		case GenRandomFloat:
			if f.Min > f.Max || f.Decimals < -1 || f.Decimals > MaxDecimals {
				t.Errorf("random_float %+v", f)
			}
		case GenRandomInt:
			if f.MinInt > f.MaxInt {
				t.Errorf("random_int %+v", f)
			}
		case GenRandomChoice:
			if len(f.Values) == 0 {
				t.Errorf("random_choice without values")
			}
			for _, v := range f.Values {
				if !json.Valid(v) {
					t.Errorf("choice not valid JSON: %s", v)
				}
			}
		case GenRandomString:
			if f.Length < 1 || f.Length > MaxStringLength {
				t.Errorf("random_string length %d", f.Length)
			}
		case GenConstant:
			if !json.Valid(f.Value) {
				t.Errorf("constant not valid JSON: %s", f.Value)
			}
		case GenRandomBool, GenTimestamp:
		default:
			t.Errorf("generator kind %q", f.Kind)
		}
	}
	if s.Key != "" && !fields[s.Key] {
		t.Errorf("key %q is not a field", s.Key)
	}
}
