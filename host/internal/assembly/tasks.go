package assembly

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/kafka"
	"github.com/weir-stream/weir/host/internal/operator"
)

// Carry is what one run of a pipeline sharing its consumer group by task
// hands to the next when the group moves tasks (kafka.ErrTasksChanged):
// its Kafka source, whose client keeps the instance's place in the group
// (and, exactly once, its transactional producer), and the set of tasks
// it owns. The zero Carry is empty; a pipeline makes one for all its runs
// and closes it when it stops. It is used by one goroutine at a time.
type Carry struct {
	source  *kafka.Source
	tasks   *kafka.Tasks
	drained atomic.Bool // the run stopped having drained its repartition topic
	// ops keeps the keyed operators' instances of a run for the next
	// (engine.Kept): KeepOperators arms it, DropOperators empties it.
	ops *engine.Kept
}

// kept returns the Carry's engine.Kept, made at first use.
func (c *Carry) kept() *engine.Kept {
	if c.ops == nil {
		c.ops = engine.NewKept()
	}
	return c.ops
}

// KeepOperators lets the next run go on with the keyed operators'
// instances of the last, which stopped because the group moved tasks: it
// restores only the state of the tasks it gained, and its instances
// forget the tasks it lost. The last run stopped at its final
// checkpoint, or, rolledBack, ended without one and its state was rolled
// back to its last checkpoint; the instances are then kept only if they
// hold that checkpoint's state (engine.Kept.Arm).
func (c *Carry) KeepOperators(rolledBack bool) {
	if c != nil && c.ops != nil {
		c.ops.Arm(rolledBack)
	}
}

// DropOperators closes the keyed operators' instances the last run left:
// the next one restores every task's state.
func (c *Carry) DropOperators(ctx context.Context) error {
	if c == nil || c.ops == nil {
		return nil
	}
	return c.ops.Drop(ctx)
}

// Drained reports whether the last run stopped because it had read what
// its repartition topic held, or its input had caught up with what the
// topic's tables applied, so that the next may route in process; it
// forgets it.
func (c *Carry) Drained() bool { return c != nil && c.drained.Swap(false) }

// drain returns what a run draining its repartition topic calls once it
// has: it notes it, and stops the run with stop.
func (c *Carry) drain(stop func()) func() {
	return func() {
		c.drained.Store(true)
		if stop != nil {
			stop()
		}
	}
}

// Moved reports whether the group moved tasks to or from the instance
// since the last run was built: a run that ended without an error then
// stopped for it, and the next is built for the tasks owned now.
func (c *Carry) Moved() bool { return c != nil && c.tasks != nil && c.tasks.Moved() }

