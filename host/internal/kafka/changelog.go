package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/host/internal/task"
	"github.com/weir-stream/weir/state"
)

// A changelog topic holds a pipeline's state changes, checkpoint by
// checkpoint, so that the state can be rebuilt on another machine (as Kafka
// Streams' changelog topics): compacted, one partition per task (see
// package task), each checkpoint's changed keys in the partition of their
// record key's task, followed in every partition by a marker record
// carrying the checkpoint's metadata. Values are prefixed so that a
// deletion (a null value, which compaction removes) never looks like an
// empty value:
//
//	state put     key = state key        value = 'v' value
//	state delete  key = state key        value = null
//	marker        key = ChangelogMarker  value = 'm' metadata
//	                                     header weir-tasks = partitions
//
// The markers are written once every change of the checkpoint is
// acknowledged, so a marker in partition 0 says that the checkpoint's
// changes in every partition are there too; replaying every partition in
// order, read_committed, rebuilds the state of partition 0's last marker.
// With exactly-once delivery each checkpoint's records and markers commit
// in its Kafka transaction, so an aborted checkpoint leaves nothing a
// replay sees. A changelog made when it had one partition keeps working:
// its one task holds every key.
const ChangelogMarker = "\x00\x00weir-checkpoint"

// ChangelogTasksHeader is the marker header that records how many
// partitions (tasks) the changelog had when the marker was written. A
// key's changes are in its task's partition, so a changelog whose
// partitions changed since would hold one key's changes in two partitions,
// in no order a replay could restore; Replay refuses it. Markers without
// the header come from changelogs of one partition.
const ChangelogTasksHeader = "weir-tasks"

// ChangelogCheckpointHeader is the header that names, on every change
// and marker of one checkpoint's write, the write it belongs to (a random
// id). A replay applies a partition's changes only when the marker that
// follows them names the same write: the changes of a write that never
// reached its marker (its instance died mid-checkpoint, at least once)
// are dropped, so the state is never ahead of the checkpoint a replay
// adopts. Changes without the header (changelogs written before it) are
// applied as they come.
const ChangelogCheckpointHeader = "weir-checkpoint"

// ChangelogPartitionsFixed is what to do when a changelog's partitions
// changed, for the errors that refuse such a changelog.
const ChangelogPartitionsFixed = "a changelog's partitions cannot change (as with Kafka Streams): " +
	"give the pipeline a new changelog_topic, or restore the topic's partitions"

// Changelog writes and replays a changelog topic. Write is called by one
// goroutine at a time, after EnsureTopic; Replay may run before it.
type Changelog struct {
	topic string
	parts int // the topic's partitions: the run's tasks
	cl    *kgo.Client
	owned bool // cl is the changelog's own, closed by Close
	txn   *Txn // the transaction whose client cl is, or nil
	log   *slog.Logger
	cc    ClientConfig
}

// NewChangelog returns a changelog on topic, writing with an idempotent
// producer of its own (at-least-once runs), or through txn's transactional
// client when txn is not nil (exactly-once runs), so that the changes
// commit with the checkpoint's transaction.
func NewChangelog(cc ClientConfig, topic string, txn *Txn, log *slog.Logger) (*Changelog, error) {
	log = snkLogger(log).With("changelog", topic)
	if p := snkTopicProblem([]byte(topic)); p != "" {
		return nil, fmt.Errorf("changelog topic %q %s", topic, p)
	}
	c := &Changelog{topic: topic, parts: 1, log: log, cc: cc}
	if txn != nil {
		if txn.manual == nil {
			return nil, errors.New("changelog: the transaction's client cannot place records by task")
		}
		txn.manual.add(topic)
		c.cl, c.txn = txn.cl, txn
		return c, nil
	}
	manual := &manualTopics{}
	manual.add(topic)
	opts, _, err := snkProducerOpts(cc, CompressionLz4, AcksAll, 0, 0, 0, manual, log)
	if err != nil {
		return nil, err
	}
	if c.cl, err = kgo.NewClient(opts...); err != nil {
		return nil, err
	}
	c.owned = true
	return c, nil
}

// Topic returns the changelog's topic.
func (c *Changelog) Topic() string { return c.topic }

