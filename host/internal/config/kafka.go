package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// Field sets and enums of the kafka block.
var (
	kafkaFields    = []string{"brokers", "client_id", "sasl", "tls", "embedded"}
	saslFields     = []string{"mechanism", "user", "password"}
	tlsFields      = []string{"enabled", "ca_file", "cert_file", "key_file", "server_name", "insecure_skip_verify"}
	embeddedFields = []string{"listen", "partitions", "data_dir"}

	saslMechanisms = []string{string(SASLPlain), string(SASLScramSHA256), string(SASLScramSHA512)}
	startWords     = []string{string(StartEarliest), string(StartLatest), string(StartCommitted)}
	stopWords      = []string{string(StopNever), string(StopAtLatest)}
	compressions   = []string{
		string(CompressionNone), string(CompressionGzip), string(CompressionSnappy),
		string(CompressionLZ4), string(CompressionZstd),
	}
	acksLevels = []string{string(AcksAll), string(AcksLeader), string(AcksNone)}
	// kafkaAcks maps Kafka's own spellings of acks to weir's, for hints
	// (edit distance would suggest "none" for "one").
	kafkaAcks = map[string]string{"-1": string(AcksAll), "1": string(AcksLeader), "one": string(AcksLeader), "0": string(AcksNone), "zero": string(AcksNone)}
)

// kafka decodes the top-level kafka block, which, like the engine block,
// always exists for environment overrides.
func (d *decoder) kafka(n *yaml.Node, fallback Pos) Kafka {
	k := Kafka{ClientID: DefaultKafkaClientID}
	o := d.object(n, fallback, "kafka", EnvName("kafka"), &k.Meta, true)
	if o == nil {
		return k
	}
	brokersGiven := d.kafkaBrokers(o, &k)
	if s, st := o.nonEmpty("client_id"); st == good {
		k.ClientID = s
	}
	d.kafkaSASL(o, &k.SASL)
	d.kafkaTLS(o, &k.TLS)
	// A brokers override (the environment) wins over the file's embedded
	// block, so that one file runs on the embedded broker and, with
	// $WEIR_KAFKA_BROKERS, against a cluster. Brokers in the file beside
	// an embedded block contradict each other.
	overridden := brokersGiven && k.At("brokers").IsEnv()
	given := d.kafkaEmbedded(o, &k.Embedded, overridden)
	if brokersGiven {
		if given && !overridden {
			d.errAt(k.Embedded.Pos, k.Embedded.Where, "an embedded broker is only started when no brokers are given (brokers at %s)", k.At("brokers"))
		}
		k.Embedded = KafkaEmbedded{Meta: k.Embedded.Meta}
	}
	o.finish(kafkaFields, kafkaFields, "the kafka block")
	return k
}

// kafkaBrokers decodes kafka.brokers into k.Brokers and reports whether a
// non-empty list was given, in the file or the environment.
func (d *decoder) kafkaBrokers(o *object, k *Kafka) bool {
	items, st := o.listOf("brokers", kList)
	if st != good {
		return false
	}
	var brokers []string
	ok := true
	for i, item := range items {
		path := fmt.Sprintf("%s[%d]", o.path("brokers"), i)
		s, v, good := d.strItem(item, path)
		if !good {
			ok = false
			continue
		}
		if err := checkHostPort(s, false); err != nil {
			d.errorf(v, path, "invalid address %q: %v", s, err)
			ok = false
			continue
		}
		brokers = append(brokers, s)
	}
	if ok {
		k.Brokers = brokers
	}
	return len(items) > 0
}

// kafkaEmbedded decodes kafka.embedded into e and reports whether the file
// has the block. With overridden (the environment names brokers) the
// block does not apply: its fields are still checked for typos, but not
// its data directory.
func (d *decoder) kafkaEmbedded(o *object, e *KafkaEmbedded, overridden bool) bool {
	eo, given := d.subBlock(o, "embedded", &e.Meta)
	if eo == nil {
		return given
	}
	e.Listen, e.Partitions = DefaultEmbeddedListen, DefaultPartitions
	if s, st := eo.nonEmpty("listen"); st == good {
		if err := checkHostPort(s, true); err != nil {
			eo.fail("listen", eo.get("listen", kString), "invalid address %q: %v", s, err)
		} else {
			e.Listen = s
		}
	}
	if v, st := eo.int("partitions", 1, MaxPartitions); st == good {
		e.Partitions = int(v)
	}
	if s, v, st := eo.strNode("data_dir"); st == good && s != "" {
		e.DataDir = d.abs(s)
		if !overridden {
			d.checkDataDir(eo, v, s, e.DataDir)
		}
	}
	eo.finish(embeddedFields, embeddedFields, "the embedded block")
	return given
}

