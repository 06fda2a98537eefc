package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/host/internal/task"
)

// A pipeline whose keyed state follows a key_by repartitions there
// (engine.Repartition): the instance owning an input partition writes the
// key_by's records to the repartition topic, each to the partition
// Kafka's default partitioner gives its new key, and the instance owning
// that partition (its task) applies the rest of the chain. Event time
// crosses the topic in watermark records: each instance writes to every
// partition, after the records before them, the watermark of each input
// partition it has read (an upstream task), and a reader's partition is
// as far on as the least of what was last written there for every
// upstream task, by whichever instance owned it. A task taken over whose
// new owner has nothing more to read keeps its last owner's watermark.

// RepartitionWatermarkHeader marks a watermark record of a repartition
// topic; its value is a repartitionMark in JSON.
const RepartitionWatermarkHeader = "weir-watermark"

// RepartitionOriginHeader, on a record of a repartition topic, says
// where upstream it came from: "task,offset,index", its input
// partition, the offset of the input record it was made from, and its
// place among the records made from that one. A reader applies each
// once: at least once, an upstream run that rolled back writes again
// what it wrote since its checkpoint, and the reader drops what it has
// applied already, so that its keyed state counts every input record
// once (repartition.go's upstreamTimes keeps, per upstream task, the
// last it applied).
const RepartitionOriginHeader = "weir-origin"

// originPos is a repartitioned record's place in its upstream task:
// the input offset and the index among the records made from it.
type originPos struct{ offset, index int64 }

func (a originPos) after(b originPos) bool {
	return a.offset > b.offset || (a.offset == b.offset && a.index > b.index)
}

// parseOrigin reads a RepartitionOriginHeader value, without allocating:
// it is read for every record of the topic.
func parseOrigin(v []byte) (task int32, pos originPos, ok bool) {
	var n [3]int64
	for i := range n {
		if i > 0 {
			if len(v) == 0 || v[0] != ',' {
				return 0, pos, false
			}
			v = v[1:]
		}
		if n[i], v, ok = parseDecimal(v); !ok {
			return 0, pos, false
		}
	}
	if len(v) != 0 || n[0] > math.MaxInt32 {
		return 0, pos, false
	}
	return int32(n[0]), originPos{n[1], n[2]}, true
}

// parseDecimal reads the non-negative decimal number at the start of v,
// returning what follows it; ok is false for none or one that overflows.
func parseDecimal(v []byte) (n int64, rest []byte, ok bool) {
	i := 0
	for ; i < len(v) && v[i] >= '0' && v[i] <= '9'; i++ {
		if n > (math.MaxInt64-int64(v[i]-'0'))/10 {
			return 0, v, false
		}
		n = n*10 + int64(v[i]-'0')
	}
	return n, v[i:], i > 0
}

// repartitionMark is a watermark record's value: the writer promises, for
// each of Tasks (partitions of the input, of Of in all), that no record
// of it at or before the WMs entry of the same index follows in this
// partition.
type repartitionMark struct {
	Tasks []int32 `json:"tasks"`
	WMs   []int64 `json:"wms"`
	Of    int32   `json:"of"`
	// Idle are the tasks, of Tasks, that have sent nothing for their
	// source's idle_timeout: they hold no partition's time back until
	// their next watermark that is not idle.
	Idle []int32 `json:"idle,omitempty"`
}

// decodeRepartitionMark reads a watermark record's value.
func decodeRepartitionMark(b []byte) (repartitionMark, error) {
	var m repartitionMark
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("not a watermark: %v", err)
	}
	if m.Of <= 0 || m.Of > 1<<16 {
		return m, fmt.Errorf("a watermark for %d upstream tasks", m.Of)
	}
	if len(m.WMs) != len(m.Tasks) {
		return m, fmt.Errorf("a watermark with %d tasks and %d watermarks", len(m.Tasks), len(m.WMs))
	}
	for _, t := range m.Tasks {
		if t < 0 || t >= m.Of {
			return m, fmt.Errorf("a watermark for upstream task %d of %d", t, m.Of)
		}
	}
	for _, t := range m.Idle {
		if !slices.Contains(m.Tasks, t) {
			return m, fmt.Errorf("upstream task %d idle without a watermark", t)
		}
	}
	return m, nil
}