// Partitions returns the changelog's partitions, the run's tasks: 1 until
// EnsureTopic has found the topic.
func (c *Changelog) Partitions() int { return c.parts }

// EnsureTopic creates the topic, compacted, unless it exists, with one
// partition per partition of the largest of inputs (the pipeline's input
// topics). Since a changelog's partitions cannot change, it waits, while
// ctx lasts, for one of inputs to exist before it creates the topic (with
// no inputs, one partition). An existing topic keeps its partitions:
// they are the run's tasks.
func (c *Changelog) EnsureTopic(ctx context.Context, inputs []string) error {
	// A client of its own: the transaction's outlives the runs of a
	// pipeline sharing its group by task, and its metadata, cached for
	// seconds, may not show a topic made since.
	opts, err := c.cc.Opts()
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(opts, kgo.WithLogger(newKgoLogger(c.log)))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	parts, err := topicPartitions(ctx, cl, c.topic)
	if err != nil {
		return fmt.Errorf("changelog: describing topic %q: %w", c.topic, err)
	}
	if parts == 0 {
		c.parts, err = c.create(ctx, cl, inputs)
		return err
	}
	c.parts = parts
	if tasks, _, err := maxPartitions(ctx, cl, inputs); err == nil && tasks != parts {
		c.log.Info("changelog: the topic keeps the partitions it was made with", "partitions", parts, "input_partitions", tasks)
	}
	return nil
}

// changelogInputPoll is how often EnsureTopic looks for the input topics.
const changelogInputPoll = time.Second

// create creates the topic with as many partitions as the largest of
// inputs, once one exists, and returns its partitions.
func (c *Changelog) create(ctx context.Context, cl *kgo.Client, inputs []string) (int, error) {
	tasks, warned := 1, false
	for len(inputs) > 0 {
		n, found, err := maxPartitions(ctx, cl, inputs)
		if err != nil {
			return 0, fmt.Errorf("changelog: describing the input topics: %w", err)
		}
		if found {
			tasks = n
			break
		}
		if !warned {
			warned = true
			c.log.Warn("changelog: waiting for an input topic to exist, so that the changelog gets a partition per input partition", "inputs", inputs)
		}
		select {
		case <-time.After(changelogInputPoll):
		case <-ctx.Done():
			return 0, fmt.Errorf("changelog: waiting for the input topics %v: %w", inputs, ctx.Err())
		}
	}
	compact := "compact"
	_, err := kadm.NewClient(cl).CreateTopic(ctx, int32(tasks), -1, map[string]*string{"cleanup.policy": &compact}, c.topic)
	switch {
	case err == nil:
		return tasks, nil
	case !errors.Is(err, kerr.TopicAlreadyExists):
		return 0, fmt.Errorf("changelog: creating topic %q: %w", c.topic, err)
	}
	// Another instance made it first; the metadata may take a moment to
	// show it.
	for {
		parts, err := topicPartitions(ctx, cl, c.topic)
		if err != nil || parts > 0 {
			return parts, err
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return 0, fmt.Errorf("changelog: describing topic %q: %w", c.topic, ctx.Err())
		}
	}
}

// topicPartitions returns topic's partitions, or 0 if it does not exist.
func topicPartitions(ctx context.Context, cl *kgo.Client, topic string) (int, error) {
	counts, err := partitionCounts(ctx, cl, topic)
	return counts[topic], err
}

// maxPartitions returns the partitions of the largest of topics (1 if
// none exists), and whether any exists.
func maxPartitions(ctx context.Context, cl *kgo.Client, topics []string) (n int, found bool, err error) {
	n = 1
	if len(topics) == 0 {
		return n, false, nil
	}
	counts, err := partitionCounts(ctx, cl, topics...)
	if err != nil {
		return 0, false, err
	}
	for _, c := range counts {
		n, found = max(n, c), true
	}
	return n, found, nil
}