// subBlock starts decoding the optional block field of parent, such as
// kafka.tls. given reports whether the file has the field, even with a null
// value (which counts as an empty mapping). Only a given block exists: the
// environment overrides its fields, and its required fields are required.
// o is nil after an error when the value is not a mapping.
func (d *decoder) subBlock(parent *object, field string, meta *Meta) (o *object, given bool) {
	n := parent.get(field, kNode)
	if n == nil {
		return d.object(nil, parent.meta.Pos, parent.path(field), "", meta, true), false
	}
	if isNull(n) {
		n = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: n.Line, Column: n.Column}
	}
	return d.object(n, parent.meta.Pos, parent.path(field), joinEnv(parent.env, field), meta, true), true
}

func (d *decoder) kafkaSASL(parent *object, sa *KafkaSASL) {
	o, given := d.subBlock(parent, "sasl", &sa.Meta)
	if o == nil {
		return
	}
	m, mst := o.enumFold("mechanism", saslMechanisms...)
	user, ust := o.nonEmpty("user")
	pw, pst := o.nonEmpty("password")
	if given {
		if mst == absent {
			o.missing("mechanism")
		}
		if ust == absent {
			o.missing("user")
		}
		if pst == absent {
			o.missingf("missing required field %q (set it here or, better, in $%s)", "password", joinEnv(o.env, "password"))
		}
		if mst == good && ust == good && pst == good {
			sa.Mechanism, sa.User, sa.Password = SASLMechanism(m), user, pw
		}
	}
	o.finish(saslFields, saslFields, "the sasl block")
}

func (d *decoder) kafkaTLS(parent *object, t *KafkaTLS) {
	o, given := d.subBlock(parent, "tls", &t.Meta)
	if o == nil {
		return
	}
	t.Enabled = given
	if v, st := o.bool("enabled"); st == good {
		t.Enabled = v
	}
	// Files are checked only when TLS is on, so that enabled: false (or
	// WEIR_KAFKA_TLS_ENABLED=false) works where they are missing.
	file := func(field string) (string, state) {
		p, st := o.nonEmpty(field)
		if st != good {
			return "", st
		}
		abs := d.abs(p)
		if t.Enabled {
			d.checkInputFile(o, field, p, abs)
		}
		return abs, good
	}
	t.CAFile, _ = file("ca_file")
	cert, cst := file("cert_file")
	key, kst := file("key_file")
	switch {
	case cst == good && kst == absent:
		o.fail("cert_file", o.get("cert_file", kString), "key_file is required with cert_file")
	case kst == good && cst == absent:
		o.fail("key_file", o.get("key_file", kString), "cert_file is required with key_file")
	default:
		t.CertFile, t.KeyFile = cert, key
	}
	if s, st := o.nonEmpty("server_name"); st == good {
		t.ServerName = s
	}
	if v, st := o.bool("insecure_skip_verify"); st == good {
		t.InsecureSkipVerify = v
	}
	o.finish(tlsFields, tlsFields, "the tls block")
}

// checkDataDir reports an embedded broker data directory that is not a
// directory or whose parent does not exist.
func (d *decoder) checkDataDir(o *object, v *yaml.Node, p, abs string) {
	if fi, err := os.Stat(abs); err == nil {
		if !fi.IsDir() {
			o.fail("data_dir", v, "%q is not a directory", p)
		}
		return
	}
	dir := filepath.Dir(abs)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		o.fail("data_dir", v, "directory %s does not exist", dir)
	case err != nil:
		o.fail("data_dir", v, "%v", err)
	case !fi.IsDir():
		o.fail("data_dir", v, "%s is not a directory", dir)
	}
}

