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
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/host/internal/engine"
)

// A run of a repartitioning pipeline whose instance owns every partition
// of the input and of the repartition topic routes the key_by's records
// in process instead (Source.SetRoute): the topic would hand them back
// to the same instance, at the price of a produce and a fetch per record.
// It may do so only once nothing is left in the topic for it to read
// (InProcessUnread): records there were keyed before this run, and must
// reach their state before the records the run routes itself, so a run
// that finds some reads them first, its input paused (Route.Drain).
// Records of the topic, and their upstream tables, stay compatible both
// ways: a run routing in process keeps, at each checkpoint, the tables a
// repartitioned run would have made of the same input (every input
// record before the checkpoint applied, each input partition's
// watermark), so that the next run may go through the topic again, on
// this instance or on those the group gives the tasks to.

// InProcessCheck is what InProcessUnread looks at: a plain value, read
// and not kept.
type InProcessCheck struct {
	Client      ClientConfig
	Group       string
	Topic       string // the repartition topic
	Inputs      Inputs // the input topics' partitions, numbered
	Partitions  int32  // the repartition topic's
	ExactlyOnce bool
	// Snapshot is the Kafka source's snapshot in the checkpoint the run
	// continues from (nil for none): the repartition topic's positions
	// (at least once) and its upstream tables.
	Snapshot json.RawMessage
	Logger   *slog.Logger
}

// Unread is what InProcessUnread found: Why a run owning every task may
// not route in process ("" when it may), and, when only records left in
// the repartition topic stand in the way, how many each partition holds
// (Records), which a run reading nothing else can apply first
// (Route.Drain).
//
// Ahead, when upstream tables applied input partitions past where the
// run resumes them, gives for each such input partition the last offset
// applied: once the run's input has passed every one of them (the
// records between read again, and dropped as repeats by the topic's
// reader), a later run may route in process (Route.CatchUp).
type Unread struct {
	Why     string
	Records map[int32]int
	Ahead   map[int32]int64
}

// InProcessUnread returns why a run that owns every task may not route
// the key_by's records in process: the repartition topic holds records
// past where the run would resume reading it (written by an earlier run,
// of this instance or another, and not yet applied; committed, once the
// transactions open on the topic have ended), or its upstream
// tables say records of an input partition were applied past where the
// run resumes that partition (at least once, a crash after a checkpoint
// and before the group's commit), which only the topic's reader can drop
// as repeats.
func InProcessUnread(ctx context.Context, c InProcessCheck) (Unread, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cl, err := c.client()
	if err != nil {
		return Unread{}, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	// Records counted up to the last stable offsets: wait for the
	// transactions open there to end, or records another instance
	// committed behind one (an instance that died or gave its input up
	// while writing) would be left in the topic, never applied, by a
	// run routing in process. Their writers no longer own inputs, so
	// they abort.
	parts := make([]int32, c.Partitions)
	for p := range parts {
		parts[p] = int32(p)
	}
	if err := awaitSettled(ctx, adm, c.Topic, parts, c.logger()); err != nil {
		return Unread{}, err
	}
	committed, err := adm.FetchOffsets(ctx, c.Group)
	if err == nil {
		err = committed.Error()
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		committed, err = nil, nil // a new group has committed nothing
	}
	if err != nil {
		return Unread{}, fmt.Errorf("kafka: reading group %q's offsets: %w", c.Group, err)
	}
	restored, ups, err := snapshotTopic(c.Snapshot, c.Topic)
	if err != nil {
		return Unread{}, err
	}
	if why, ahead := appliedAhead(ups, committed, c.Inputs); why != "" {
		return Unread{Why: why, Ahead: ahead}, nil
	}
	from := map[int32]int64{}
	for p := range c.Partitions {
		off, ok := restored[p]
		if c.ExactlyOnce || !ok {
			// The group's offset, or (none) the log's start, where a
			// new group reads the topic from.
			o, _ := committed.Lookup(c.Topic, p)
			off = max(o.At, 0)
		}
		from[p] = off
	}
	left, err := unreadRecords(ctx, cl, adm, c.Topic, from)
	if err != nil || len(left) == 0 {
		return Unread{}, err
	}
	n := 0
	for _, k := range left {
		n += k
	}
	return Unread{Why: fmt.Sprintf("the repartition topic %q holds %d records written before this run and not yet applied", c.Topic, n), Records: left}, nil
}

// client returns a client for the check, reading committed records and
// keeping control records, so that reading up to the end offsets ends.
func (c InProcessCheck) client() (*kgo.Client, error) {
	opts, err := c.Client.Opts()
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.WithLogger(newKgoLogger(c.logger())), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	return kgo.NewClient(opts...)
}

// logger returns the check's logger, or one that discards.
func (c InProcessCheck) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// snapshotTopic returns what a Kafka source snapshot records of topic:
// its partitions' positions and their upstream tables.
func snapshotTopic(b json.RawMessage, topic string) (map[int32]int64, map[int32]*upstreamTimes, error) {
	offs, ups := map[int32]int64{}, map[int32]*upstreamTimes{}
	if len(b) == 0 || string(b) == "null" {
		return offs, ups, nil
	}
	var snap sourceSnapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		return nil, nil, fmt.Errorf("kafka source checkpoint: %w", err)
	}
	for k, v := range snap[topic] {
		if isUp, err := takeUpstream(ups, k, v); isUp {
			if err != nil {
				return nil, nil, fmt.Errorf("kafka source checkpoint: %w", err)
			}
			continue
		}
		p, err := strconv.ParseInt(k, 10, 32)
		if err != nil {
			return nil, nil, fmt.Errorf("kafka source checkpoint: bad partition %q of topic %q", k, topic)
		}
		offs[int32(p)] = v
	}
	return offs, ups, nil
}