// partitionCounts returns the partitions of each of topics that exists
// and is ready, as the brokers say now. Not kadm's ListTopics: it answers from the
// client's metadata cache, kept for kgo's MetadataMinAge (5 s), so a
// topic another instance made a moment ago looked missing for that long
// (an instance starting beside another waited 5 s for the changelog
// topic the other had just made).
func partitionCounts(ctx context.Context, cl *kgo.Client, topics ...string) (map[string]int, error) {
	resp, err := topicsMetadata(ctx, cl, topics, false)
	if err != nil {
		return nil, err
	}
	counts := make(map[string]int, len(topics))
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		switch err := kerr.ErrorForCode(t.ErrorCode); {
		case errors.Is(err, kerr.UnknownTopicOrPartition), kerr.IsRetriable(err):
			// Not made yet, or not ready (a topic just made may have
			// no leader yet): as missing, which the callers wait out.
		case err != nil:
			return nil, fmt.Errorf("topic %q: %w", *t.Topic, err)
		case len(t.Partitions) > 0:
			counts[*t.Topic] = len(t.Partitions)
		}
	}
	return counts, nil
}

// partition returns the changelog partition of a state key: its record
// key's task. A key that is not a state.Key belongs to task 0.
func (c *Changelog) partition(key []byte) int32 {
	if c.parts <= 1 {
		return 0
	}
	_, rk, _, ok := state.SplitKey(key)
	if !ok {
		return 0
	}
	return int32(task.Of(rk, c.parts))
}

// Write produces a checkpoint's changes, which each calls yield for, then,
// once all are acknowledged, its marker with meta in every partition, and
// waits until the markers are acknowledged too (written, or, in a
// transaction, written pending its commit). It returns, per partition,
// the offset after the marker, where the next checkpoint's records begin.
//
// With owned not nil (an instance sharing its group by task), only the
// changes of owned tasks and their markers are written; the other
// partitions' offsets are returned as -1, and Write counts the changes it
// left out (keys of tasks another instance owns, which this one must not
// write) in skipped.
func (c *Changelog) Write(ctx context.Context, each func(yield func(key, value []byte, deleted bool) error) error, meta []byte, owned []int32) (next []int64, skipped int, err error) {
	writes := c.writeMask(owned)
	id := []kgo.RecordHeader{{Key: ChangelogCheckpointHeader, Value: binary.BigEndian.AppendUint64(nil, rand.Uint64())}}
	p := &promises{}
	n := 0
	err = each(func(key, value []byte, deleted bool) error {
		part := c.partition(key)
		if !writes[part] {
			skipped++
			return nil
		}
		r := &kgo.Record{Topic: c.topic, Partition: part, Key: bytes.Clone(key), Headers: id}
		if !deleted {
			r.Value = append([]byte{'v'}, value...)
		}
		n++
		p.wg.Add(1)
		c.cl.Produce(ctx, r, p.done)
		return nil
	})
	p.wg.Wait()
	if err != nil {
		return nil, skipped, fmt.Errorf("changelog: listing changes: %w", err)
	}
	if p.err != nil {
		return nil, skipped, fmt.Errorf("changelog: writing %d changes to %q: %w", n, c.topic, c.txn.explain(p.err))
	}
	next = make([]int64, c.parts)
	value := append([]byte{'m'}, meta...)
	tasks := []kgo.RecordHeader{{Key: ChangelogTasksHeader, Value: strconv.AppendInt(nil, int64(c.parts), 10)}, id[0]}
	for part := range c.parts {
		if !writes[part] {
			next[part] = -1
			continue
		}
		p.wg.Add(1)
		c.cl.Produce(ctx, &kgo.Record{Topic: c.topic, Partition: int32(part), Key: []byte(ChangelogMarker), Value: value, Headers: tasks},
			func(r *kgo.Record, err error) {
				if err == nil {
					next[r.Partition] = r.Offset + 1
				}
				p.done(r, err)
			})
	}
	p.wg.Wait()
	if p.err != nil {
		return nil, skipped, fmt.Errorf("changelog: writing the checkpoint's markers to %q: %w", c.topic, c.txn.explain(p.err))
	}
	return next, skipped, nil
}

// writeMask returns, by partition, whether Write writes there: every
// partition when owned is nil, else the owned ones.
func (c *Changelog) writeMask(owned []int32) []bool {
	m := make([]bool, c.parts)
	for p := range m {
		m[p] = owned == nil
	}
	for _, p := range owned {
		if int(p) < c.parts {
			m[p] = true
		}
	}
	return m
}

// promises counts produced records until they are acknowledged, keeping
// the first error.
type promises struct {
	wg  sync.WaitGroup
	mu  sync.Mutex
	err error
}

