package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"time"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/dbio"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/kafka"
	"github.com/weir-stream/weir/host/internal/nexmark"
	"github.com/weir-stream/weir/host/internal/operator"
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
// A pipeline that keeps keyed state runs as the only
// active member of its Kafka sources' consumer groups: while another
// instance is in a group, Run waits as a standby (StateStandby) and starts
// once the group is empty, restoring the state from the changelog. If
// another instance joined at the same moment, the run gives way before
// reading anything and waits again. If the group rebalances during an
// exactly-once run's transaction (another consumer joined it, or a topic
// gained partitions), the transaction aborts; Run then rolls the state
// store back to the last checkpoint and starts again from it, as a
// restart would, without leaving the process.
func (p *Pipeline) Run(ctx context.Context) (Summary, error) {
	if l := p.cfg.Engine.MemoryLimit; l > 0 {
		debug.SetMemoryLimit(l) // process-wide, as GOMEMLIMIT
	}
	var total Summary
	for {
		sum, err := p.runOnce(ctx)
		total.add(sum)
		switch {
		case err == nil || ctx.Err() != nil:
			return total, err
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
			b, ok := p.opts.Store.(*state.Badger)
			if !ok {
				return total, err
			}
			if rerr := b.Rollback(); rerr != nil {
				return total, fmt.Errorf("%w (and rolling the state back in process failed: %v)", err, rerr)
			}
			p.opts.Logger.Warn("the consumer group rebalanced during a transaction, which aborted; "+
				"rolled the state back to the last checkpoint and starting again from it", "pipeline", p.cfg.Name)
		default:
			return total, err
		}
	}
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
func (p *Pipeline) runOnce(ctx context.Context) (sum Summary, err error) {
	ep, stop, err := p.build(ctx)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			// Stopped while waiting as a standby: nothing ran.
			p.runState.Store(StateFinished)
			return Summary{}, nil
		}
		p.runState.Store(StateFailed)
		return Summary{}, err
	}
	defer stop()
	ep.Observer = p.metrics
	ri := &runInfo{ep: ep}
	for _, s := range ep.Sources {
		if ks, ok := s.(*kafka.Source); ok {
			ri.sources = append(ri.sources, ks)
		}
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
	es, err := ep.Run(ctx)
	return Summary{Stages: p.stageCounts(es), DeadLetter: es.DeadLetter}, err
}

// firstSegmentKeyed reports whether the operators before the first key_by
// include one with keyed state now (a window, a rolling operator, a join,
// a plugin whose live version uses state), so that the engine routes their
// records by key (engine.Step.KeyedState).
func (p *Pipeline) firstSegmentKeyed() bool {
	for i, o := range p.ops {
		if p.cfg.Operators[i].Type == config.OperatorKeyBy {
			return false
		}
		if o.KeyedState() {
			return true
		}
	}
	return false
}

// runFor is what operator i's Step is told for a run.
func (p *Pipeline) runFor(i int, cc kafka.ClientConfig, kafkaRun, keyedFirst, keyed bool, deferred *[]func()) operator.Run {
	firstSegment := true
	for _, op := range p.cfg.Operators[:i] {
		firstSegment = firstSegment && op.Type != config.OperatorKeyBy
	}
	return operator.Run{Kafka: cc,
		Unkeyed:   p.cfg.Engine.Parallelism > 1 && firstSegment && !keyedFirst,
		ScaledOut: kafkaRun && !keyed,
		Defer:     func(f func()) { *deferred = append(*deferred, f) }}
}

