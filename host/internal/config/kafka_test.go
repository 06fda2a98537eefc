package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const kafkaPipeline = `name: sensor-anomaly
kafka:
  brokers: [host1:9092, "[::1]:9093"]
  client_id: weir-test
  sasl:
    mechanism: scram-sha-256
    user: alice
    password: secret
  tls:
    ca_file: certs/ca.pem
    cert_file: certs/client.pem
    key_file: certs/client.key
    server_name: broker.example
    insecure_skip_verify: true
sources:
  - name: readings
    type: kafka
    topics: [sensor.readings, sensor.more]
  - name: audit
    type: kafka
    topic_regex: "^audit\\..*$"
    group: auditors
    start: 2024-01-02T15:04:05.5+01:00
    format: raw
  - name: late
    type: kafka
    topics: [sensor.late]
    start: committed
operators:
  - {name: by-id, type: key_by, field: id}
sinks:
  - name: alerts
    type: kafka
    topic: sensor.alerts
  - name: routed
    type: kafka
    topic_field: meta.topic
    key_field: id
    compression: zstd
    linger: 5ms
    batch_max_bytes: 1048576
    acks: leader
    delivery_timeout: 30s
  - {name: out, type: stdout}
dead_letter:
  type: kafka
  topic: weir.dead-letters
`

func TestParseKafkaPipeline(t *testing.T) {
	dir := setupDir(t)
	p, err := Parse("pipeline.yaml", []byte(kafkaPipeline), nil, nil)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if !p.UsesKafka() {
		t.Errorf("UsesKafka = false")
	}
	k := p.Kafka
	if k.IsEmbedded() || strings.Join(k.Brokers, ",") != "host1:9092,[::1]:9093" || k.ClientID != "weir-test" {
		t.Errorf("Kafka = %q %q embedded %v", k.Brokers, k.ClientID, k.IsEmbedded())
	}
	if sa := k.SASL; sa.Mechanism != SASLScramSHA256 || sa.User != "alice" || sa.Password != "secret" {
		t.Errorf("SASL = %+v", sa)
	}
	tl := k.TLS
	if !tl.Enabled || tl.CAFile != filepath.Join(dir, "certs", "ca.pem") || tl.CertFile != filepath.Join(dir, "certs", "client.pem") ||
		tl.KeyFile != filepath.Join(dir, "certs", "client.key") || tl.ServerName != "broker.example" || !tl.InsecureSkipVerify {
		t.Errorf("TLS = %+v", tl)
	}
	if e := k.Embedded; e.Listen != "" || e.Partitions != 0 || e.DataDir != "" {
		t.Errorf("Embedded with brokers = %+v", e)
	}

	readings, audit, late := p.Sources[0], p.Sources[1], p.Sources[2]
	if readings.Type != SourceKafka || strings.Join(readings.Topics, ",") != "sensor.readings,sensor.more" ||
		readings.TopicRegex != "" || readings.Group != "sensor-anomaly" || readings.Start != StartEarliest ||
		readings.StartTimestamp != 0 || readings.Format != KafkaFormatJSON {
		t.Errorf("readings = %+v", readings)
	}
	wantTS := time.Date(2024, 1, 2, 14, 4, 5, 500e6, time.UTC).UnixMilli()
	if audit.Topics != nil || audit.TopicRegex != `^audit\..*$` || audit.Group != "auditors" || audit.Start != StartTimestamp ||
		audit.StartTimestamp != wantTS || audit.Format != KafkaFormatRaw {
		t.Errorf("audit = %+v (want timestamp %d)", audit, wantTS)
	}
	if late.Start != StartCommitted || late.Group != "sensor-anomaly" {
		t.Errorf("late = %+v", late)
	}

	alerts, routed := p.Sinks[0], p.Sinks[1]
	if alerts.Type != SinkKafka || alerts.Topic != "sensor.alerts" || alerts.TopicField != "" || alerts.KeyField != "" ||
		alerts.Format != SinkFormatJSON || alerts.Compression != CompressionSnappy || alerts.Linger != 0 ||
		alerts.BatchMaxBytes != 0 || alerts.Acks != AcksAll || alerts.DeliveryTimeout != 2*time.Minute {
		t.Errorf("alerts = %+v", alerts)
	}
	if routed.Topic != "" || routed.TopicField != "meta.topic" || strings.Join(routed.TopicPath, "|") != "meta|topic" ||
		routed.KeyField != "id" || strings.Join(routed.KeyPath, "|") != "id" || routed.Compression != CompressionZstd ||
		routed.Linger != 5*time.Millisecond || routed.BatchMaxBytes != 1<<20 || routed.Acks != AcksLeader ||
		routed.DeliveryTimeout != 30*time.Second {
		t.Errorf("routed = %+v", routed)
	}
	if dl := p.DeadLetter; dl.Type != DeadLetterKafka || dl.Topic != "weir.dead-letters" || dl.Path != "" {
		t.Errorf("dead letter = %+v", dl)
	}

	// Later stages report errors about Kafka settings in the same format.
	if got := k.TLS.Errorf("ca_file", "holds no PEM certificate").Error(); got != `pipeline.yaml:10:14: kafka.tls.ca_file: holds no PEM certificate` {
		t.Errorf("TLS.Errorf = %q", got)
	}
	if got := k.Errorf("brokers", "unreachable").Error(); got != `pipeline.yaml:3:12: kafka.brokers: unreachable` {
		t.Errorf("Kafka.Errorf = %q", got)
	}
	if got := audit.Errorf("topic_regex", "matches nothing").Error(); got != `pipeline.yaml:21:18: sources[1] "audit".topic_regex: matches nothing` {
		t.Errorf("Source.Errorf = %q", got)
	}
}