func (p *promises) done(_ *kgo.Record, err error) {
	if err != nil {
		p.mu.Lock()
		if p.err == nil {
			p.err = err
		}
		p.mu.Unlock()
	}
	p.wg.Done()
}

// ReplayProgress is how far a Replay has come: per changelog partition
// (task), the offsets read since it started and those left to its end
// (records, less the transaction markers among them), and the time it
// has taken.
type ReplayProgress struct {
	Tasks   []TaskProgress
	Elapsed time.Duration
}

// TaskProgress is one changelog partition's part of a ReplayProgress.
type TaskProgress struct {
	Replayed, Left int64
}

// Totals sums the tasks' offsets replayed and left.
func (p ReplayProgress) Totals() (replayed, left int64) {
	for _, t := range p.Tasks {
		replayed += t.Replayed
		left += t.Left
	}
	return replayed, left
}

// ETA estimates the time left from the rate so far; 0 when nothing is
// left or nothing was read yet.
func (p ReplayProgress) ETA() time.Duration {
	replayed, left := p.Totals()
	if left == 0 || replayed == 0 {
		return 0
	}
	return time.Duration(float64(p.Elapsed) * float64(left) / float64(replayed))
}

// replayLogEvery is how often a long replay logs its progress.
const replayLogEvery = 5 * time.Second

// ReplayResult is what Replay found.
type ReplayResult struct {
	// Next is, per partition, the offset after the last record read.
	Next []int64
	// Markers are, per partition, the metadata of the last marker read
	// there, nil where none was. In an exactly-once run the markers of one
	// checkpoint commit together, but a read_committed reader may see the
	// commit reach one partition before another.
	Markers [][]byte
	// Changes counts the state records applied.
	Changes int
	// Behind is, per partition, how many offsets Next is short of the
	// end the replay read to: 0 for every partition Replay returns,
	// more where ReplayFor's budget stopped it.
	Behind []int64
}

// Meta returns the metadata of partition 0's last marker, the checkpoint
// the replay reached, or nil if no marker was read there.
func (r ReplayResult) Meta() []byte {
	if len(r.Markers) == 0 {
		return nil
	}
	return r.Markers[0]
}

// Replay reads every partition of the changelog, each from its offset in
// from (0 past its end), up to its end, read committed, calling apply for
// each state record, in order within a partition. It reads a consistent
// end: the last stable offsets when it starts, partition 0's first, so
// that every change a marker there stands for is within the others' ends.
//
// With only not nil (an instance sharing its group by task), it reads
// only those partitions, its tasks', once the transactions open on them
// when it starts have ended (awaitSettled); the others' Next is their
// from.
//
// progress, when not nil, is called before the first fetch and after each,
// from the calling goroutine; a replay that takes longer than a few
// seconds also logs its progress.
func Replay(ctx context.Context, cc ClientConfig, topic string, from []int64, only []int32, apply func(key, value []byte, deleted bool) error, progress func(ReplayProgress), log *slog.Logger) (ReplayResult, error) {
	return ReplayFor(ctx, cc, topic, from, only, apply, progress, log, 0)
}