func (d *decoder) kafkaSource(o *object, s *Source) {
	s.Format = KafkaFormatJSON
	s.Start, s.StopAt = StartEarliest, StopNever
	items, tst := o.list("topics")
	if tst == good {
		if len(items) == 0 {
			o.fail("topics", o.get("topics", kNode), "at least one topic is required")
		}
		var topics []string
		seen := map[string]string{}
		ok := true
		for i, item := range items {
			path := fmt.Sprintf("%s[%d]", o.path("topics"), i)
			t, v, good := d.strItem(item, path)
			if !good {
				ok = false
				continue
			}
			if err := checkTopic(t); err != nil {
				d.errorf(v, path, "%v", err)
				ok = false
				continue
			}
			if prev, dup := seen[t]; dup {
				d.errorf(v, path, "duplicate topic %q (also %s)", t, prev)
				ok = false
				continue
			}
			seen[t] = path
			topics = append(topics, t)
		}
		if ok {
			s.Topics = topics
		}
	}
	re, rst := o.nonEmpty("topic_regex")
	if rst == good {
		if _, err := regexp.Compile(re); err != nil {
			o.fail("topic_regex", o.get("topic_regex", kString), "invalid regular expression %q: %s", re, regexpError(err))
		} else {
			s.TopicRegex = re
		}
	}
	o.oneOf("topics", tst, "topic_regex", rst)
	if g, st := o.nonEmpty("group"); st == good {
		s.Group = g
	}
	if id, st := o.nonEmpty("instance_id"); st == good {
		s.InstanceID = id
	}
	if v, st := o.duration("session_timeout"); st == good {
		if v < time.Second || v > 30*time.Minute {
			o.fail("session_timeout", o.get("session_timeout", kScalar), "%s is out of range: 1s to 30m (brokers allow 6s to 30m by default)", v)
		} else {
			s.SessionTimeout = v
		}
	}
	if v, n, st := o.strNode("start"); st == good {
		if start, ts, err := parseStart(v); err != nil {
			o.fail("start", n, "%v", err)
		} else {
			s.Start, s.StartTimestamp = start, ts
		}
	}
	if v, st := o.enum("stop_at", stopWords...); st == good {
		s.StopAt = StopAt(v)
	}
	if f, st := o.enum("format", kafkaFormats...); st == good {
		s.Format = SourceFormat(f)
	}
}

// regexpError is the message of a regexp.Compile error without its
// "error parsing regexp: " prefix.
func regexpError(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("%s: `%s`", se.Code, se.Expr)
	}
	return err.Error()
}

// parseStart parses a Kafka source's start field: one of startWords or an
// RFC 3339 timestamp, returned as StartTimestamp and epoch milliseconds.
func parseStart(s string) (StartPosition, int64, error) {
	if contains(startWords, s) {
		return StartPosition(s), 0, nil
	}
	if s != "" && s[0] >= '0' && s[0] <= '9' {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return "", 0, fmt.Errorf("invalid timestamp %q (want RFC 3339, such as 2024-01-02T15:04:05Z)", s)
		}
		if t.Before(time.Unix(0, 0)) {
			return "", 0, fmt.Errorf("timestamp %q is before 1970-01-01T00:00:00Z", s)
		}
		return StartTimestamp, t.UnixMilli(), nil
	}
	hint := ""
	if c := suggest(s, startWords); c != "" {
		hint = fmt.Sprintf("; did you mean %q?", c)
	}
	return "", 0, fmt.Errorf("invalid value %q (want one of %s or an RFC 3339 timestamp%s)", s, strings.Join(startWords, ", "), hint)
}

func (d *decoder) kafkaSink(o *object, s *Sink) {
	s.Compression = DefaultCompression
	s.Acks = DefaultAcks
	s.DeliveryTimeout = DefaultDeliveryTimeout
	topic, tst := d.topic(o, "topic", false)
	s.Topic = topic
	tf, tpath, fst := o.fieldPath("topic_field")
	s.TopicField, s.TopicPath = tf, tpath
	o.oneOf("topic", tst, "topic_field", fst)
	kf, kpath, kst := o.fieldPath("key_field")
	s.KeyField, s.KeyPath = kf, kpath
	if s.Format == SinkFormatRaw {
		for _, f := range []struct {
			name string
			st   state
		}{{"topic_field", fst}, {"key_field", kst}} {
			if f.st == good {
				o.fail(f.name, o.get(f.name, kString), "%s needs format json (the values of a raw sink are not parsed)", f.name)
			}
		}
	}
	if c, st := o.enum("compression", compressions...); st == good {
		s.Compression = Compression(c)
	}
	if v, st := o.duration("linger"); st == good {
		s.Linger = v
	}
	if v, st := o.int("batch_max_bytes", 1, MaxBatchMaxBytes); st == good {
		s.BatchMaxBytes = int32(v)
	}
	if a, n, st := o.strNode("acks"); st == good {
		if contains(acksLevels, a) {
			s.Acks = Acks(a)
		} else if alias, ok := kafkaAcks[strings.ToLower(a)]; ok {
			o.fail("acks", n, "invalid value %q (want one of %s; did you mean %q?)", a, strings.Join(acksLevels, ", "), alias)
		} else {
			o.badEnum("acks", n, a, acksLevels)
		}
	}
	if v, st := o.duration("delivery_timeout"); st == good {
		if v == 0 {
			n := o.get("delivery_timeout", kString)
			o.fail("delivery_timeout", n, "must be greater than 0, got %s", n.Value)
		} else {
			s.DeliveryTimeout = v
		}
	}
}

