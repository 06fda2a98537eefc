package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"time"

	"github.com/weir-stream/weir/host/internal/assembly"
	"github.com/weir-stream/weir/host/internal/kafka"
	"github.com/weir-stream/weir/host/internal/pluginop"
	"github.com/weir-stream/weir/state"
)

// StageCounts are the record counts of one stage of a finished run.
type StageCounts struct {
	Stage string // "source", "operator", "sink"
	Name  string
	In    int64 // records given to the stage (operators, sinks)
	Out   int64 // records the stage passed on or wrote
	Dead  int64 // records the stage sent to the dead-letter output
}

// Summary is what a run did. Every record read is accounted for: it was
// written by the sinks, dropped on purpose by a filter or flat_map, or sent
// to the dead-letter output.
type Summary struct {
	Stages     []StageCounts
	DeadLetter int64 // dead letters written
}

// LogValue renders the summary for slog, one attribute group per stage.
func (s Summary) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, len(s.Stages)+1)
	for _, st := range s.Stages {
		var g []slog.Attr
		if st.Stage != "source" {
			g = append(g, slog.Int64("in", st.In))
		}
		g = append(g, slog.Int64("out", st.Out), slog.Int64("dead", st.Dead))
		attrs = append(attrs, slog.Attr{Key: st.Name, Value: slog.GroupValue(g...)})
	}
	attrs = append(attrs, slog.Int64("dead_letters", s.DeadLetter))
	return slog.GroupValue(attrs...)
}

// Run runs the pipeline until its sources end or ctx is done. When ctx is
// done, sources stop reading and what was read drains through to the sinks;
// Run then returns a nil error. The summary is valid even with an error.
//
// A pipeline whose keyed state is split by task (on the Kafka record key,
// or after a key_by, which repartitions) shares its consumer group with
// its other instances: when the group moves tasks, Run rolls the state
// back to the last checkpoint (or, at least once, when it only gained
// tasks, stops at a final one) and starts again for the tasks it owns,
// without leaving the process or the group; given tasks and losing none,
// it first goes on with its own while the new ones' state catches up
// from their changelog partitions. When the run ended at a checkpoint
// (at least once, or exactly once with nothing processed after it), the
// next one goes on with its keyed operators: they forget the tasks lost,
// and only the new tasks' state is restored, loaded while the last run
// went on. A run that owns every task
// and first had to apply what its repartition topic held stops at a
// checkpoint once it has, and the next routes the key_by in process.
// Another pipeline that keeps
// keyed state runs as the only active member of its Kafka sources'
// consumer groups: while another instance is in a group, Run waits as a
// standby (StateStandby) and starts once the group is empty, restoring
// the state from the changelog. If another instance joined at the same
// moment, the run gives way before reading anything and waits again. If the group rebalances during an
// exactly-once run's transaction (another consumer joined it, or a topic
// gained partitions), the transaction aborts; Run then rolls the state
// store back to the last checkpoint and starts again from it, as a
// restart would, without leaving the process.
func (p *Pipeline) Run(ctx context.Context) (Summary, error) {
	if l := p.cfg.Engine.MemoryLimit; l > 0 {
		debug.SetMemoryLimit(l) // process-wide, as GOMEMLIMIT
	}
	var total Summary
	carry := &assembly.Carry{}
	defer func() {
		if err := carry.Close(); err != nil {
			p.opts.Logger.Warn("closing the Kafka source", "pipeline", p.cfg.Name, "error", err)
		}
	}()
	for {
		sum, err := p.runOnce(ctx, carry, total)
		total.add(sum)
		p.keepOperators(ctx, carry, err)
		switch {
		case err == nil:
			return total, nil
		case ctx.Err() != nil && (errors.Is(err, kafka.ErrTasksChanged) || errors.Is(err, kafka.ErrTxnAborted) || stalledOut(ctx, err, carry)):
			// Stopped while the group moved tasks: the final checkpoint
			// gave way, as a rollback does, and whoever owns the tasks
			// next continues from the last one. Not a failure.
			p.opts.Logger.Warn("stopped while the consumer group moved tasks: the final checkpoint gave way; the tasks continue from the last one",
				"pipeline", p.cfg.Name, "error", err)
			return total, nil
		case ctx.Err() != nil:
			return total, err
		case errors.Is(err, errRouteDrained):
			p.opts.Logger.Info("the run stopped at a checkpoint, nothing in the repartition topic left in the way; starting again, to route the key_by in process",
				"pipeline", p.cfg.Name)
		case errors.Is(err, errTasksGained):
			p.opts.Logger.Info("the consumer group gave this instance tasks; the run stopped at a checkpoint and starts again for its tasks",
				"pipeline", p.cfg.Name)
		case stalledOut(ctx, err, carry):
			if rerr := p.renewTasks(carry); rerr != nil {
				return total, fmt.Errorf("%w (and starting again in process failed: %v)", err, rerr)
			}
		case errors.Is(err, kafka.ErrTasksChanged):
			rerr := p.resumeTasks(ctx, carry)
			if errors.Is(rerr, kafka.ErrFenced) {
				// The abort found the producer fenced: the instance
				// stalled out of its group, which has moved its tasks.
				rerr = p.renewTasks(carry)
			}
			if rerr != nil {
				return total, fmt.Errorf("%w (and starting again in process failed: %v)", err, rerr)
			}
		case errors.Is(err, kafka.ErrNotSoleMember) && sum.untouched():
			p.opts.Logger.Warn("another instance joined the consumer group at the same time; giving way and waiting as a standby",
				"pipeline", p.cfg.Name, "error", err)
			// A random pause, so that two instances that gave way to
			// each other do not ask again at the same moment.
			select {
			case <-time.After(time.Duration(rand.Int64N(int64(time.Second)))):
			case <-ctx.Done():
				return total, nil
			}
		case errors.Is(err, kafka.ErrTxnAborted):
			if rerr := p.rollback(); rerr != nil {
				return total, fmt.Errorf("%w (and rolling the state back in process failed: %v)", err, rerr)
			}
			p.opts.Logger.Warn("the consumer group rebalanced during a transaction, which aborted; "+
				"rolled the state back to the last checkpoint and starting again from it", "pipeline", p.cfg.Name)
		default:
			return total, err
		}
	}
}