// isRepartitionWatermark reports whether kr is a watermark record.
func isRepartitionWatermark(kr *kgo.Record) bool {
	for _, h := range kr.Headers {
		if h.Key == RepartitionWatermarkHeader {
			return true
		}
	}
	return false
}

// upstreamTimes is what the watermark records of one partition of a
// repartition topic said, per upstream task: the last watermark of each,
// of of in all. It is kept in the source's checkpoint (upstreamKey), so
// that a run resuming the partition knows the tasks whose owners write
// no more (an owner gone, whose successor has nothing left to read).
type upstreamTimes struct {
	of   int32
	wm   map[int32]int64
	idle map[int32]bool // tasks whose last watermark said they are idle
	// seen is, per upstream task, the last record of it applied.
	seen map[int32]originPos
}

// apply reports whether a record of upstream task t at pos is new, and
// if so records it as the last applied.
func (u *upstreamTimes) apply(t int32, pos originPos) bool {
	if last, ok := u.seen[t]; ok && !pos.after(last) {
		return false
	}
	if u.seen == nil {
		u.seen = map[int32]originPos{}
	}
	u.seen[t] = pos
	return true
}

// note records m and returns the least watermark over the upstream
// tasks, with ok false while some task has written none.
func (u *upstreamTimes) note(m repartitionMark) (least int64, ok bool) {
	if u.wm == nil {
		u.wm = map[int32]int64{}
	}
	u.of = m.Of
	for i, t := range m.Tasks {
		u.wm[t] = m.WMs[i]
		u.setIdle(t, slices.Contains(m.Idle, t))
	}
	return u.least()
}

func (u *upstreamTimes) setIdle(t int32, idle bool) {
	switch {
	case idle && u.idle == nil:
		u.idle = map[int32]bool{t: true}
	case idle:
		u.idle[t] = true
	default:
		delete(u.idle, t)
	}
}

// least returns the least watermark over the upstream tasks that are not
// idle, with ok false while some task has written none, or when all are
// idle.
func (u *upstreamTimes) least() (int64, bool) {
	if u.of == 0 {
		return 0, false
	}
	least, active := int64(math.MaxInt64), false
	for t := range u.of {
		wm, ok := u.wm[t]
		if !ok {
			return 0, false
		}
		if !u.idle[t] {
			least, active = min(least, wm), true
		}
	}
	return least, active
}

// upstreamKey is the key, in a source snapshot's partitions of a
// repartition topic, of partition p's last watermark of upstream task t
// ("p:t"), of the input offset and index of the last record of t it
// applied ("p:t.o", "p:t.i"), or of its upstream tasks' count ("p:of").
func upstreamKey(p int32, t string) string { return strconv.Itoa(int(p)) + ":" + t }

// putUpstream adds the upstream tables to snap's partitions of topic.
func putUpstream(snap map[string]int64, ups map[int32]*upstreamTimes) {
	for p, u := range ups {
		snap[upstreamKey(p, "of")] = int64(u.of)
		for t, wm := range u.wm {
			snap[upstreamKey(p, strconv.Itoa(int(t)))] = wm
		}
		for t, pos := range u.seen {
			snap[upstreamKey(p, strconv.Itoa(int(t))+".o")] = pos.offset
			snap[upstreamKey(p, strconv.Itoa(int(t))+".i")] = pos.index
		}
		for t := range u.idle {
			snap[upstreamKey(p, strconv.Itoa(int(t))+".idle")] = 1
		}
	}
}