// ReplayFor is Replay, stopping once it has read for budget (0: no
// limit) and every partition has passed a checkpoint marker or its end:
// a partition it did not finish resumes, from its Next, after its last
// checkpoint marker read, and its Behind says how far it is from the
// end. A standby applies the changelog so, a slice at a time.
func ReplayFor(ctx context.Context, cc ClientConfig, topic string, from []int64, only []int32, apply func(key, value []byte, deleted bool) error, progress func(ReplayProgress), log *slog.Logger, budget time.Duration) (ReplayResult, error) {
	var res ReplayResult
	log = snkLogger(log)
	rp, err := newReplay(ctx, cc, topic, from, only, budget == 0 && only != nil, log)
	if err != nil || rp == nil {
		return res, err
	}
	defer rp.cl.Close()
	start := time.Now()
	res.Next = rp.next
	res.Markers = make([][]byte, len(rp.end))
	logged := start
	for {
		if progress != nil {
			progress(rp.progress(time.Since(start)))
		}
		if rp.done() || (budget > 0 && time.Since(start) >= budget && rp.sealedSome()) {
			break
		}
		if time.Since(logged) >= replayLogEvery {
			logged = time.Now()
			pr := rp.progress(time.Since(start))
			replayed, left := pr.Totals()
			log.Info("replaying the changelog", "topic", topic, "replayed", replayed, "left", left, "eta", pr.ETA().Round(time.Second))
		}
		if err := rp.poll(ctx, &res, apply); err != nil {
			return res, err
		}
	}
	res.Next = rp.unsealed()
	res.Behind = make([]int64, len(rp.end))
	for p, e := range rp.end {
		res.Behind[p] = max(e-res.Next[p], 0)
	}
	if rp.dropped > 0 {
		log.Info("changelog: dropped the changes of checkpoints that never completed (an instance stopped while writing one)",
			"topic", topic, "changes", rp.dropped)
	}
	if res.Changes > 0 || res.Meta() != nil {
		level := slog.LevelInfo
		if budget > 0 {
			level = slog.LevelDebug // a standby's pass, once a second
		}
		log.Log(ctx, level, "replayed the changelog", "topic", topic, "from", from, "to", res.Next, "changes", res.Changes, "took", time.Since(start))
	}
	return res, nil
}

// replayRun is one Replay: its client, and each partition's end and next
// offset.
type replayRun struct {
	topic string
	cl    *kgo.Client
	from  []int64
	end   []int64
	next  []int64
	// pending holds, per partition, the changes read since its last
	// marker, which that write's marker applies; sealed is the offset
	// after the partition's last marker read (from, before any).
	pending [][]pendingChange
	sealed  []int64
	dropped int // changes of writes that never reached their marker
}

// pendingChange is a change a replay holds until its write's marker.
type pendingChange struct {
	id, key, value []byte
	deleted        bool
}

// progress returns how far the replay is.
func (rp *replayRun) progress(elapsed time.Duration) ReplayProgress {
	pr := ReplayProgress{Tasks: make([]TaskProgress, len(rp.end)), Elapsed: elapsed}
	for p := range rp.end {
		pr.Tasks[p] = TaskProgress{Replayed: max(rp.next[p]-rp.from[p], 0), Left: max(rp.end[p]-rp.next[p], 0)}
	}
	return pr
}

// newReplay starts reading the changelog's partitions from from, or
// returns nil if the topic does not exist yet. With settle, it first
// waits for the transactions open on the partitions it reads to end
// (awaitSettled).
func newReplay(ctx context.Context, cc ClientConfig, topic string, from []int64, only []int32, settle bool, log *slog.Logger) (*replayRun, error) {
	opts, err := cc.Opts()
	if err != nil {
		return nil, err
	}
	// Control records (transaction markers) take offsets too; keeping them
	// lets the replay see that it reached the end when one is last.
	opts = append(opts, kgo.WithLogger(newKgoLogger(log)), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	if settle {
		if err := awaitSettled(ctx, kadm.NewClient(cl), topic, only, log); err != nil {
			cl.Close()
			return nil, err
		}
	}
	end, err := changelogEnds(ctx, kadm.NewClient(cl), topic)
	if err != nil || end == nil {
		cl.Close()
		return nil, err
	}
	rp := &replayRun{topic: topic, cl: cl, end: end, next: make([]int64, len(end))}
	at := map[int32]kgo.Offset{}
	for p := range end {
		if p < len(from) {
			rp.next[p] = max(from[p], 0)
		}
		if only != nil && !slices.Contains(only, int32(p)) {
			end[p] = rp.next[p] // another instance's task: not read
			continue
		}
		at[int32(p)] = kgo.NewOffset().At(rp.next[p])
	}
	rp.from = slices.Clone(rp.next)
	rp.sealed = slices.Clone(rp.next)
	rp.pending = make([][]pendingChange, len(end))
	log.Debug("changelog: replaying", "topic", topic, "from", rp.next, "to", end)
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: at})
	return rp, nil
}