// topic gets a field holding a Kafka topic name.
func (d *decoder) topic(o *object, field string, required bool) (string, state) {
	t, v, st := o.strNode(field)
	if st == absent && required {
		o.missing(field)
	}
	if st != good {
		return "", st
	}
	if err := checkTopic(t); err != nil {
		return "", o.fail(field, v, "%v", err)
	}
	return t, good
}

// checkTopic reports a name Kafka does not accept as a topic name.
func checkTopic(t string) error {
	switch {
	case t == "":
		return errors.New("must not be empty")
	case t == "." || t == "..":
		return fmt.Errorf(`invalid topic name %q: "." and ".." are not allowed`, t)
	case len(t) > MaxTopicLength:
		return fmt.Errorf("invalid topic name: %d characters long (at most %d)", len(t), MaxTopicLength)
	}
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("invalid topic name %q: only ASCII letters, digits, '.', '_' and '-' are allowed", t)
		}
	}
	return nil
}

// fieldPath gets an optional dotted JSON field path such as "a.b.c".
func (o *object) fieldPath(name string) (string, []string, state) {
	s, v, st := o.strNode(name)
	if st != good {
		return "", nil, st
	}
	segs, err := splitFieldPath(s)
	if err != nil {
		return "", nil, o.fail(name, v, "invalid field path %q: %v", s, err)
	}
	return s, segs, good
}

// oneOf reports when both or neither of two alternative fields are given.
func (o *object) oneOf(a string, ast state, b string, bst state) {
	switch {
	case ast == absent && bst == absent:
		o.missingf("missing required field %q or %q", a, b)
	case ast != absent && bst != absent:
		o.d.errAt(o.meta.At(b), o.path(b), "%s and %s exclude each other (%s at %s)", a, b, a, o.meta.At(a))
	}
}

// fieldPathItem checks that n, at path, is a dotted JSON field path, and
// returns it as written and split.
func (d *decoder) fieldPathItem(n *yaml.Node, path string) (string, []string, bool) {
	f, v, ok := d.strItem(n, path)
	if !ok {
		return "", nil, false
	}
	segs, err := splitFieldPath(f)
	if err != nil {
		d.errorf(v, path, "invalid field path %q: %v", f, err)
		return "", nil, false
	}
	return f, segs, true
}

// strItem checks that list item n is a non-empty string.
func (d *decoder) strItem(n *yaml.Node, path string) (string, *yaml.Node, bool) {
	n = d.res(n)
	if n.Kind != yaml.ScalarNode || isNull(n) {
		d.errorf(n, path, "expected a string, got %s", describe(n))
		return "", n, false
	}
	if n.Value == "" {
		d.errorf(n, path, "must not be empty")
		return "", n, false
	}
	return n.Value, n, true
}

// checkHostPort reports an address that is not host:port with a numeric
// port. A listen address may leave the host empty (all interfaces) and use
// port 0 (an ephemeral port).
func checkHostPort(s string, listen bool) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		var ae *net.AddrError
		if !errors.As(err, &ae) {
			return err
		}
		switch ae.Err {
		case "missing port in address":
			return errors.New("missing port (want host:port)")
		case "too many colons in address":
			return errors.New("too many colons (write an IPv6 host in brackets, as in [::1]:9092)")
		}
		return fmt.Errorf("%s (want host:port)", strings.TrimSuffix(ae.Err, " in address"))
	}
	if host == "" && !listen {
		return errors.New("missing host (want host:port)")
	}
	if strings.IndexFunc(host, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return errors.New("the host must not contain spaces or control characters")
	}
	lo := uint64(1)
	if listen {
		lo = 0
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n < lo {
		return fmt.Errorf("port %q must be a number between %d and 65535", port, lo)
	}
	return nil
}

