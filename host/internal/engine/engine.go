package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
)

// Operator is one step of the chain, as run by one worker. Process handles
// in, appending outputs and dead letters to out, and returns an error only
// when the pipeline cannot go on. An Operator is used by one goroutine.
type Operator interface {
	Name() string
	Process(ctx context.Context, in []record.Record, out *record.Output) error
	Close(ctx context.Context) error
}

// Step is one operator of the chain. The engine makes one instance of it per
// worker with New, called on Run's goroutine before any record flows, and,
// for a keyed step a run split by task keeps, by Kept.Preload on other
// goroutines, beside the run: New must be safe for concurrent use. A Step
// is only read, and must not change while Run runs.
type Step struct {
	Name string
	// New returns a fresh instance of the operator for one worker.
	New func(ctx context.Context) (Operator, error)
	// BatchSize caps the records per Process call; 0 means the pipeline's.
	BatchSize int
	// KeyBy marks a step that sets record keys (key_by): after it, records
	// are routed to workers by key, so that one key is always processed by
	// the same worker, in order.
	KeyBy bool
	// KeyedState marks a step that keeps state per record key (a window, a
	// plugin that uses keyed state).
	// When no key_by comes before it, the records of its part of the chain
	// are routed to workers by key too, rather than by source partition or
	// in turn: one key's state then lives on one worker, which is also the
	// worker KeyOwner names for it. Records without a key all go to one
	// worker, as Flink runs a window over an unkeyed stream (windowAll) on
	// one.
	KeyedState bool
}

// Pipeline is a runnable pipeline: sources feeding a chain of steps feeding
// every sink. Build it, call Run once. Run closes the steps, the sinks, the
// dead-letter output, and the sources that are io.Closers, in that order, so
// that a source can still commit what the sinks acknowledge while closing.
// Its fields must not change while Run runs; Stats may be called from any
// goroutine at any time.
type Pipeline struct {
	Sources    []Source
	Steps      []Step
	Sinks      []Sink
	DeadLetter DeadLetterSink
	BatchSize  int // records per batch; default 512
	QueueDepth int // batches in flight between stages; default 4
	// Parallelism is the number of workers running each part of the chain;
	// default 1. See the package documentation for how records are routed.
	Parallelism int
	// EventTime, per source (by index; missing or nil means processing
	// time, where the wall clock is the watermark), says where event time
	// comes from and how watermarks follow it.
	EventTime []*EventTime
	// WatermarkInterval is how often watermarks are sent on while input is
	// quiet; default 200ms.
	WatermarkInterval time.Duration
	// Checkpointing, if set, makes the run take checkpoints and, with
	// Restore, continue from one.
	Checkpointing *Checkpointing
	// Observer, if set, is told of batches and checkpoints.
	Observer Observer
	// OwnsKey, if set, says which record keys' state this instance owns
	// (a run sharing its consumer group by task): operators restore and
	// clean up only those (KeyOwner).
	OwnsKey func(key []byte) bool
	// Tasks, if set, says how keyed state is split by task in such a
	// run, and may keep the keyed operators' instances for the next run
	// (see Tasks).
	Tasks *Tasks
	// Repartitions are the key_by steps whose records cross instances
	// through a topic rather than moving between workers in the process
	// (see Repartition).
	Repartitions []Repartition

	stats atomic.Pointer[runStats] // the current or last run's, for Stats
}

// Counts are a stage's record counts after a run: plain data, the
// caller's to keep.
type Counts struct {
	Name string
	In   int64
	Out  int64
	Dead int64
	// Blocked is how long the stage waited for room in the queue of the
	// stage after it (summed over its workers): its backpressure. A
	// source counts its waits for the dispatcher; a step, those of the
	// last step of each run of steps a worker applies without handing
	// on (a key_by ends one), as Flink counts a chain's; a sink none.
	Blocked time.Duration
}

// Summary reports what a run did, stage by stage. It is plain data, made
// afresh for each call that returns one and the caller's to keep.
type Summary struct {
	Sources    []Counts // Out: records read; Dead: records that could not be decoded
	Steps      []Counts // summed over workers
	Sinks      []Counts // In: records given; Out: written; Dead: rejected
	DeadLetter int64    // dead letters written
}