// awaitSettled waits until every transaction open on the partitions
// only of topic when it is called has ended: until each partition's last
// stable offset has reached the high watermark it had then. A reader
// that takes the last stable offsets for a partition's end, and needs
// everything committed there, must wait so: an open transaction holds
// them back, hiding what other producers committed after its first
// record.
//
// A task's restore from the changelog needs it when an owner of the task
// died mid-checkpoint (the brokers abort its transaction only at its
// timeout) and the task has had another owner since, which restored it
// and committed checkpoints after the open records: the group's offsets
// include them, so an owner given the task before the brokers abort the
// transaction would restore a state without them and resume past the
// records they came from. A task's partitions are written by its owner
// only, and the restoring instance owns the task, so the wait ends at the
// latest at the transaction timeout of an earlier owner (a checkpoint
// interval for one handing the task over). A standby's pass does not
// wait: the owner's open transaction would hold it up, and taking the
// task over replays the rest. InProcessUnread needs it for the
// repartition topic (see there).
func awaitSettled(ctx context.Context, adm *kadm.Client, topic string, only []int32, log *slog.Logger) error {
	highs, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = highs.Error()
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return nil // no topic yet: nothing to wait for
	}
	if err != nil {
		return fmt.Errorf("topic %q: listing its high watermarks: %w", topic, err)
	}
	start, warned := time.Now(), time.Time{}
	for {
		stable, err := adm.ListCommittedOffsets(ctx, topic)
		if err == nil {
			err = stable.Error()
		}
		if err != nil {
			return fmt.Errorf("topic %q: listing its last stable offsets: %w", topic, err)
		}
		var open []int32
		for _, p := range only {
			h, hok := highs.Lookup(topic, p)
			s, sok := stable.Lookup(topic, p)
			if hok && sok && s.Offset < h.Offset {
				open = append(open, p)
			}
		}
		if len(open) == 0 {
			if !warned.IsZero() {
				log.Info("the transactions that were open on the partitions have ended", "topic", topic, "waited", time.Since(start).Round(time.Millisecond))
			}
			return nil
		}
		if warned.IsZero() || time.Since(warned) >= replayLogEvery {
			warned = time.Now()
			log.Info("waiting for the transactions open on the partitions to end, to read what was committed after them",
				"topic", topic, "partitions", open, "waited", time.Since(start).Round(time.Millisecond))
		}
		select {
		case <-time.After(settlePoll):
		case <-ctx.Done():
			return fmt.Errorf("topic %q: waiting for open transactions to end: %w", topic, ctx.Err())
		}
	}
}

// settlePoll is how often awaitSettled looks at the last stable offsets.
const settlePoll = 50 * time.Millisecond

// changelogEnds lists the last stable offset of every partition of topic,
// partition 0's before the others', or nil if the topic does not exist.
func changelogEnds(ctx context.Context, adm *kadm.Client, topic string) ([]int64, error) {
	first, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("changelog %q: listing its end: %w", topic, err)
	}
	if err := first.Error(); err != nil {
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			return nil, nil // no changelog yet
		}
		return nil, fmt.Errorf("changelog %q: listing its end: %w", topic, err)
	}
	rest, err := adm.ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = rest.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("changelog %q: listing its end: %w", topic, err)
	}
	end := make([]int64, len(rest[topic]))
	for p := range end {
		o, ok := rest.Lookup(topic, int32(p))
		if !ok {
			return nil, fmt.Errorf("changelog %q: no end listed for partition %d", topic, p)
		}
		end[p] = o.Offset
	}
	if o, ok := first.Lookup(topic, 0); ok {
		end[0] = o.Offset
	}
	return end, nil
}

// checkTasks fails when marker r was written while the changelog had
// another number of partitions than it has now.
func (rp *replayRun) checkTasks(r *kgo.Record) error {
	was := 1
	for _, h := range r.Headers {
		if h.Key == ChangelogTasksHeader {
			n, err := strconv.Atoi(string(h.Value))
			if err != nil || n < 1 {
				return fmt.Errorf("malformed %s header %q", ChangelogTasksHeader, h.Value)
			}
			was = n
		}
	}
	if was != len(rp.end) {
		return fmt.Errorf("this checkpoint was written when the changelog had %d partitions, and it has %d now: "+
			"a key's changes go to the partition of its task, so they are now spread over partitions that a replay cannot order; %s",
			was, len(rp.end), ChangelogPartitionsFixed)
	}
	return nil
}