// build turns the validated config into an engine pipeline, creating one
// worker per plugin operator.
func (p *Pipeline) build(ctx context.Context) (_ *engine.Pipeline, _ func(), err error) {
	cfg := p.cfg
	ep := &engine.Pipeline{BatchSize: cfg.Engine.BatchSize, QueueDepth: cfg.Engine.QueueDepth,
		Parallelism: cfg.Engine.Parallelism, EventTime: p.eventTimes()}
	// stop is a local, not the named result, so that the error returns
	// below (which set the results to nil) leave it for the cleanup.
	stop := func() {}
	var cc kafka.ClientConfig
	if cfg.UsesKafka() {
		kc, kstop, err := p.kafkaClient(ctx)
		if err != nil {
			return nil, nil, err
		}
		cc, stop = kc, kstop
	}
	if err := p.awaitSoleMember(ctx, cc); err != nil {
		stop()
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			for _, s := range ep.Sinks {
				s.Close()
			}
			if ep.DeadLetter != nil {
				ep.DeadLetter.Close()
			}
			for _, s := range ep.Sources {
				if c, ok := s.(io.Closer); ok {
					c.Close()
				}
			}
			stop()
		}
	}()
	var txn *kafka.Txn
	kafkaRun := false
	for i := range cfg.Sources {
		s := &cfg.Sources[i]
		if s.Type == config.SourceKafka {
			src, err := p.kafkaSource(s, cc)
			if err != nil {
				return nil, nil, err
			}
			ep.Sources = append(ep.Sources, src)
			kafkaRun = true
			if t := src.Txn(); t != nil {
				txn = t
			}
			continue
		}
		ep.Sources = append(ep.Sources, p.source(s))
	}
	su := p.checkpointSetup(cc)
	su.Txn, su.KafkaRun, su.SyncOutputs = txn, kafkaRun, ep.SyncOutputs
	ck, closeChangelog, err := su.Run(ctx)
	if err != nil {
		return nil, nil, err
	}
	ep.Checkpointing = ck
	stopKafka := stop
	stop = func() { closeChangelog(); stopKafka() }
	var runDone []func()
	stopCheckpoints := stop
	stop = func() {
		for _, f := range runDone {
			f()
		}
		stopCheckpoints()
	}
	keyedFirst, keyed := p.firstSegmentKeyed(), p.keyedState()
	for i, o := range p.ops {
		st, err := o.Step(ctx, p.runFor(i, cc, kafkaRun, keyedFirst, keyed, &runDone))
		if err != nil {
			return nil, nil, err
		}
		ep.Steps = append(ep.Steps, st)
	}
	for i := range cfg.Sinks {
		s := &cfg.Sinks[i]
		format := engine.SinkJSON
		if s.Format == config.SinkFormatRaw {
			format = engine.SinkRaw
		}
		switch s.Type {
		case config.SinkStdout:
			ep.Sinks = append(ep.Sinks, engine.NewWriterSink(s.Name, "standard output", p.opts.Stdout, format, false))
		case config.SinkFile:
			fs, err := engine.NewFileSink(s.Name, s.Path, format)
			if err != nil {
				return nil, nil, err
			}
			ep.Sinks = append(ep.Sinks, fs)
		case config.SinkDiscard:
			ep.Sinks = append(ep.Sinks, engine.NewDiscardSink(s.Name))
		case config.SinkKafka:
			ks, err := kafkaSink(s, cc, p.opts.Logger, txn)
			if err != nil {
				return nil, nil, err
			}
			ep.Sinks = append(ep.Sinks, ks)
		case config.SinkDatabase:
			ds, err := dbio.NewSinkFrom(ctx, s)
			if err != nil {
				return nil, nil, err
			}
			ep.Sinks = append(ep.Sinks, ds)
		}
	}
	switch dl := &cfg.DeadLetter; dl.Type {
	case config.DeadLetterFile:
		f, err := engine.NewDeadLetterFile(dl.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: dead_letter.path: %w", dl.At("path"), err)
		}
		ep.DeadLetter = f
	case config.DeadLetterKafka:
		ks, err := kafka.NewDeadLetterSink(kafka.DeadLetterConfig{Client: cc, Topic: dl.Topic, Logger: p.opts.Logger, Txn: txn})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: dead_letter: %w", dl.Pos, err)
		}
		ep.DeadLetter = ks
	default:
		ep.DeadLetter = engine.NewDeadLetterWriter("standard error", p.opts.Stderr, false)
	}
	return ep, stop, nil
}

func (p *Pipeline) source(s *config.Source) engine.Source {
	switch s.Type {
	case config.SourceStdin:
		return engine.NewReaderSource(s.Name, "standard input", p.opts.Stdin, sourceFormat(s.Format))
	case config.SourceGenerator:
		gc := engine.GeneratorConfig{Count: s.Count, Rate: s.Rate, Seed: uint64(s.Seed), Key: s.Key, Linger: p.cfg.Engine.BatchLinger}
		for _, f := range s.Fields {
			gf := engine.GenField{Name: f.Name, Kind: genKind(f.Kind), Start: f.Start, Min: f.Min, Max: f.Max,
				MinInt: f.MinInt, MaxInt: f.MaxInt, Decimals: f.Decimals, Length: f.Length, Values: f.Values, Value: f.Value}
			if f.End != nil {
				gf.End, gf.Bounded = *f.End, true
			}
			gc.Fields = append(gc.Fields, gf)
		}
		return engine.NewGenerator(s.Name, gc)
	case config.SourceNexmark:
		nc := nexmark.SourceConfig{Count: s.Count, Rate: s.Rate, Linger: p.cfg.Engine.BatchLinger, WallClock: s.EventTime == nil,
			Config: nexmark.Config{FirstEventRate: s.Nexmark.FirstEventRate, BaseTime: s.Nexmark.BaseTime, Seed: s.Seed}}
		for _, k := range s.Nexmark.Kinds {
			nc.Kinds |= map[string]nexmark.Kind{config.NexmarkPerson: nexmark.KindPerson, config.NexmarkAuction: nexmark.KindAuction, config.NexmarkBid: nexmark.KindBid}[k]
		}
		return nexmark.NewSource(s.Name, nc)
	default:
		return engine.NewFileSource(s.Name, s.Path, sourceFormat(s.Format))
	}
}

func sourceFormat(f config.SourceFormat) engine.Format {
	switch f {
	case config.FormatJSONL:
		return engine.FormatJSONLines
	case config.FormatJSONArray:
		return engine.FormatJSONArray
	case config.FormatLines:
		return engine.FormatLines
	}
	return engine.FormatAuto
}

func genKind(k config.GenKind) engine.GenKind {
	switch k {
	case config.GenSequence:
		return engine.GenSequence
	case config.GenRandomInt:
		return engine.GenRandomInt
	case config.GenRandomFloat:
		return engine.GenRandomFloat
	case config.GenRandomChoice:
		return engine.GenRandomChoice
	case config.GenRandomString:
		return engine.GenRandomString
	case config.GenRandomBool:
		return engine.GenRandomBool
	case config.GenConstant:
		return engine.GenConstant
	case config.GenTimestamp:
		return engine.GenTimestamp
	}
	return 0
}