// crossCheckKafkaGroups checks that the Kafka sources of one consumer
// group can be read through one client, as they are (one member of the
// group per instance): they start and stop alike and name their topics.
// They are one member: an instance_id or session_timeout one of them
// gives is the others' too (so the environment may set it for the
// first), and two that differ are an error.
func (d *decoder) crossCheckKafkaGroups(p *Pipeline) {
	groups := map[string][]*Source{}
	var order []string
	for i := range p.Sources {
		s := &p.Sources[i]
		if s.Type != SourceKafka || (len(s.Topics) > 0) == (s.TopicRegex != "") {
			continue // not Kafka, or told already: it names topics and a topic_regex, or neither
		}
		if groups[s.Group] == nil {
			order = append(order, s.Group)
		}
		groups[s.Group] = append(groups[s.Group], s)
	}
	for _, g := range order {
		if srcs := groups[g]; len(srcs) > 1 {
			d.checkGroupAlike(srcs)
			shareMember(srcs, "instance_id", func(s *Source) *string { return &s.InstanceID }, d)
			shareMember(srcs, "session_timeout", func(s *Source) *time.Duration { return &s.SessionTimeout }, d)
		}
	}
}

// checkGroupAlike checks that the sources of one group, read through one
// client, start and stop alike and name their topics.
func (d *decoder) checkGroupAlike(srcs []*Source) {
	f := srcs[0]
	for _, s := range srcs[1:] {
		for _, c := range []struct {
			field string
			same  bool
		}{
			{"topic_regex", s.TopicRegex == "" && f.TopicRegex == ""},
			{"start", resumes(s.Start) == resumes(f.Start) && s.StartTimestamp == f.StartTimestamp},
			{"stop_at", s.StopAt == f.StopAt},
		} {
			switch {
			case c.same:
				continue
			case c.field == "topic_regex":
				d.errAt(s.At(c.field), s.FieldPath(c.field),
					"consumer group %q is read through one client with %s, so both must name their topics; or give each its own group", s.Group, f.Where)
			default:
				d.errAt(s.At(c.field), s.FieldPath(c.field),
					"consumer group %q is read through one client with %s: give both the same %s, or each its own group", s.Group, f.Where, c.field)
			}
			break
		}
	}
}

// shareMember gives the sources of one group the one value of a setting
// of their group member that those setting it give, and reports two
// that differ.
func shareMember[T comparable](srcs []*Source, field string, at func(*Source) *T, d *decoder) {
	var zero T
	var by *Source
	for _, s := range srcs {
		switch v := *at(s); {
		case v == zero:
		case by == nil:
			by = s
		case v != *at(by):
			d.errAt(s.At(field), s.FieldPath(field),
				"consumer group %q is read through one client, one member of the group, with %s, which gives another %s: give one, or each source its own group", s.Group, by.Where, field)
			return
		}
	}
	if by == nil {
		return
	}
	for _, s := range srcs {
		*at(s) = *at(by)
	}
}

// resumes returns where a source starts a partition its group has no
// offset for: committed is earliest, said explicitly.
func resumes(p StartPosition) StartPosition {
	if p == StartCommitted {
		return StartEarliest
	}
	return p
}

// crossCheckKafka reports Kafka stages that conflict: a sink or the
// dead-letter output writing a topic a source reads (records would loop),
// and two sources of one consumer group reading the same topic (each would
// get only some of its partitions).
func (d *decoder) crossCheckKafka(p *Pipeline) {
	readers := map[string][]*Source{}
	type matcher struct {
		src *Source
		re  *regexp.Regexp
	}
	var regexes []matcher
	for i := range p.Sources {
		s := &p.Sources[i]
		if s.Type != SourceKafka {
			continue
		}
		for _, t := range s.Topics {
			for _, prev := range readers[t] {
				if s.Group != "" && prev.Group == s.Group {
					d.errAt(s.At("topics"), s.FieldPath("topics"),
						"topic %q is also read by %s in the same group %q (each would get only some of its partitions)", t, prev.Where, s.Group)
					break
				}
			}
			readers[t] = append(readers[t], s)
		}
		if s.TopicRegex != "" {
			regexes = append(regexes, matcher{s, regexp.MustCompile(s.TopicRegex)})
		}
	}
	d.crossCheckKafkaGroups(p)
	loop := func(m *Meta, topic string) {
		if topic == "" {
			return
		}
		if srcs := readers[topic]; len(srcs) > 0 {
			d.errAt(m.At("topic"), m.FieldPath("topic"), "topic %q is read by %s, so records would loop", topic, srcs[0].Where)
			return
		}
		for _, r := range regexes {
			if r.re.MatchString(topic) {
				d.errAt(m.At("topic"), m.FieldPath("topic"), "topic %q matches the topic_regex of %s, so records would loop", topic, r.src.Where)
				return
			}
		}
	}
	for i := range p.Sinks {
		if s := &p.Sinks[i]; s.Type == SinkKafka {
			loop(&s.Meta, s.Topic)
		}
	}
	if p.DeadLetter.Type == DeadLetterKafka {
		loop(&p.DeadLetter.Meta, p.DeadLetter.Topic)
	}
}