// appliedAhead returns why the upstream tables ups record an input
// record applied at or past where its input partition resumes (the
// group's offset), or "", and for each upstream task so applied (inputs
// numbers them) the last offset applied.
func appliedAhead(ups map[int32]*upstreamTimes, committed kadm.OffsetResponses, inputs Inputs) (why string, ahead map[int32]int64) {
	for _, q := range slices.Sorted(maps.Keys(ups)) {
		for t, pos := range ups[q].seen {
			topic, p, _ := inputs.Partition(t)
			o, ok := committed.Lookup(topic, p)
			if ok && pos.offset < o.At {
				continue
			}
			if why == "" {
				why = fmt.Sprintf("partition %d of the repartition topic applied partition %d of input topic %q up to offset %d, past where the run resumes it", q, p, topic, pos.offset)
				ahead = map[int32]int64{}
			}
			ahead[t] = max(ahead[t], pos.offset)
		}
	}
	return why, ahead
}

// unreadRecords counts, by partition, the records of topic (watermark
// records and transaction markers aside) from the offsets from up to its
// end; partitions with none are left out.
func unreadRecords(ctx context.Context, cl *kgo.Client, adm *kadm.Client, topic string, from map[int32]int64) (map[int32]int, error) {
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("kafka: listing the ends of %q: %w", topic, err)
	}
	left := map[int32]int64{}
	start := map[int32]kgo.Offset{}
	for p, off := range from {
		end, ok := ends.Lookup(topic, p)
		if ok && end.Offset > off {
			left[p] = end.Offset
			start[p] = kgo.NewOffset().At(off)
		}
	}
	if len(left) == 0 {
		return nil, nil
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: start})
	n := map[int32]int{}
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			return nil, fmt.Errorf("kafka: reading %q: %w", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := left[r.Partition]
			if !ok {
				return
			}
			if !r.Attrs.IsControl() && !isRepartitionWatermark(r) {
				n[r.Partition]++
			}
			if r.Offset+1 >= end {
				delete(left, r.Partition)
			}
		})
	}
	return n, nil
}

// inProcessTables sets, for a run routing in process, the upstream
// tables of every partition of the repartition topic to what a run
// going through the topic would have made of the same input: every
// record of each input partition before its position applied, and each
// input partition's watermark. Call with mu held, at a checkpoint.
func (s *Source) inProcessTables() {
	for q := range s.routeParts {
		u := s.upstreamOf(q)
		u.of = s.routeInputs
		for tp, p := range s.parts {
			if tp.topic != s.repartition && p.owned && p.commit.Offset > 0 {
				u.apply(s.upstreamID(tp), originPos{offset: p.commit.Offset - 1, index: math.MaxInt64})
			}
		}
		for _, pw := range s.routeWMs {
			if pw.Topic != s.repartition {
				if u.wm == nil {
					u.wm = map[int32]int64{}
				}
				t := s.upstreamID(srcTP{pw.Topic, pw.Partition})
				u.wm[t] = pw.WM
				u.setIdle(t, pw.Idle)
			}
		}
	}
}

// upstreamWatermark returns the least watermark the repartition topic's
// tables hold for input partition t, over the partitions that hold one,
// or engine.NoWatermark for none: every reader of the topic was promised
// that much of t. Call with mu held.
func (s *Source) upstreamWatermark(t int32) int64 {
	wm, found := int64(math.MaxInt64), false
	for _, u := range s.upstream {
		if v, ok := u.wm[t]; ok {
			wm, found = min(wm, v), true
		}
	}
	if !found {
		return engine.NoWatermark
	}
	return wm
}

// SnapshotWatermarks implements engine.WatermarkSnapshotter: a run
// routing in process keeps its input partitions' watermarks in the
// repartition topic's upstream tables; another asks for none.
func (s *Source) SnapshotWatermarks(parts func() []engine.PartitionWatermark) {
	s.mu.Lock()
	routing := s.routeParts > 0
	s.mu.Unlock()
	if !routing {
		return
	}
	wms := parts()
	s.mu.Lock()
	s.routeWMs = wms
	s.mu.Unlock()
}