// WaitMoved waits until the group has moved tasks to or from the
// instance (Moved), for at most d, or until ctx ends, and reports
// whether it has.
func (c *Carry) WaitMoved(ctx context.Context, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !c.Moved() {
		if ctx.Err() != nil || !time.Now().Before(deadline) {
			return false
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	return true
}

// Close closes the carried source: it leaves the group. The tasks are
// kept: after a source whose producer the brokers fenced
// (kafka.ErrFenced) is closed, the next run makes a new one, which joins
// again (a static member under the same instance id) and moves them at
// its first assignment.
func (c *Carry) Close() error {
	if c == nil {
		return nil
	}
	err := c.DropOperators(context.Background())
	if c.source == nil {
		return err
	}
	err = errors.Join(err, c.source.Close())
	c.source = nil
	return err
}

// Resume gets the carried state ready for the next run after err ended
// one: exactly once, it aborts the transaction, which puts the source's
// partitions back to the group's offsets. The caller rolls the store back
// to its last checkpoint.
func (c *Carry) Resume(ctx context.Context) error {
	if c == nil || c.source == nil || c.source.Txn() == nil {
		return nil
	}
	return c.source.Txn().Abort(ctx)
}

// keptSource is a carried Kafka source as one run's engine sees it: the
// engine closes its sources when the run ends, and this one outlives it.
type keptSource struct{ *kafka.Source }

// Close does nothing: Carry.Close closes the source.
func (keptSource) Close() error { return nil }

// sharesByTask reports whether the pipeline's instances share their
// consumer group by task, and if not, why (for the log): it keeps keyed
// state, takes checkpoints (the changelog is how a task moves), reads
// Kafka topics, named, in one consumer group and nothing else,
// unbounded, writes no file exactly once (a file is cut back to its
// checkpoint at a restart, on its machine), and keeps its keyed state
// either before any key_by, where keys are still the input's and so in
// their tasks' partitions (of its one topic), or after one key_by, which
// then repartitions unless it says repartition: false
// (repartitionPoint). Other keyed pipelines run one active instance, the
// others waiting as standbys.
func (b *builder) sharesByTask() (bool, string) {
	cfg := b.Config
	switch {
	case !b.keyed:
		return false, ""
	case !cfg.Checkpoints.Enabled:
		return false, "it takes no checkpoints, so its state has no changelog to move with a task"
	case !oneGroup(cfg):
		return false, "it reads from a source that is not Kafka, or from Kafka in more than one consumer group"
	case slices.ContainsFunc(cfg.Sources, func(s config.Source) bool { return s.TopicRegex != "" }):
		return false, "its Kafka source reads a topic pattern, whose topics may come and go"
	case cfg.Sources[0].StopAt == config.StopAtLatest:
		return false, "it stops at the input's end offsets (stop_at: latest), which an instance given tasks later would not know"
	case exactFiles(cfg):
		return false, "it writes files exactly once, cut back at a restart to its last checkpoint, and a file stays on one machine"
	}
	at, why := repartitionPoint(cfg, b.Ops)
	if why != "" {
		return false, why
	}
	if topics := inputTopics(cfg); at < 0 && len(topics) > 1 {
		return false, fmt.Sprintf("its keyed state is on the record keys of several topics (%s), whose partitions would have to be assigned together; "+
			"a key_by before it repartitions them", strings.Join(topics, ", "))
	}
	return true, ""
}

// oneGroup reports whether every source of the pipeline reads Kafka, in
// one consumer group.
func oneGroup(cfg *config.Pipeline) bool {
	for _, s := range cfg.Sources {
		if s.Type != config.SourceKafka || s.Group != cfg.Sources[0].Group {
			return false
		}
	}
	return len(cfg.Sources) > 0
}

// inputTopics returns the topics the pipeline's sources name.
func inputTopics(cfg *config.Pipeline) []string {
	var topics []string
	for _, s := range cfg.Sources {
		topics = append(topics, s.Topics...)
	}
	return topics
}

// exactFiles reports whether the pipeline writes a file, or dead letters
// to one, exactly once.
func exactFiles(cfg *config.Pipeline) bool {
	if cfg.Checkpoints.Delivery != config.ExactlyOnce {
		return false
	}
	if cfg.DeadLetter.Type == config.DeadLetterFile {
		return true
	}
	return slices.ContainsFunc(cfg.Sinks, func(s config.Sink) bool { return s.Type == config.SinkFile })
}

// repartitionPoint returns the key_by whose records go through a
// repartition topic (its index, or -1 for none): the last before the
// first operator with keyed state. Its keys are not the input's, so the
// chain after it reads them back from the repartition topic, by task. A
// key_by after that one, with keyed state after it, would need a second
// repartition, which why explains.
func repartitionPoint(cfg *config.Pipeline, ops []operator.Operator) (at int, why string) {
	first := slices.IndexFunc(ops, operator.Operator.KeyedState)
	if first < 0 {
		return -1, ""
	}
	at = -1
	for i := first - 1; i >= 0 && at < 0; i-- {
		if cfg.Operators[i].Type == config.OperatorKeyBy {
			at = i
		}
	}
	if at >= 0 && cfg.Operators[at].Repartition == config.RepartitionNever {
		return -1, fmt.Sprintf("operator %q keeps keyed state after key_by %q, which has repartition: false", cfg.Operators[first].Name, cfg.Operators[at].Name)
	}
	for i := range max(at, 0) {
		if cfg.Operators[i].Type == config.OperatorKeyBy {
			return -1, fmt.Sprintf("key_by %q comes before key_by %q, after which operator %q keeps keyed state: one key_by before it is supported",
				cfg.Operators[i].Name, cfg.Operators[at].Name, cfg.Operators[first].Name)
		}
	}
	keyBy := false
	for i := first + 1; i < len(ops); i++ {
		keyBy = keyBy || cfg.Operators[i].Type == config.OperatorKeyBy
		if keyBy && ops[i].KeyedState() {
			return -1, fmt.Sprintf("operator %q keeps keyed state after a second key_by: one repartition is supported", cfg.Operators[i].Name)
		}
	}
	return at, ""
}

// decideTasks decides, once per run, whether the instances share their
// group by task, and says why not when a keyed pipeline cannot.
func (b *builder) decideTasks() error {
	shares, why := b.sharesByTask()
	if !shares {
		if why != "" && b.carriedSource() == nil {
			b.Logger.Info("the pipeline's instances cannot share its consumer group by task: "+why+
				"; one instance runs it, and others wait as standbys", "pipeline", b.Config.Name)
		}
		return nil
	}
	if b.Carry == nil {
		return errNoCarry
	}
	b.byTask, b.resumed = true, b.Carry.source != nil
	b.repartAt, _ = repartitionPoint(b.Config, b.Ops)
	if b.Carry.tasks == nil {
		b.Carry.tasks = kafka.NewTasks(b.Config.Checkpoints.Delivery == config.ExactlyOnce)
	}
	// At least once, a run the group only gave tasks stops at a final
	// checkpoint rather than rolling back, so nothing is done twice.
	// Exactly once it rolls back as for any move: the transaction's
	// abort is what puts every partition back where the checkpoint is.
	// A final commit would not do: the transaction commits the offsets
	// of everything the client polled, and the poll that brought the new
	// assignment is not handed out (windows were lost so, in
	// TestSharedRepartitionCrashRecovery).
	stop := b.StopRun
	if b.Config.Checkpoints.Delivery == config.ExactlyOnce {
		stop = nil
	}
	b.Carry.tasks.SetStop(stop)
	return nil
}

// carriedSource returns the carried source, if a run before this one
// left it.
func (b *builder) carriedSource() *kafka.Source {
	if b.Carry == nil {
		return nil
	}
	return b.Carry.source
}

// taskSource returns the Kafka source of a run sharing its group by
// task: the carried one, or a new one the Carry keeps.
func (b *builder) taskSource(s *config.Source, others []int) (*kafka.Source, error) {
	if src := b.carriedSource(); src != nil {
		return src, nil
	}
	src, err := b.kafkaSource(s, others)
	if err != nil {
		return nil, err
	}
	b.Carry.source = src
	return src, nil
}

// errNoCarry is returned when a pipeline sharing its group by task is
// built without a Carry.
var errNoCarry = errors.New("assembly: a pipeline sharing its consumer group by task needs a Carry")
