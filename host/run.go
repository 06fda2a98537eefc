package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"time"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/kafka"
	"github.com/weir-stream/weir/host/internal/nexmark"
	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/host/internal/wasm"
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
		p.watchPlugins(wctx)
	}
	es, err := ep.Run(ctx)
	return Summary{Stages: p.stageCounts(es), DeadLetter: es.DeadLetter}, err
}

// inFirstSegment reports whether operator i comes before every key_by:
// its records are routed to workers by source partition, unless the
// segment is keyed (firstSegmentKeyed).
func (p *Pipeline) inFirstSegment(i int) bool {
	for _, op := range p.cfg.Operators[:i] {
		if op.Type == config.OperatorKeyBy {
			return false
		}
	}
	return true
}

// firstSegmentKeyed reports whether the operators before the first key_by
// include one with keyed state (a window, a rolling operator, a plugin
// whose live version uses state), so that the engine routes their records
// by key (engine.Step.KeyedState).
func (p *Pipeline) firstSegmentKeyed() bool {
	for i := range p.cfg.Operators {
		op := &p.cfg.Operators[i]
		switch {
		case op.Type == config.OperatorKeyBy:
			return false
		case op.Type == config.OperatorWindow, op.Type == config.OperatorRolling:
			return true
		case p.slots[i] != nil && p.slots[i].cur.Load().plug.UsesState():
			return true
		}
	}
	return false
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
	tables, closeTables, err := p.openTables(ctx, cc)
	if err != nil {
		return nil, nil, err
	}
	stopKafkaClient := stop
	stop = func() { closeTables(); stopKafkaClient() }
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
	ck, closeChangelog, err := p.setUpCheckpoints(ctx, cc, txn, kafkaRun)
	if err != nil {
		return nil, nil, err
	}
	ep.Checkpointing = ck
	stopKafka := stop
	stop = func() { closeChangelog(); stopKafka() }
	keyedFirst, keyed := p.firstSegmentKeyed(), p.keyedState()
	for i := range cfg.Operators {
		op := &cfg.Operators[i]
		st := engine.Step{Name: op.Name, BatchSize: op.BatchSize}
		if op.Type == config.OperatorWindow {
			ep.Steps = append(ep.Steps, p.windowStep(op, p.plugins[i]))
			continue
		}
		if op.Type == config.OperatorRolling {
			ep.Steps = append(ep.Steps, p.rollingStep(op))
			continue
		}
		if op.Type == config.OperatorLookup {
			ep.Steps = append(ep.Steps, lookupStep(op))
			continue
		}
		if op.Type == config.OperatorTableJoin {
			ep.Steps = append(ep.Steps, tableJoinStep(op, tables[i]))
			continue
		}
		if op.Type == config.OperatorJoin {
			ep.Steps = append(ep.Steps, p.joinStep(op))
			continue
		}
		if op.Type == config.OperatorKeyBy {
			st.KeyBy = true
			st.New = func(context.Context) (engine.Operator, error) {
				return engine.NewKeyBy(op.Name, op.KeyPath, op.SourceKeyPaths), nil
			}
		} else {
			slot := p.slots[i]
			st.KeyedState = slot.cur.Load().plug.UsesState()
			slot.unkeyed.Store(cfg.Engine.Parallelism > 1 && p.inFirstSegment(i) && !keyedFirst)
			slot.scaledOut.Store(kafkaRun && !keyed)
			st.New = func(ctx context.Context) (engine.Operator, error) {
				wo := &wasmOperator{name: op.Name, slot: slot}
				if err := wo.swap(ctx, slot.cur.Load()); err != nil {
					return nil, fmt.Errorf("%s: %s: %w", op.At("plugin"), op.FieldPath("plugin"), err)
				}
				if op.StateTTL > 0 {
					return newTTLOperator(wo, op, engine.KeyOwner(ctx)), nil
				}
				return wo, nil
			}
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
			ds, err := databaseSink(ctx, s)
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

// wasmOperator adapts a plugin worker to the engine, and swaps in the
// plugin's new version, between batches, when its slot has one.
type wasmOperator struct {
	name string
	slot *pluginSlot
	ver  *pluginVersion // the version w runs
	w    *wasm.Worker
	sh   shadowOperator // this instance's side of a shadow run
}

func (o *wasmOperator) Name() string { return o.name }
func (o *wasmOperator) Process(ctx context.Context, in []record.Record, out *record.Output) error {
	var swapped time.Time
	if v := o.slot.cur.Load(); v != o.ver {
		swapped = time.Now()
		if err := o.swap(ctx, v); err != nil {
			// The version cannot start here: keep the one running, and
			// let its probation count it as failed.
			o.slot.log.Error("plugin version could not start on this worker; the previous one goes on", "version", v.n, "error", err)
			o.slot.observe(v, int64(len(in)), int64(len(in)))
			swapped = time.Time{}
		}
	}
	shadowed := (o.sh.w != nil || o.slot.shadow.Load() != nil) && o.runShadow(ctx, in)
	start, deadStart := len(out.Records), len(out.Dead)
	err := o.w.Process(ctx, in, out)
	if !swapped.IsZero() {
		o.slot.p.metrics.swapped(time.Since(swapped))
	}
	if !o.ver.settled.Load() {
		o.slot.observe(o.ver, int64(len(in)), int64(len(out.Dead)-deadStart))
	}
	if err == nil && shadowed {
		o.compareShadow(in, out, start, deadStart)
	}
	return err
}

// swap makes the operator run version v: a worker v prepared, or a new
// one, carrying the old worker's watermark; the old worker is closed.
func (o *wasmOperator) swap(ctx context.Context, v *pluginVersion) error {
	var w *wasm.Worker
	select {
	case w = <-v.ready:
	default:
		var err error
		if w, err = v.plug.NewWorker(ctx); err != nil {
			return err
		}
	}
	o.slot.refs.acquire(v.plug)
	if o.w != nil {
		w.SetWatermark(o.w.Watermark())
		o.w.Close(ctx)
		o.slot.refs.release(ctx, o.ver.plug)
	}
	o.w, o.ver = w, v
	return nil
}

func (o *wasmOperator) Close(ctx context.Context) error {
	o.closeShadow(ctx)
	err := o.w.Close(ctx)
	o.slot.refs.release(ctx, o.ver.plug)
	return err
}

// ttlOperator is a plugin operator whose state expires (state_ttl): it
// sweeps the expired state of the keys its worker owns, at most every
// sweepEvery, after a batch (processing time) or a watermark (event time,
// where it also tells the worker the watermark).
type ttlOperator struct {
	*wasmOperator
	owns       func([]byte) bool
	sweepEvery time.Duration
	last       time.Time
}

// ttlEventOperator is a ttlOperator in event time: a Watermarker.
type ttlEventOperator struct{ *ttlOperator }

func newTTLOperator(wo *wasmOperator, op *config.Operator, owns func([]byte) bool) engine.Operator {
	t := &ttlOperator{wasmOperator: wo, owns: owns, last: time.Now(),
		sweepEvery: min(max(op.StateTTL/2, 100*time.Millisecond), time.Minute)}
	if op.StateTTLEventTime {
		return ttlEventOperator{t}
	}
	return t
}

func (o *ttlOperator) Process(ctx context.Context, in []record.Record, out *record.Output) error {
	if err := o.wasmOperator.Process(ctx, in, out); err != nil {
		return err
	}
	return o.sweep(false)
}

// sweep deletes expired state when it is due, or when forced.
func (o *ttlOperator) sweep(force bool) error {
	if !force && time.Since(o.last) < o.sweepEvery {
		return nil
	}
	o.last = time.Now()
	_, err := o.w.SweepExpired(o.owns)
	return err
}

// OnWatermark implements engine.Watermarker. The final watermark of a
// bounded input expires everything, at once.
func (o ttlEventOperator) OnWatermark(_ context.Context, wm int64, _ *record.Output) error {
	o.w.SetWatermark(wm)
	return o.sweep(wm == math.MaxInt64)
}