// keepOperators lets the next run go on with the keyed operators'
// instances of the last when err says the group moved tasks
// (assembly.Carry.KeepOperators, which keeps them only if they hold the
// state the next run starts from), and closes them otherwise.
func (p *Pipeline) keepOperators(ctx context.Context, carry *assembly.Carry, err error) {
	switch {
	case ctx.Err() != nil:
	case errors.Is(err, errTasksGained):
		carry.KeepOperators(false)
		return
	case errors.Is(err, kafka.ErrTasksChanged) && !errors.Is(err, kafka.ErrFenced):
		carry.KeepOperators(true)
		return
	}
	if derr := carry.DropOperators(context.WithoutCancel(ctx)); derr != nil {
		p.opts.Logger.Warn("closing the operators the last run kept", "pipeline", p.cfg.Name, "error", derr)
	}
}

// errTasksGained ends a run, at its final checkpoint, that the consumer
// group only gave tasks: the next run starts from that checkpoint, with
// nothing to roll back.
var errTasksGained = errors.New("the consumer group gave this instance tasks")

// errRouteDrained ends a run, at its final checkpoint, that owned every
// task and has applied what its repartition topic held, or whose input
// caught up with what the topic's tables applied: the next may route
// the key_by's records in process.
var errRouteDrained = errors.New("the repartition topic is drained")

// resumeTasks gets a pipeline sharing its group by task ready to run
// again after the group moved its tasks: the transaction aborted
// (exactly once), the store rolled back to its last checkpoint, from
// which the next run restores the tasks it owns now.
func (p *Pipeline) resumeTasks(ctx context.Context, carry *assembly.Carry) error {
	if err := carry.Resume(ctx); err != nil {
		return err
	}
	if err := p.rollback(); err != nil {
		return err
	}
	p.opts.Logger.Info("the consumer group moved tasks; rolled the state back to the last checkpoint and starting again for this instance's tasks",
		"pipeline", p.cfg.Name)
	return nil
}

// stalledOut reports whether err says that the brokers fenced the run's
// transactional producer while the consumer group moved its tasks: the
// instance stalled (a pause longer than its session and transaction
// timeouts), the group gave its tasks to others, and the brokers aborted
// its transaction. Its last checkpoint stands; the tasks continue from it.
//
// The brokers' refusal may reach the run before the group's callback
// says the tasks moved (both follow the resume), so a fenced run waits
// for the group's word, up to stallVerdict, or less if ctx ends.
func stalledOut(ctx context.Context, err error, carry *assembly.Carry) bool {
	return errors.Is(err, kafka.ErrFenced) && carry.WaitMoved(ctx, stallVerdict)
}

