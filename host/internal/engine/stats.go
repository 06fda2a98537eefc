package engine

import (
	"sync/atomic"
	"time"
)

// Observer is told of a run's batches and checkpoints as they happen, to
// feed metrics. Its methods are called from the engine's goroutines,
// concurrently, and must be quick.
type Observer interface {
	// BatchCompleted reports a source batch acknowledged by every output,
	// latency after the dispatcher took it.
	BatchCompleted(latency time.Duration)
	// CheckpointTaken reports a completed checkpoint and how long the
	// pipeline was paused for it, from the barrier request to the resume.
	CheckpointTaken(epoch uint64, took time.Duration)
}

// Stats are a run's counts so far, and where event time and checkpoints
// stand. Stage counts lag the truth by the batches in flight. Each Stats is
// a copy the caller owns, its counts read one by one while the run goes on.
type Stats struct {
	Summary
	// Running is false before Run starts and after it returns.
	Running bool
	// Watermark is the last watermark sent to the operators, or
	// NoWatermark.
	Watermark int64
	// Checkpoints counts the checkpoints taken; LastCheckpoint is the
	// epoch of the last one, and LastCheckpointPause its pause.
	Checkpoints         int64
	LastCheckpoint      uint64
	LastCheckpointPause time.Duration
	// StepLatency holds, by step, how long its Process calls took (see
	// Latency), summed over workers.
	StepLatency []Latency
}

// liveCounts are one stage's counts, added to while the run goes, and
// the time it spent blocked on the stage after it (runner.send).
type liveCounts struct{ in, out, dead, blocked atomic.Int64 }

func (c *liveCounts) add(in, out, dead int) {
	c.in.Add(int64(in))
	c.out.Add(int64(out))
	c.dead.Add(int64(dead))
}

func (c *liveCounts) counts(name string) Counts {
	// Out and Dead before In, so that they never show more than came in.
	out, dead := c.out.Load(), c.dead.Load()
	return Counts{Name: name, In: c.in.Load(), Out: out, Dead: dead, Blocked: time.Duration(c.blocked.Load())}
}

// runStats are the counters of one run.
type runStats struct {
	sources, steps, sinks []liveCounts
	stepLatency           []liveLatency // by step
	tap                   Tap           // the Observer, when it is one
	partitions            atomic.Pointer[[]PartitionStats]
	watched               atomic.Int64 // until when (Unix nanoseconds) Partitions was last asked for
	deadLetters           atomic.Int64
	watermark             atomic.Int64
	checkpoints           atomic.Int64
	lastEpoch             atomic.Uint64
	lastPause             atomic.Int64
	running               atomic.Bool
}

func newRunStats(p *Pipeline) *runStats {
	st := &runStats{
		sources:     make([]liveCounts, len(p.Sources)),
		steps:       make([]liveCounts, len(p.Steps)),
		sinks:       make([]liveCounts, len(p.Sinks)),
		stepLatency: make([]liveLatency, len(p.Steps)),
	}
	st.tap, _ = p.Observer.(Tap)
	st.watermark.Store(NoWatermark)
	return st
}

// summary returns the counts as a Summary.
//
// It reads the counts downstream first, sinks before the last step and the
// first step before the sources, so that a snapshot taken while records
// flow never shows a stage ahead of the one before it.
func (st *runStats) summary(p *Pipeline) Summary {
	sum := Summary{DeadLetter: st.deadLetters.Load(),
		Sources: make([]Counts, len(p.Sources)), Steps: make([]Counts, len(p.Steps)), Sinks: make([]Counts, len(p.Sinks))}
	for i, s := range p.Sinks {
		sum.Sinks[i] = st.sinks[i].counts(s.Name())
	}
	for i := len(p.Steps) - 1; i >= 0; i-- {
		sum.Steps[i] = st.steps[i].counts(p.Steps[i].Name)
	}
	for i, s := range p.Sources {
		sum.Sources[i] = st.sources[i].counts(s.Name())
	}
	return sum
}

// Stats returns the current or last run's counts. It may be called from
// any goroutine, at any time, also while Run runs.
func (p *Pipeline) Stats() Stats {
	st := p.stats.Load()
	if st == nil {
		return Stats{Watermark: NoWatermark}
	}
	return Stats{
		Summary:             st.summary(p),
		Running:             st.running.Load(),
		Watermark:           st.watermark.Load(),
		Checkpoints:         st.checkpoints.Load(),
		LastCheckpoint:      st.lastEpoch.Load(),
		LastCheckpointPause: time.Duration(st.lastPause.Load()),
		StepLatency:         st.latencies(),
	}
}