const kafkaMinimal = `name: sensor-anomaly
sources: [{name: readings, type: kafka, topics: [sensor.readings]}]
sinks: [{name: alerts, type: kafka, topic: sensor.alerts}]
`

// TestParseKafkaDefaults checks a Kafka pipeline without a kafka block: an
// embedded broker and every default.
func TestParseKafkaDefaults(t *testing.T) {
	setupDir(t)
	p, err := Parse("pipeline.yaml", []byte(kafkaMinimal), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := p.Kafka
	if !p.UsesKafka() || !k.IsEmbedded() || k.Brokers != nil || k.ClientID != DefaultKafkaClientID || k.Where != "kafka" {
		t.Errorf("Kafka = %+v", k)
	}
	if k.SASL.Mechanism != "" || k.TLS.Enabled || k.TLS.CAFile != "" {
		t.Errorf("SASL, TLS = %+v, %+v", k.SASL, k.TLS)
	}
	if e := k.Embedded; e.Listen != "127.0.0.1:0" || e.Partitions != 3 || e.DataDir != "" || e.Where != "kafka.embedded" {
		t.Errorf("Embedded = %+v", e)
	}
	s := p.Sources[0]
	if s.Group != "sensor-anomaly" || s.Start != StartEarliest || s.StopAt != StopNever || s.Format != KafkaFormatJSON {
		t.Errorf("source = %+v", s)
	}
	o := p.Sinks[0]
	if o.Compression != CompressionSnappy || o.Acks != AcksAll || o.DeliveryTimeout != 2*time.Minute || o.Linger != 0 ||
		o.BatchMaxBytes != 0 || o.Format != SinkFormatJSON {
		t.Errorf("sink = %+v", o)
	}
	if p.DeadLetter.Type != DeadLetterStderr {
		t.Errorf("dead letter = %+v", p.DeadLetter)
	}

	// A pipeline without Kafka stages does not use Kafka, but still gets
	// the kafka defaults (for weir produce and weir consume).
	setupDir(t)
	p, err = Parse("pipeline.yaml", []byte(fullPipeline), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.UsesKafka() || !p.Kafka.IsEmbedded() || p.Kafka.Embedded.Partitions != DefaultPartitions {
		t.Errorf("UsesKafka = %v, Kafka = %+v", p.UsesKafka(), p.Kafka)
	}
	// A Kafka dead-letter output alone uses Kafka.
	p, err = Parse("pipeline.yaml", []byte(`name: p
sources: [{name: in, type: stdin}]
sinks: [{name: out, type: stdout}]
dead_letter: {type: kafka, topic: dlq}
`), nil, nil)

	if err != nil {
		t.Fatal(err)
	}
	if !p.UsesKafka() {
		t.Errorf("UsesKafka = false with a Kafka dead-letter output")
	}
}

const kafkaEmbedded = `name: p
kafka:
  brokers: []
  tls: {}
  sasl:
    mechanism: Plain
    user: u
    password: p
  embedded:
    listen: ":0"
    partitions: 1024
    data_dir: out/kafka
sources: [{name: readings, type: kafka, topics: [r]}]
sinks: [{name: alerts, type: kafka, topic: a}]
`

func TestParseKafkaEmbedded(t *testing.T) {
	dir := setupDir(t)
	p, err := Parse("pipeline.yaml", []byte(kafkaEmbedded), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := p.Kafka
	if !k.IsEmbedded() {
		t.Errorf("brokers: [] is not embedded: %q", k.Brokers)
	}
	if e := k.Embedded; e.Listen != ":0" || e.Partitions != 1024 || e.DataDir != filepath.Join(dir, "out", "kafka") {
		t.Errorf("Embedded = %+v", e)
	}
	if !k.TLS.Enabled || k.TLS.Where != "kafka.tls" || k.TLS.Pos.String() != "pipeline.yaml:4:8" {
		t.Errorf("an empty tls block must enable TLS: %+v", k.TLS)
	}
	if k.SASL.Mechanism != SASLPlain {
		t.Errorf("Mechanism = %q", k.SASL.Mechanism)
	}

	// A null tls block counts as present, like an empty one.
	p, err = Parse("pipeline.yaml", []byte("name: p\nkafka:\n  tls:\nsources: [{name: r, type: kafka, topics: [r]}]\nsinks: [{name: out, type: stdout}]\n"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Kafka.TLS.Enabled || p.Kafka.TLS.Pos.String() != "pipeline.yaml:3:7" {
		t.Errorf("tls: null = %+v", p.Kafka.TLS)
	}
}

const kafkaEnvBase = `name: p
kafka:
  brokers: [file-broker:9092]
  sasl: {mechanism: plain, user: alice}
  tls: {ca_file: nope.pem}
sources: [{name: readings, type: kafka, topics: [sensor.readings]}]
sinks: [{name: alerts, type: kafka, topic: sensor.alerts}]
dead_letter: {type: kafka, topic: dlq}
`

var kafkaEnvOverrides = map[string]string{
	"WEIR_KAFKA_BROKERS":          "b1:9092, b2:9093",
	"WEIR_KAFKA_CLIENT_ID":        "weir-env",
	"WEIR_KAFKA_SASL_PASSWORD":    "s3cret",
	"WEIR_KAFKA_TLS_ENABLED":      "false", // so the missing ca_file is not checked
	"WEIR_SOURCES_READINGS_START": "2024-01-02T15:04:05Z",
	"WEIR_SOURCES_READINGS_GROUP": "g2",
	"WEIR_SINKS_ALERTS_TOPIC":     "other.alerts",
	"WEIR_SINKS_ALERTS_LINGER":    "10ms",
	"WEIR_DEAD_LETTER_TOPIC":      "dead",
}

func checkKafkaEnvOverrides(t *testing.T, dir string, p *Pipeline) {
	t.Helper()
	k := p.Kafka
	if strings.Join(k.Brokers, ",") != "b1:9092,b2:9093" || k.ClientID != "weir-env" || k.IsEmbedded() {
		t.Errorf("Kafka = %q %q", k.Brokers, k.ClientID)
	}
	if pos := k.At("brokers"); pos.String() != "$WEIR_KAFKA_BROKERS" {
		t.Errorf("brokers position = %v", pos)
	}
	if sa := k.SASL; sa.Mechanism != SASLPlain || sa.User != "alice" || sa.Password != "s3cret" ||
		sa.At("password").String() != "$WEIR_KAFKA_SASL_PASSWORD" {
		t.Errorf("SASL = %+v", sa)
	}
	if k.TLS.Enabled || k.TLS.CAFile != filepath.Join(dir, "nope.pem") {
		t.Errorf("TLS = %+v", k.TLS)
	}
	s := p.Sources[0]
	if s.Start != StartTimestamp || s.StartTimestamp != time.Date(2024, 1, 2, 15, 4, 5, 0, time.UTC).UnixMilli() || s.Group != "g2" {
		t.Errorf("source = %+v", s)
	}
	o := p.Sinks[0]
	if o.Topic != "other.alerts" || o.Linger != 10*time.Millisecond || o.At("topic").String() != "$WEIR_SINKS_ALERTS_TOPIC" {
		t.Errorf("sink = %+v", o)
	}
	if p.DeadLetter.Topic != "dead" {
		t.Errorf("dead letter = %+v", p.DeadLetter)
	}
}

func TestKafkaEnvOverrides(t *testing.T) {
	dir := setupDir(t)
	p, err := Parse("pipeline.yaml", []byte(kafkaEnvBase), mapEnv(kafkaEnvOverrides), nil)
	if err != nil {
		t.Fatal(err)
	}
	checkKafkaEnvOverrides(t, dir, p)

	// WEIR_KAFKA_BROKERS needs no kafka block, and replaces the embedded
	// defaults.
	p, err = Parse("pipeline.yaml", []byte(kafkaMinimal), mapEnv(map[string]string{"WEIR_KAFKA_BROKERS": "solo:9092"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if k := p.Kafka; strings.Join(k.Brokers, ",") != "solo:9092" || k.IsEmbedded() || k.Embedded.Listen != "" || k.Embedded.Partitions != 0 {
		t.Errorf("Kafka = %+v", k)
	}
}

// TestKafkaEnvOverridesFromTheEnvironment goes through OSEnv and the process
// environment, via Load.
func TestKafkaEnvOverridesFromTheEnvironment(t *testing.T) {
	dir := setupDir(t)
	for k, v := range kafkaEnvOverrides {
		t.Setenv(k, v)
	}
	mustWrite(t, filepath.Join(dir, "pipeline.yaml"), kafkaEnvBase)
	p, err := Load("pipeline.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	checkKafkaEnvOverrides(t, dir, p)

	t.Setenv("WEIR_KAFKA_BROKERS", "ok:1,bad")
	_, err = Load("pipeline.yaml", nil)
	want := `$WEIR_KAFKA_BROKERS: kafka.brokers[1]: invalid address "bad": missing port (want host:port)`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

func TestCheckHostPort(t *testing.T) {
	for _, tt := range []struct {
		addr   string
		listen bool
		ok     bool
	}{
		{"host:9092", false, true},
		{"10.0.0.1:1", false, true},
		{"[::1]:65535", false, true},
		{"host:65536", false, false},
		{"host:0", false, false},
		{"host:0", true, true},
		{":0", true, true},
		{":9092", false, false},
		{"host:+1", false, false},
		{"host", false, false},
		{"host:", true, false},
		{"[::1", false, false},
	} {
		if err := checkHostPort(tt.addr, tt.listen); (err == nil) != tt.ok {
			t.Errorf("checkHostPort(%q, %v) = %v, want ok %v", tt.addr, tt.listen, err, tt.ok)
		}
	}
}

func TestCheckTopic(t *testing.T) {
	for _, tt := range []struct {
		topic string
		ok    bool
	}{
		{"sensor.readings", true},
		{"A-b_c.9", true},
		{strings.Repeat("x", MaxTopicLength), true},
		{strings.Repeat("x", MaxTopicLength+1), false},
		{"", false},
		{".", false},
		{"..", false},
		{"...", true},
		{"a b", false},
		{"é", false},
	} {
		if err := checkTopic(tt.topic); (err == nil) != tt.ok {
			t.Errorf("checkTopic(%q) = %v, want ok %v", tt.topic, err, tt.ok)
		}
	}
}

func TestParseKafkaStopAt(t *testing.T) {
	tests := []struct {
		name, value string
		want        StopAt
		wantErr     string
	}{
		{name: "latest", value: "latest", want: StopAtLatest},
		{name: "never", value: "never", want: StopNever},
		{name: "typo", value: "lates", wantErr: `pipeline.yaml:2:77: sources[0] "readings".stop_at: invalid value "lates" (want one of never, latest; did you mean "latest"?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setupDir(t)
			doc := "name: p\nsources: [{name: readings, type: kafka, topics: [sensor.readings], stop_at: " + tt.value + "}]\nsinks: [{name: out, type: stdout}]\n"
			p, err := Parse("pipeline.yaml", []byte(doc), nil, nil)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v\nwant %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || p.Sources[0].StopAt != tt.want {
				t.Fatalf("Parse = %v, %v", p, err)
			}
		})
	}
}

// TestKafkaBrokersOverrideEmbedded: brokers from the environment win over
// the file's embedded block, which then does not apply (its data_dir is
// not checked, its defaults are not set), while brokers written in the
// file beside an embedded block are still a contradiction.
func TestKafkaBrokersOverrideEmbedded(t *testing.T) {
	const embedded = "name: p\nkafka:\n  %s\n  embedded: {partitions: 3, data_dir: gone/kafka}\n" +
		"sources: [{name: r, type: kafka, topics: [r]}]\nsinks: [{name: out, type: kafka, topic: o}]\n"
	tests := []struct {
		name    string
		brokers string // a line of the kafka block
		env     map[string]string
		want    string // the error; "" for none
	}{
		{"environment", "client_id: c", map[string]string{"WEIR_KAFKA_BROKERS": "h1:9092,h2:9093"}, ""},
		{"environment over the file's brokers", "brokers: [file:9092]", map[string]string{"WEIR_KAFKA_BROKERS": "h1:9092,h2:9093"}, ""},
		{"file", "brokers: [file:9092]", nil, "kafka.embedded: an embedded broker is only started when no brokers are given (brokers at pipeline.yaml:3:12)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			setupDir(t)
			doc := strings.Replace(embedded, "%s", tc.brokers, 1)
			p, err := Parse("pipeline.yaml", []byte(doc), mapEnv(tc.env), nil)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			k := p.Kafka
			if k.IsEmbedded() || strings.Join(k.Brokers, ",") != "h1:9092,h2:9093" || k.At("brokers").String() != "$WEIR_KAFKA_BROKERS" {
				t.Errorf("brokers %q at %v, embedded %v", k.Brokers, k.At("brokers"), k.IsEmbedded())
			}
			if e := k.Embedded; e.Partitions != 0 || e.DataDir != "" || e.Listen != "" {
				t.Errorf("the overridden embedded block applies: %+v", e)
			}
			if _, ok := k.Positions["embedded"]; !ok {
				t.Error("the file's embedded block is not recorded")
			}
		})
	}
}

// TestKafkaGroupSharesMember: the Kafka sources of one group are one
// member of it, so an instance_id or session_timeout one of them gives,
// in the file or from the environment, is the others' too; a source of
// another group keeps its own.
func TestKafkaGroupSharesMember(t *testing.T) {
	const doc = `name: p
sources:
  - {name: a, type: kafka, topics: [x]}
  - {name: b, type: kafka, topics: [y], session_timeout: 7s}
  - {name: c, type: kafka, topics: [z], group: other}
sinks: [{name: out, type: stdout}]
`
	tests := []struct {
		name  string
		env   map[string]string
		wantA string // a's and b's instance id
		wantC string
	}{
		{name: "none", wantA: "", wantC: ""},
		{name: "the first's from the environment", env: map[string]string{"WEIR_SOURCES_A_INSTANCE_ID": "i-1"}, wantA: "i-1", wantC: ""},
		{name: "the second's", env: map[string]string{"WEIR_SOURCES_B_INSTANCE_ID": "i-2", "WEIR_SOURCES_C_INSTANCE_ID": "c-2"}, wantA: "i-2", wantC: "c-2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setupDir(t)
			env := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			p, err := Parse("pipeline.yaml", []byte(doc), env, nil)
			if err != nil {
				t.Fatal(err)
			}
			a, b, c := p.Sources[0], p.Sources[1], p.Sources[2]
			if a.InstanceID != tt.wantA || b.InstanceID != tt.wantA || c.InstanceID != tt.wantC {
				t.Errorf("instance ids %q %q %q, want %q %q %q", a.InstanceID, b.InstanceID, c.InstanceID, tt.wantA, tt.wantA, tt.wantC)
			}
			if a.SessionTimeout != 7*time.Second || b.SessionTimeout != 7*time.Second || c.SessionTimeout != 0 {
				t.Errorf("session timeouts %v %v %v, want 7s 7s 0s", a.SessionTimeout, b.SessionTimeout, c.SessionTimeout)
			}
		})
	}
}