// stallVerdict bounds how long a fenced run waits for the consumer group
// to say whether it moved the instance's tasks (stalledOut): a resumed
// member learns at its next heartbeat, seconds after the resume.
const stallVerdict = 15 * time.Second

// renewTasks gets a pipeline sharing its group by task ready to run again
// after it stalled out of its group (stalledOut): its fenced client is
// closed, so that the next run joins with a new one, and the store rolls
// back to its last checkpoint.
func (p *Pipeline) renewTasks(carry *assembly.Carry) error {
	if err := carry.Close(); err != nil {
		p.opts.Logger.Warn("closing the fenced Kafka source", "pipeline", p.cfg.Name, "error", err)
	}
	if err := p.rollback(); err != nil {
		return err
	}
	p.opts.Logger.Warn("the instance stalled past its session and transaction timeouts: the consumer group moved its tasks and the brokers fenced its producer; "+
		"rolled the state back to the last checkpoint and joining again with a new producer", "pipeline", p.cfg.Name)
	return nil
}

// rollback rolls the state store back to its last checkpoint.
func (p *Pipeline) rollback() error {
	b, ok := p.opts.Store.(*state.Badger)
	if !ok {
		return fmt.Errorf("the state store (%T) cannot roll back to its last checkpoint", p.opts.Store)
	}
	return b.Rollback()
}

// add adds the counts of another run of the same pipeline to s.
func (s *Summary) add(o Summary) {
	if len(s.Stages) == 0 {
		s.Stages = append(s.Stages, o.Stages...)
	} else if len(o.Stages) == len(s.Stages) {
		for i, st := range o.Stages {
			s.Stages[i].In += st.In
			s.Stages[i].Out += st.Out
			s.Stages[i].Dead += st.Dead
		}
	}
	s.DeadLetter += o.DeadLetter
}

// untouched reports whether a run read nothing.
func (s Summary) untouched() bool {
	for _, st := range s.Stages {
		if st.Stage == "source" && st.Out+st.Dead > 0 {
			return false
		}
	}
	return s.DeadLetter == 0
}

// runOnce builds the pipeline and runs it once.
func (p *Pipeline) runOnce(ctx context.Context, carry *assembly.Carry, before Summary) (sum Summary, err error) {
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	deps := assembly.Deps{Config: p.cfg, Ops: p.ops, Store: p.opts.Store, Logger: p.opts.Logger, Carry: carry, StopRun: stopRun,
		Stdin: p.opts.Stdin, Stdout: p.opts.Stdout, Stderr: p.opts.Stderr,
		OnStandby: func() { p.runState.Store(StateStandby) }, OnRestore: p.onRestore, OnCommit: p.metrics.tap.committed}
	if p.opts.Broker != nil {
		deps.Broker = p.opts.Broker
	}
	run, err := assembly.Build(ctx, deps)
	if ce := (*assembly.ConfigError)(nil); errors.As(err, &ce) {
		err = &loadError{kind: ErrConfig, err: ce.Err}
	}
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			// Stopped while waiting as a standby: nothing ran.
			p.runState.Store(StateFinished)
			return Summary{}, nil
		}
		p.runState.Store(StateFailed)
		return Summary{}, err
	}
	defer run.Close()
	ep := run.Engine
	ep.Observer = p.metrics
	ri := &runInfo{ep: ep, sources: run.KafkaSources, tasks: run.Tasks, before: Summary{Stages: slices.Clone(before.Stages), DeadLetter: before.DeadLetter}}
	switch {
	case run.RoutedInProcess:
		ri.repart = RepartitionInProcess
	case len(ep.Repartitions) > 0:
		ri.repart = RepartitionTopic
	}
	p.run.Store(ri)
	p.runState.Store(StateRunning)
	defer func() {
		if err != nil {
			p.runState.Store(StateFailed)
		} else {
			p.runState.Store(StateFinished)
		}
	}()
	if p.opts.WatchPlugins {
		wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		pluginop.Watch(wctx, p.pluginOps(), p.opts.Logger)
	}
	es, err := ep.Run(runCtx)
	switch {
	case err != nil || ctx.Err() != nil || runCtx.Err() == nil:
	case carry.Moved():
		// The group gave this instance tasks: the run stopped and
		// checkpointed, and the next one takes them on.
		err = errTasksGained
	case carry.Drained():
		// The run applied what the repartition topic held, or caught
		// up with its tables, and stopped at a checkpoint: the next may
		// route the key_by in process.
		err = errRouteDrained
	}
	return Summary{Stages: p.stageCounts(es), DeadLetter: es.DeadLetter}, err
}