// unsealed returns where the next replay continues, per partition: after
// the last record read, or, where changes wait for their write's marker
// (one being written now, or one that never will be), after the last
// marker, so that the next replay reads them again.
func (rp *replayRun) unsealed() []int64 {
	next := slices.Clone(rp.next)
	for p, pend := range rp.pending {
		if len(pend) > 0 {
			next[p] = rp.sealed[p]
		}
	}
	return next
}

// sealedSome reports whether every partition read has moved past a
// checkpoint marker or reached its end: what a replay stopped there keeps
// (unsealed), so that one stopped by its budget still makes progress
// however large a checkpoint's write.
func (rp *replayRun) sealedSome() bool {
	for p, e := range rp.end {
		if rp.from[p] < e && rp.next[p] < e && rp.sealed[p] <= rp.from[p] {
			return false
		}
	}
	return true
}

// done reports whether every partition is read to its end.
func (rp *replayRun) done() bool {
	for p, e := range rp.end {
		if rp.next[p] < e {
			return false
		}
	}
	return true
}

// poll applies one fetch's records below their partitions' ends.
func (rp *replayRun) poll(ctx context.Context, res *ReplayResult, apply func(key, value []byte, deleted bool) error) error {
	fs := rp.cl.PollFetches(ctx)
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := fs.Err(); err != nil {
		return fmt.Errorf("changelog %q: reading: %w", rp.topic, err)
	}
	for it := fs.RecordIter(); !it.Done(); {
		r := it.Next()
		if int(r.Partition) >= len(rp.end) || r.Offset >= rp.end[r.Partition] {
			continue
		}
		rp.next[r.Partition] = r.Offset + 1
		if err := rp.record(r, res, apply); err != nil {
			return fmt.Errorf("changelog %q: partition %d, offset %d: %w", rp.topic, r.Partition, r.Offset, err)
		}
	}
	return nil
}

// record applies one changelog record.
func (rp *replayRun) record(r *kgo.Record, res *ReplayResult, apply func(key, value []byte, deleted bool) error) error {
	id := recordHeader(r, ChangelogCheckpointHeader)
	switch {
	case r.Attrs.IsControl():
		return nil
	case string(r.Key) == ChangelogMarker:
		if len(r.Value) == 0 || r.Value[0] != 'm' {
			return errors.New("malformed checkpoint marker")
		}
		if err := rp.checkTasks(r); err != nil {
			return err
		}
		if err := rp.seal(r.Partition, id, res, apply); err != nil {
			return err
		}
		res.Markers[r.Partition] = bytes.Clone(r.Value[1:])
		rp.sealed[r.Partition] = r.Offset + 1
		return nil
	case r.Value != nil && (len(r.Value) == 0 || r.Value[0] != 'v'):
		return errors.New("value without the 'v' prefix")
	case id == nil: // written before writes were named: applied at once
		res.Changes++
		return apply(r.Key, valueOf(r.Value), r.Value == nil)
	}
	rp.pending[r.Partition] = append(rp.pending[r.Partition],
		pendingChange{id: id, key: r.Key, value: valueOf(r.Value), deleted: r.Value == nil})
	return nil
}

// valueOf returns a change's state value: v without its 'v' prefix, or
// nil for a deletion.
func valueOf(v []byte) []byte {
	if v == nil {
		return nil
	}
	return v[1:]
}

// seal applies, at partition's marker of write id, the changes held since
// the partition's last marker that belong to that write, in order, and
// drops the others: a write that never reached its marker.
func (rp *replayRun) seal(partition int32, id []byte, res *ReplayResult, apply func(key, value []byte, deleted bool) error) error {
	for _, c := range rp.pending[partition] {
		if id != nil && !bytes.Equal(c.id, id) {
			rp.dropped++
			continue
		}
		res.Changes++
		if err := apply(c.key, c.value, c.deleted); err != nil {
			return err
		}
	}
	clear(rp.pending[partition])
	rp.pending[partition] = rp.pending[partition][:0]
	return nil
}

// recordHeader returns the value of r's header key, or nil.
func recordHeader(r *kgo.Record, key string) []byte {
	for _, h := range r.Headers {
		if h.Key == key {
			return h.Value
		}
	}
	return nil
}

// Close closes the changelog's own client (not a transaction's).
func (c *Changelog) Close() {
	if c.owned {
		c.cl.Close()
	}
}
