package assembly

import (
	"context"
	"io"
	"log/slog"

	"github.com/weir-stream/weir/host/internal/checkpoint"
	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/kafka"
	"github.com/weir-stream/weir/host/internal/operator"
	"github.com/weir-stream/weir/state"
)

// Deps are what a run is assembled from, explicitly: the validated
// config, its loaded operators, and the process's parts. It is a plain
// value.
type Deps struct {
	Config *config.Pipeline
	Ops    []operator.Operator // one per config operator, from LoadOperators
	Store  state.Store
	Logger *slog.Logger
	Stdin  io.Reader // stdin sources
	Stdout io.Writer // stdout sinks
	Stderr io.Writer // the stderr dead-letter output
	// Broker is a shared embedded broker (*broker.Broker) for a pipeline
	// that names no brokers; nil starts one for the run.
	Broker EmbeddedBroker
	// OnStandby, if set, is called when the run starts waiting as a
	// standby for another instance to leave its consumer group.
	OnStandby func()
	// OnRestore, if set, is told how far the state's restore from the
	// changelog is, as it goes.
	OnRestore func(kafka.ReplayProgress)
	// OnCommit, if set, is told what each checkpoint wrote.
	OnCommit func(checkpoint.CommitStats)
	// Carry is what the pipeline's runs hand on to one another when its
	// instances share their consumer group by task; a pipeline keeps one
	// for all its runs. Nil: no run shares by task.
	Carry *Carry
	// StopRun ends this run as a stop does (cancelling the context its
	// engine runs with), for a run sharing its group by task that the
	// group only gave tasks: it drains and takes a final checkpoint, and
	// the caller builds the next run for the tasks owned then.
	StopRun func()
}

// EmbeddedBroker is a running embedded Kafka broker that pipelines share.
type EmbeddedBroker interface {
	Addrs() []string
	CreateTopic(ctx context.Context, topic string, partitions int32) error
}

// Run is one assembled run: the engine pipeline and what was opened for
// it. Run the engine once, then Close the Run. A Run is not safe for
// concurrent use.
type Run struct {
	Engine       *engine.Pipeline
	KafkaSources []*kafka.Source
	// Tasks are the tasks the run owns, when the pipeline's instances
	// share its consumer group by task; nil otherwise.
	Tasks *kafka.Tasks
	// RoutedInProcess says the run routes its key_by's records in
	// process rather than through its repartition topic: its instance
	// owns every task.
	RoutedInProcess bool
	stops           []func() // closed in reverse order
}

// Close releases what the run opened for itself: tables, the changelog's
// client, a broker it started. The engine closes sources and sinks.
func (r *Run) Close() {
	for i := len(r.stops) - 1; i >= 0; i-- {
		r.stops[i]()
	}
	r.stops = nil
}

// builder holds one Build's progress.
type builder struct {
	Deps
	run      *Run
	cc       kafka.ClientConfig
	txn      *kafka.Txn // the exactly-once transaction, if any
	kafkaRun bool       // a source reads Kafka
	// keyed is KeyedState(Ops) when Build started: one answer for every
	// decision of the run (standby, changelog, routing), even if a plugin
	// reload changes a plugin's answer meanwhile.
	keyed bool
	// byTask: the instances share their consumer group by task
	// (sharesByTask); resumed: a run before this one left its source in
	// Carry.
	byTask, resumed bool
	// repartAt is the key_by whose records cross the repartition topic,
	// or -1 (repartition.go); repartParts and repartInputs are that
	// topic's partitions and the numbering of the inputs' partitions.
	repartAt     int
	repartParts  int32
	repartInputs kafka.Inputs
	// views are the Kafka sources read through another's client, by
	// config source index (sources.go).
	views map[int]*kafka.View
}

// Build assembles one run of the pipeline: it connects to Kafka (or starts
// the embedded broker), waits as a standby while another instance keeps
// the pipeline's keyed state, opens the sources, brings the state to the
// last checkpoint, and makes each operator's step and the sinks. Nothing
// reads input until the engine runs. A config problem found only now (a
// missing output topic) is a *ConfigError.
func Build(ctx context.Context, d Deps) (_ *Run, err error) {
	cfg := d.Config
	b := &builder{Deps: d, keyed: KeyedState(d.Ops), repartAt: -1, run: &Run{Engine: &engine.Pipeline{BatchSize: cfg.Engine.BatchSize,
		QueueDepth: cfg.Engine.QueueDepth, Parallelism: cfg.Engine.Parallelism, EventTime: eventTimes(cfg)}}}
	defer func() {
		if err != nil {
			b.closeStages()
			b.run.Close()
		}
	}()
	if err := b.decideTasks(); err != nil {
		return nil, err
	}
	if cfg.UsesKafka() {
		if err := b.kafkaClient(ctx); err != nil {
			return nil, err
		}
	}
	for _, step := range []func(context.Context) error{b.awaitSoleMember, b.repartitionTopic, b.sources, b.checkpoints, b.steps, b.repartition, b.sinks, b.deadLetter} {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	return b.run, nil
}

// closeStages closes the sources and sinks opened so far, when Build fails.
func (b *builder) closeStages() {
	ep := b.run.Engine
	for _, s := range ep.Sinks {
		s.Close()
	}
	for _, rp := range ep.Repartitions {
		rp.Sink.Close()
	}
	if ep.DeadLetter != nil {
		ep.DeadLetter.Close()
	}
	for _, s := range ep.Sources {
		if c, ok := s.(io.Closer); ok {
			c.Close()
		}
	}
}

// KeyedState reports whether an operator keeps keyed state now: a window,
// a rolling operator, a join, or a plugin whose live version uses the
// state functions. Such a pipeline is exclusive: the only active member
// of its Kafka sources' consumer groups (see awaitSoleMember).
func KeyedState(ops []operator.Operator) bool {
	for _, o := range ops {
		if o.KeyedState() {
			return true
		}
	}
	return false
}

// steps makes each operator's engine step for this run.
func (b *builder) steps(ctx context.Context) error {
	keyedFirst := b.firstSegmentKeyed()
	firstSegment := true
	for _, o := range b.Ops {
		run := operator.Run{Kafka: b.cc,
			Unkeyed:   b.Config.Engine.Parallelism > 1 && firstSegment && !keyedFirst,
			ScaledOut: b.kafkaRun && !b.keyed,
			Defer:     func(f func()) { b.run.stops = append(b.run.stops, f) }}
		st, err := o.Step(ctx, run)
		if err != nil {
			return err
		}
		b.run.Engine.Steps = append(b.run.Engine.Steps, st)
		firstSegment = firstSegment && !st.KeyBy
	}
	return nil
}

// firstSegmentKeyed reports whether the operators before the first key_by
// include one with keyed state now, so that the engine routes their
// records by key (engine.Step.KeyedState).
func (b *builder) firstSegmentKeyed() bool {
	for i, o := range b.Ops {
		if b.Config.Operators[i].Type == config.OperatorKeyBy {
			return false
		}
		if o.KeyedState() {
			return true
		}
	}
	return false
}