// Run runs the pipeline until every source ends, or until ctx is done. When
// ctx is done the sources stop reading, and everything already read drains
// through the steps to the sinks before Run returns; that is a normal end
// and returns nil. Run returns the first error that stopped the pipeline.
func (p *Pipeline) Run(ctx context.Context) (Summary, error) {
	st := newRunStats(p)
	p.stats.Store(st)
	st.running.Store(true)
	defer st.running.Store(false)

	r := p.newRunner(ctx, st)
	defer r.fail(nil)
	if err := r.prepare(); err != nil {
		return Summary{}, err
	}
	r.startSources()
	go r.dispatch()
	r.startWorkers()
	r.writeOutputs() // until the last segment's workers have ended
	r.finalCheckpoint()
	// Closing the sinks waits for their deliveries, whose failure fails
	// the run: the cause is read after it.
	err := r.closeAll(nil)
	if cause := context.Cause(r.hard); cause != nil {
		err = errors.Join(cause, err)
	}
	return st.summary(p), err
}

// closeOutputs closes the sinks, the repartitions' sinks, the
// dead-letter output and the sources that are io.Closers, in that order.
func (p *Pipeline) closeOutputs() []error {
	var errs []error
	for _, s := range p.Sinks {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, rp := range p.Repartitions {
		if err := rp.Sink.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if p.DeadLetter != nil {
		if err := p.DeadLetter.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range p.Sources {
		if c, ok := s.(io.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// restoreOperators rebuilds the in-memory state of every operator that is
// a Restorer, each instance taking the record keys routed to its worker
// and the watermark its segment was given (wm). The workers restore side
// by side, each its operators in order: each instance scans the whole of
// its operator's state for its keys, so one after the other the scans
// would add up, par of them for each keyed operator.
func (p *Pipeline) restoreOperators(ctx context.Context, segs []*segment, par int, wm func(*segment) int64) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, s := range segs {
		at := wm(s)
		for w, ops := range s.ops {
			wg.Go(func() {
				if err := p.restoreWorker(ctx, s, ops, owner{w, par, p.OwnsKey}.owns, at); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// restoreWorker restores the operators of one worker of segment s, in
// order, stopping at the first that fails.
func (p *Pipeline) restoreWorker(ctx context.Context, s *segment, ops []Operator, owns func([]byte) bool, wm int64) error {
	for j, op := range ops {
		r, ok := op.(Restorer)
		if !ok {
			continue
		}
		if err := r.Restore(ctx, wm, owns); err != nil {
			return fmt.Errorf("operator %q: restoring state: %w", p.Steps[s.first+j].Name, err)
		}
	}
	return nil
}

func (p *Pipeline) watermarkInterval() time.Duration {
	if p.WatermarkInterval > 0 {
		return p.WatermarkInterval
	}
	return 200 * time.Millisecond
}

// owner is one worker of a segment, which owns the record keys routed to
// it, of the tasks the instance owns (tasks nil: every key).
type owner struct {
	w, par int
	tasks  func(key []byte) bool
}

type ownerKey struct{}

func (o owner) owns(key []byte) bool {
	return int(hashKey(key)%uint32(o.par)) == o.w && (o.tasks == nil || o.tasks(key))
}

// KeyOwner returns, given the context Step.New was called with, whether a
// record key is routed to the worker the operator instance runs on: what
// keyed state the instance may clean up alone. It returns nil for any other
// context.
func KeyOwner(ctx context.Context) func(key []byte) bool {
	if o, ok := ctx.Value(ownerKey{}).(owner); ok {
		return o.owns
	}
	return nil
}

// hashKey and hashPartition are 32-bit FNV-1a, which is all routing needs:
// the same input always goes to the same worker.
func hashKey(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	return h
}

func hashPartition(topic string, partition int32) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(topic); i++ {
		h = (h ^ uint32(topic[i])) * 16777619
	}
	for i := 0; i < 4; i++ {
		h = (h ^ uint32(byte(partition>>(8*i)))) * 16777619
	}
	return h
}