// takeUpstream reads the upstream tables from a snapshot's key k of a
// repartition topic's partitions, returning false when k is not one.
func takeUpstream(ups map[int32]*upstreamTimes, k string, v int64) (bool, error) {
	ps, ts, found := strings.Cut(k, ":")
	if !found {
		return false, nil
	}
	p, err := strconv.ParseInt(ps, 10, 32)
	if err != nil || p < 0 {
		return true, fmt.Errorf("bad partition in %q", k)
	}
	u := ups[int32(p)]
	if u == nil {
		u = &upstreamTimes{wm: map[int32]int64{}}
		ups[int32(p)] = u
	}
	if ts == "of" {
		if v <= 0 || v > 1<<16 {
			return true, fmt.Errorf("%d upstream tasks in %q", v, k)
		}
		u.of = int32(v)
		return true, nil
	}
	ts, field, _ := strings.Cut(ts, ".")
	t, err := strconv.ParseInt(ts, 10, 32)
	if err != nil || t < 0 {
		return true, fmt.Errorf("bad upstream task in %q", k)
	}
	switch field {
	case "":
		u.wm[int32(t)] = v
	case "idle":
		u.setIdle(int32(t), v != 0)
	case "o", "i":
		if u.seen == nil {
			u.seen = map[int32]originPos{}
		}
		pos := u.seen[int32(t)]
		if field == "o" {
			pos.offset = v
		} else {
			pos.index = v
		}
		u.seen[int32(t)] = pos
	default:
		return true, fmt.Errorf("bad key %q", k)
	}
	return true, nil
}

// applied reports whether the record kr of the repartition topic was
// applied before (a repeat an upstream rollback wrote again), and
// otherwise records it as applied. A record without an origin is new.
func (r *sourceRun) applied(kr *kgo.Record) bool {
	var v []byte
	found := false
	for _, h := range kr.Headers {
		if h.Key == RepartitionOriginHeader {
			v, found = h.Value, true
		}
	}
	if !found {
		return false
	}
	t, pos, ok := parseOrigin(v)
	if !ok {
		return false
	}
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.upstreamOf(kr.Partition)
	return !u.apply(t, pos)
}

// upstreamOf returns the upstream table of partition p, made if needed.
// Call with mu held.
func (s *Source) upstreamOf(p int32) *upstreamTimes {
	if s.upstream == nil {
		s.upstream = map[int32]*upstreamTimes{}
	}
	u := s.upstream[p]
	if u == nil {
		u = &upstreamTimes{}
		s.upstream[p] = u
	}
	return u
}

// partitionTime takes a watermark record of the repartition topic: the
// partition's event time becomes the least of its upstream tasks' last
// watermarks once each has written one. A record that does not decode
// goes to the dead-letter output.
func (r *sourceRun) partitionTime(v *runView, rec record.Record, kr *kgo.Record) error {
	m, err := decodeRepartitionMark(kr.Value)
	if err != nil {
		return r.dead(v, rec, kr, fmt.Sprintf("%s[%d]@%d: repartition topic: %v", kr.Topic, kr.Partition, kr.Offset, err))
	}
	s := r.s
	s.mu.Lock()
	least, ok := s.upstreamOf(kr.Partition).note(m)
	s.mu.Unlock()
	if ok {
		return v.out.PartitionTime(rec.Origin, least)
	}
	return nil
}

// upstreamView returns the source (the index of its view) that read
// the input record a repartition topic's record with origin header v
// was made from, or -1 when the header does not say.
func (s *Source) upstreamView(v []byte) int {
	if len(s.views) == 1 {
		return 0
	}
	t, _, ok := parseOrigin(v)
	if !ok {
		return -1
	}
	topic, _, ok := s.inputs.Partition(t)
	if !ok {
		return -1
	}
	return s.viewOf(topic)
}

// cloneUpstream returns a deep copy of ups.
func cloneUpstream(ups map[int32]*upstreamTimes) map[int32]*upstreamTimes {
	out := make(map[int32]*upstreamTimes, len(ups))
	for p, u := range ups {
		out[p] = &upstreamTimes{of: u.of, wm: maps.Clone(u.wm), idle: maps.Clone(u.idle), seen: maps.Clone(u.seen)}
	}
	return out
}

// RepartitionSinkConfig configures a RepartitionSink: a plain value, read
// by NewRepartitionSink and not kept.
type RepartitionSinkConfig struct {
	// Sink is the Kafka sink writing the records; its Topic is the
	// repartition topic, and records keep their keys.
	Sink SinkConfig
	// Partitions is the repartition topic's partition count.
	Partitions int32
	// Inputs numbers the upstream tasks, the input topics' partitions.
	Inputs Inputs
}