// Route is how one Run of a Source reading a repartition topic treats
// it; the zero Route reads it as every other topic.
type Route struct {
	// InProcess: the run routes the key_by's records in process; it does
	// not fetch the topic, and keeps its upstream tables as a run going
	// through it would (inProcessTables). Tasks and Inputs are the
	// topic's partitions and the input's.
	InProcess     bool
	Tasks, Inputs int32
	// Drain, for a run owning every task whose topic holds records left
	// to apply (Unread.Records), makes the run read only the topic, the
	// input paused, and call Drained once it has read that many records
	// of each partition (handed out, so that a checkpoint after it
	// covers them): the next run may then route in process.
	Drain   map[int32]int
	Drained func()
	// CatchUp, for a run owning every task that goes through the topic
	// only because upstream tables applied input partitions ahead of it
	// (Unread.Ahead), makes the source call CaughtUp at the first
	// checkpoint whose offsets of those partitions are past them, and
	// whose commit to the group succeeded: the next run may then route
	// in process, once it has read what the topic holds.
	CatchUp  map[int32]int64
	CaughtUp func()
}

// SetRoute sets, before a Run, how that run treats the repartition topic.
func (s *Source) SetRoute(rt Route) {
	s.mu.Lock()
	s.routeParts, s.routeInputs, s.routeWMs = 0, 0, nil
	if rt.InProcess {
		s.routeParts, s.routeInputs = rt.Tasks, rt.Inputs
	}
	s.drainLeft, s.drained, s.drainUntil = maps.Clone(rt.Drain), rt.Drained, time.Now().Add(drainTimeout)
	s.catchUp, s.caughtUp = maps.Clone(rt.CatchUp), rt.CaughtUp
	s.mu.Unlock()
	if s.repartition == "" {
		return
	}
	var inputs []string
	for _, t := range s.topics {
		if t != s.repartition {
			inputs = append(inputs, t)
		}
	}
	s.cl.ResumeFetchTopics(s.topics...)
	switch {
	case rt.InProcess:
		s.cl.PauseFetchTopics(s.repartition)
	case len(rt.Drain) > 0:
		s.cl.PauseFetchTopics(inputs...)
	}
}

// drainTimeout bounds how long a run draining the repartition topic keeps
// its input paused: should the records it was told of not all come (the
// topic's records deleted meanwhile), it goes on through the topic.
const drainTimeout = time.Minute

// noteDrained counts, for a run draining the repartition topic
// (Route.Drain), the records of it just handed out, and calls
// Route.Drained once they are all there.
func (s *Source) noteDrained(fs kgo.Fetches) {
	s.mu.Lock()
	if len(s.drainLeft) == 0 {
		s.mu.Unlock()
		return
	}
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if p.Topic != s.repartition {
			return
		}
		for _, r := range p.Records {
			if !isRepartitionWatermark(r) {
				s.drainLeft[p.Partition]--
			}
		}
	})
	if time.Now().After(s.drainUntil) {
		s.drainLeft, s.drained = nil, nil
		s.mu.Unlock()
		s.log.Warn("kafka source: the repartition topic still holds records for this run after "+drainTimeout.String()+"; reading the input again, through the topic", "topic", s.repartition)
		s.cl.ResumeFetchTopics(s.topics...)
		return
	}
	for _, n := range s.drainLeft {
		if n > 0 {
			s.mu.Unlock()
			return
		}
	}
	done := s.drained
	s.drainLeft, s.drained = nil, nil
	s.mu.Unlock()
	s.log.Info("kafka source: read what the repartition topic held for this run; it stops at a checkpoint, and the next routes in process", "topic", s.repartition)
	if done != nil {
		done()
	}
}

// noteCaughtUp calls Route.CaughtUp once the checkpoint just committed
// to the group has passed, in every input partition of Route.CatchUp,
// the offset given there.
func (s *Source) noteCaughtUp() {
	s.mu.Lock()
	if len(s.catchUp) == 0 || s.caughtUp == nil {
		s.mu.Unlock()
		return
	}
	for t, off := range s.catchUp {
		p := s.parts[s.upstreamPartition(t)]
		if p == nil || !p.owned || p.commit.Offset <= off {
			s.mu.Unlock()
			return
		}
	}
	done := s.caughtUp
	s.catchUp, s.caughtUp = nil, nil
	s.mu.Unlock()
	s.log.Info("kafka source: the input is past what the repartition topic's tables applied ahead of it; the run stops at a checkpoint, and the next routes in process once it has read what the topic holds", "topic", s.repartition)
	done()
}

// upstreamPartition returns the input partition of upstream task t
// (SourceConfig.Inputs), or, when Inputs does not number it, partition t
// of the input topic, as for a pipeline reading one topic.
func (s *Source) upstreamPartition(t int32) srcTP {
	if topic, p, ok := s.inputs.Partition(t); ok {
		return srcTP{topic, p}
	}
	for _, topic := range s.topics {
		if topic != s.repartition {
			return srcTP{topic, t}
		}
	}
	return srcTP{partition: t}
}

// upstreamID returns the upstream task of input partition tp
// (SourceConfig.Inputs), or, when Inputs does not number it, its
// partition, as for a pipeline reading one topic.
func (s *Source) upstreamID(tp srcTP) int32 {
	if id, ok := s.inputs.ID(tp.topic, tp.partition); ok {
		return id
	}
	return tp.partition
}
