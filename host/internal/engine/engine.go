package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/host/internal/wasm"
)

// Operator is one step of the chain, as run by one worker. Process handles
// in, appending outputs and dead letters to out, and returns an error only
// when the pipeline cannot go on. An Operator is used by one goroutine.
type Operator interface {
	Name() string
	Process(ctx context.Context, in []record.Record, out *wasm.Output) error
	Close(ctx context.Context) error
}

// Step is an operator with the batch size it takes.
type Step struct {
	Op Operator
	// BatchSize caps the records per Process call; 0 means the pipeline's.
	BatchSize int
}

// Pipeline is a runnable pipeline: sources feeding a chain of steps feeding
// every sink. Build it, call Run once. Run closes the steps, the sinks, the
// dead-letter output, and the sources that are io.Closers, in that order, so
// that a source can still commit what the sinks acknowledge while closing.
type Pipeline struct {
	Sources    []Source
	Steps      []Step
	Sinks      []Sink
	DeadLetter DeadLetterSink
	BatchSize  int // records per batch; default 512
	QueueDepth int // batches in flight between stages; default 4
}

// Counts are a stage's record counts after a run.
type Counts struct {
	Name string
	In   int64
	Out  int64
	Dead int64
}

// Summary reports what a run did, stage by stage.
type Summary struct {
	Sources    []Counts // Out: records read; Dead: records that could not be decoded
	Steps      []Counts
	Sinks      []Counts // In: records given; Out: written; Dead: rejected
	DeadLetter int64    // dead letters written
}

// Run runs the pipeline until every source ends, or until ctx is done. When
// ctx is done the sources stop reading, and everything already read drains
// through the steps to the sinks before Run returns; that is a normal end
// and returns nil. Run returns the first error that stopped the pipeline.
func (p *Pipeline) Run(ctx context.Context) (Summary, error) {
	batchSize := p.BatchSize
	if batchSize <= 0 {
		batchSize = 512
	}
	depth := p.QueueDepth
	if depth <= 0 {
		depth = 4
	}
	// hard is cancelled only by a failure; ctx only stops the sources.
	hard, fail := context.WithCancelCause(context.WithoutCancel(ctx))
	defer fail(nil)

	pool := newPool(2*depth+len(p.Sources)+2, len(p.Steps), batchSize)
	srcCh := make(chan *batch, depth)
	sinkCh := make(chan *batch, depth)
	sum := Summary{
		Sources: make([]Counts, len(p.Sources)),
		Steps:   make([]Counts, len(p.Steps)),
		Sinks:   make([]Counts, len(p.Sinks)),
	}

	var srcWG sync.WaitGroup
	for i, s := range p.Sources {
		srcWG.Add(1)
		go func() {
			defer srcWG.Done()
			out := &Out{ctx: hard, pool: pool, ch: srcCh, source: i, name: s.Name(), batchSize: batchSize}
			err := s.Run(ctx, out)
			sum.Sources[i] = Counts{Name: s.Name(), Out: out.count, Dead: out.dead}
			if err != nil && !(ctx.Err() != nil && errors.Is(err, ctx.Err())) && hard.Err() == nil {
				fail(err)
			}
		}()
	}
	go func() {
		srcWG.Wait()
		close(srcCh)
	}()

	go func() {
		defer close(sinkCh)
		for b := range srcCh {
			if hard.Err() != nil {
				continue // drain so sources are never stuck; nothing more is processed
			}
			if err := p.runSteps(hard, b, batchSize, sum.Steps); err != nil {
				fail(err)
				continue
			}
			select {
			case sinkCh <- b:
			case <-hard.Done():
			}
		}
	}()

	// A batch completes when every sink and the dead-letter output have
	// acknowledged it: its source learns the positions it covered, and the
	// batch goes back to the pool. complete runs on whichever goroutine
	// finishes the last piece of work.
	complete := func(b *batch, err error) {
		if err != nil {
			fail(err)
			return
		}
		if a, ok := p.Sources[b.source].(Acker); ok && len(b.positions) > 0 {
			a.Ack(b.positions)
		}
		pool.put(b)
	}
	// unflushed holds batches written to the synchronous outputs since the
	// last flush; the engine's own count on each is released by the flush.
	var unflushed []*batch
	flush := func() {
		if err := p.flush(); err != nil {
			fail(err)
			return
		}
		for _, b := range unflushed {
			b.ack.Done(nil)
		}
		clear(unflushed)
		unflushed = unflushed[:0]
	}
	for b := range sinkCh {
		if hard.Err() != nil {
			continue
		}
		b.ack.reset(func(err error) { complete(b, err) })
		if err := p.writeBatch(b, sum.Sinks, &sum.DeadLetter); err != nil {
			fail(err)
			continue
		}
		unflushed = append(unflushed, b)
		if len(sinkCh) == 0 {
			flush()
		}
	}
	if hard.Err() == nil {
		flush()
	}

	var errs []error
	closeCtx := context.WithoutCancel(ctx)
	for _, st := range p.Steps {
		if err := st.Op.Close(closeCtx); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range p.Sinks {
		if err := s.Close(); err != nil {
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
	if err := context.Cause(hard); err != nil {
		errs = append([]error{err}, errs...)
	}
	return sum, errors.Join(errs...)
}

// runSteps runs b's records through every step, in chunks of each step's
// batch size, leaving the final records in b.result.
func (p *Pipeline) runSteps(ctx context.Context, b *batch, batchSize int, counts []Counts) error {
	recs := b.records
	for j, st := range p.Steps {
		out := &b.stages[j]
		size := st.BatchSize
		if size <= 0 {
			size = batchSize
		}
		for start := 0; start < len(recs); start += size {
			end := min(start+size, len(recs))
			if err := st.Op.Process(ctx, recs[start:end], out); err != nil {
				return fmt.Errorf("operator %q: %w", st.Op.Name(), err)
			}
		}
		c := &counts[j]
		c.Name = st.Op.Name()
		c.In += int64(len(recs))
		c.Out += int64(len(out.Records))
		c.Dead += int64(len(out.Dead))
		b.dead = append(b.dead, out.Dead...)
		recs = out.Records
	}
	b.result = recs
	return nil
}

// writeBatch gives b's result to every sink and its dead letters to the
// dead-letter output.
func (p *Pipeline) writeBatch(b *batch, counts []Counts, deadCount *int64) error {
	for i, s := range p.Sinks {
		before := len(b.dead)
		var err error
		b.dead, err = s.Write(b.result, b.dead, &b.ack)
		if err != nil {
			return err
		}
		rejected := int64(len(b.dead) - before)
		c := &counts[i]
		c.Name = s.Name()
		c.In += int64(len(b.result))
		c.Out += int64(len(b.result)) - rejected
		c.Dead += rejected
	}
	if p.DeadLetter == nil {
		if len(b.dead) > 0 {
			return fmt.Errorf("%d records failed and there is no dead-letter output: %s", len(b.dead), b.dead[0].Reason)
		}
		return nil
	}
	for i := range b.dead {
		if err := p.DeadLetter.Write(&b.dead[i], &b.ack); err != nil {
			return err
		}
		*deadCount++
	}
	return nil
}

func (p *Pipeline) flush() error {
	for _, s := range p.Sinks {
		if err := s.Flush(); err != nil {
			return err
		}
	}
	if p.DeadLetter != nil {
		return p.DeadLetter.Flush()
	}
	return nil
}