// RepartitionSink writes a repartitioned part of a chain's records to
// the repartition topic, and its watermarks to every partition of it
// (engine.RepartitionSink). Exactly once, it writes through the run's
// transaction, so a rebalance's abort takes both back. It is used by the
// engine's sink loop.
type RepartitionSink struct {
	*Sink
	partitions int32
	inputs     Inputs
	keys       [][]byte // per partition, a key Kafka's partitioner places there
	// lastOrigin and index number the records made from one input
	// record, which the workers hand on together.
	lastOrigin record.Origin
	index      int64
	// marks counts the watermark records in flight; mu guards what
	// their promises report.
	marks      sync.WaitGroup
	mu         sync.Mutex
	markFailed int
	closedErr  error
}

var _ engine.RepartitionSink = (*RepartitionSink)(nil)

// NewRepartitionSink checks cfg and makes the sink.
func NewRepartitionSink(cfg RepartitionSinkConfig) (*RepartitionSink, error) {
	if cfg.Partitions <= 0 || cfg.Inputs.Total() <= 0 || cfg.Sink.Topic == "" {
		return nil, fmt.Errorf("repartition sink %q: needs its topic, its partitions and the input's", cfg.Sink.Name)
	}
	sk, err := NewSink(cfg.Sink)
	if err != nil {
		return nil, err
	}
	return &RepartitionSink{Sink: sk, partitions: cfg.Partitions, inputs: cfg.Inputs,
		keys: partitionKeys(int(cfg.Partitions))}, nil
}

// partitionKeys returns, for each of n partitions, a key Kafka's
// default partitioner places there.
func partitionKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i, found := 0, 0; found < n; i++ {
		k := []byte("weir-watermark-" + strconv.Itoa(i))
		if p := task.Of(k, n); keys[p] == nil {
			keys[p] = k
			found++
		}
	}
	return keys
}

// Write produces recs to the repartition topic under their keys, a
// record without a key under the empty one, which is task.Of's place
// for it, so that its reader owns it, each with its origin
// (RepartitionOriginHeader).
func (s *RepartitionSink) Write(recs []record.Record, dead []record.DeadLetter, ack *engine.Ack) ([]record.DeadLetter, error) {
	s.originHeaders(recs)
	return s.Sink.Write(recs, dead, ack)
}

// originHeaders gives each of recs the empty key if it has none, and its
// RepartitionOriginHeader after its own headers. The values and header
// lists are cut from two slabs made per call, which stay with the records
// until the producer is done with them.
func (s *RepartitionSink) originHeaders(recs []record.Record) {
	nh := len(recs)
	for i := range recs {
		nh += len(recs[i].Headers)
	}
	hdrs := make([]record.Header, 0, nh)
	vals := make([]byte, 0, 24*len(recs))
	for i := range recs {
		r := &recs[i]
		if r.Key == nil {
			r.Key = []byte{}
		}
		o := r.Origin
		t, ok := s.inputs.ID(o.Topic, o.Partition)
		if !ok || o.Offset < 0 {
			continue
		}
		if o.Partition == s.lastOrigin.Partition && o.Offset == s.lastOrigin.Offset && o.Topic == s.lastOrigin.Topic {
			s.index++
		} else {
			s.lastOrigin, s.index = o, 0
		}
		start := len(vals)
		vals = strconv.AppendInt(vals, int64(t), 10)
		vals = append(vals, ',')
		vals = strconv.AppendInt(vals, o.Offset, 10)
		vals = append(vals, ',')
		vals = strconv.AppendInt(vals, s.index, 10)
		first := len(hdrs)
		hdrs = append(hdrs, r.Headers...)
		hdrs = append(hdrs, record.Header{Key: RepartitionOriginHeader, Value: vals[start:len(vals):len(vals)]})
		r.Headers = hdrs[first:len(hdrs):len(hdrs)]
	}
}

// Watermark writes the input partitions' watermarks to every partition,
// after the records written before them. A failed write is logged; the
// next watermark writes again, and exactly once the transaction's commit
// fails with it.
func (s *RepartitionSink) Watermark(parts []engine.PartitionWatermark) error {
	m := repartitionMark{Of: s.inputs.Total()}
	for _, pw := range parts {
		if t, ok := s.inputs.ID(pw.Topic, pw.Partition); ok {
			m.Tasks, m.WMs = append(m.Tasks, t), append(m.WMs, pw.WM)
			if pw.Idle {
				m.Idle = append(m.Idle, t)
			}
		}
	}
	if len(m.Tasks) == 0 {
		return nil
	}
	v, err := json.Marshal(m)
	if err != nil {
		return err
	}
	hdr := []kgo.RecordHeader{{Key: RepartitionWatermarkHeader}}
	now := time.Now()
	for p := range s.partitions {
		kr := &kgo.Record{Topic: s.topic, Key: s.keys[p], Value: v, Headers: hdr, Timestamp: now}
		s.marks.Add(1)
		s.cl.Produce(context.Background(), kr, s.markDone)
	}
	return s.err()
}

func (s *RepartitionSink) markDone(kr *kgo.Record, err error) {
	defer s.marks.Done()
	if err == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.markFailed++
	if s.markFailed == 1 {
		s.log.Warn("writing a watermark to the repartition topic failed; the next one writes again", "topic", kr.Topic, "partition", kr.Partition, "error", err)
	}
	if errors.Is(err, kgo.ErrClientClosed) {
		s.closedErr = fmt.Errorf("repartition sink %q: %w", s.name, err)
	}
}

// err returns why watermarks can no longer be written, if they cannot.
func (s *RepartitionSink) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closedErr
}

// Close closes the sink, and waits for the watermark records' promises.
func (s *RepartitionSink) Close() error {
	err := s.Sink.Close()
	s.marks.Wait()
	return err
}

// EnsureRepartitionTopic creates a pipeline's repartition topic unless it
// exists, with partitions partitions or, for 0, as many as the input
// topic with the most has, once every input topic exists (it waits
// while ctx lasts). It returns the repartition topic's partitions, which
// an existing topic keeps, and the numbering of the inputs' partitions
// as its upstream tasks.
func EnsureRepartitionTopic(ctx context.Context, cc ClientConfig, topic string, inputs []string, partitions int32, log *slog.Logger) (parts int32, in Inputs, err error) {
	opts, err := cc.Opts()
	if err != nil {
		return 0, in, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, in, err
	}
	defer cl.Close()
	counts, most := map[string]int32{}, int32(0)
	for _, input := range inputs {
		n, err := awaitInput(ctx, cl, topic, input, log)
		if err != nil {
			return 0, in, err
		}
		counts[input], most = n, max(most, n)
	}
	if partitions <= 0 {
		partitions = most
	}
	in = NewInputs(counts)
	parts, err = createRepartitionTopic(ctx, cl, topic, partitions, log)
	return parts, in, err
}

// awaitInput returns the partitions of a repartition topic's input
// topic, waiting, while ctx lasts, for it to exist.
func awaitInput(ctx context.Context, cl *kgo.Client, topic, input string, log *slog.Logger) (int32, error) {
	for warned := false; ; warned = true {
		n, err := topicPartitions(ctx, cl, input)
		if err != nil {
			return 0, fmt.Errorf("repartition topic %q: describing the input topic %q: %w", topic, input, err)
		}
		if n > 0 {
			return int32(n), nil
		}
		if !warned {
			log.Warn("repartition topic: waiting for the input topic to exist", "topic", topic, "input", input)
		}
		select {
		case <-time.After(changelogInputPoll):
		case <-ctx.Done():
			return 0, fmt.Errorf("repartition topic %q: waiting for the input topic %q: %w", topic, input, ctx.Err())
		}
	}
}

// createRepartitionTopic creates topic with partitions partitions unless
// it exists, and returns its partitions.
func createRepartitionTopic(ctx context.Context, cl *kgo.Client, topic string, partitions int32, log *slog.Logger) (int32, error) {
	for {
		n, err := topicPartitions(ctx, cl, topic)
		if err != nil {
			return 0, fmt.Errorf("repartition topic %q: %w", topic, err)
		}
		if n > 0 {
			if int32(n) != partitions {
				log.Info("repartition topic: the topic keeps the partitions it was made with", "topic", topic, "partitions", n, "configured", partitions)
			}
			return int32(n), nil
		}
		_, err = kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, nil, topic)
		switch {
		case err == nil:
			return partitions, nil
		case !errors.Is(err, kerr.TopicAlreadyExists):
			return 0, fmt.Errorf("repartition topic %q: creating it: %w", topic, err)
		}
		select { // another instance made it: wait for the metadata to show it
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return 0, fmt.Errorf("repartition topic %q: %w", topic, ctx.Err())
		}
	}
}
