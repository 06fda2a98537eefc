package host

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weir-stream/weir/host/internal/checkpoint"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/kafka"
	"github.com/weir-stream/weir/host/internal/record"
)

// What a server reporting on pipelines (package admin) reads of one beyond
// Name, Stats, Plugins, Reload, Promote and QueryState: the pipeline file's
// stages and the pipeline's Prometheus metrics.

// StageSpec is one stage of a pipeline as its file declares it. It is a
// plain value.
type StageSpec struct {
	Stage string // "source", "operator" or "sink", as in StageCounts
	Name  string
	Type  string // its type in the file: stdin, kafka, map, window, stdout, …
	// Plugin is the plugin of a plugin operator, or of a window that
	// aggregates with one; "" for every other stage.
	Plugin string
}

// File returns the path of the pipeline's file. It is safe from any
// goroutine, at any time.
func (p *Pipeline) File() string { return p.cfg.File }

// Topology returns the pipeline's stages as its file declares them: the
// sources, the operators, then the sinks, each in file order. It reads only
// what Load validated, so it is safe from any goroutine, at any time; the
// slice is the caller's.
func (p *Pipeline) Topology() []StageSpec {
	c := p.cfg
	var out []StageSpec
	for _, s := range c.Sources {
		out = append(out, StageSpec{Stage: "source", Name: s.Name, Type: string(s.Type)})
	}
	for _, op := range c.Operators {
		out = append(out, StageSpec{Stage: "operator", Name: op.Name, Type: string(op.Type), Plugin: op.Plugin})
	}
	for _, s := range c.Sinks {
		out = append(out, StageSpec{Stage: "sink", Name: s.Name, Type: string(s.Type)})
	}
	return out
}

// Collector returns a Prometheus collector of the pipeline's metrics: the
// record counters and state gauges, read from Stats at each scrape, and the
// latency histograms the pipeline feeds as it runs. Every sample carries
// the pipeline's name (a "pipeline" label), so the collectors of pipelines
// with different names can share a registry. It describes nothing (an
// unchecked collector): the registry checks the samples at each scrape
// instead. It is safe for concurrent use, during and after Run, for the
// pipeline's lifetime.
func (p *Pipeline) Collector() prometheus.Collector { return metricsCollector{p.metrics} }

// metricsCollector is the prometheus.Collector of Pipeline.Collector.
type metricsCollector struct{ m *pipelineMetrics }

// Describe implements prometheus.Collector: it describes nothing.
func (metricsCollector) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (c metricsCollector) Collect(ch chan<- prometheus.Metric) { c.m.collect(ch) }

// What the admin console shows beyond Stats: each stage's flow
// (backpressure and batch times), the partitions of the event-time
// sources, the last checkpoints, dead letters and sink records.

// liveKeep is how many checkpoints, dead letters and records of each sink
// a pipeline keeps for the console.
const liveKeep = 20

// sampleWatch is how long after a call of Live the sinks' records are
// sampled; they cost nothing while nobody looks.
const sampleWatch = 10 * time.Second

// maxSampleBytes cuts each sampled value and key.
const maxSampleBytes = 1024

// StageFlow is how records flow through one stage, as the stages of
// Topology: the time it has waited for room downstream (backpressure; a
// sink waits for nothing) and, for an operator, how long its batch calls
// took, counted in buckets (see LatencyQuantile). It is a plain value.
type StageFlow struct {
	Stage, Name    string
	BlockedSeconds float64
	// Workers is how many goroutines run the stage, over which
	// BlockedSeconds is summed: the engine's parallelism for an
	// operator, 1 for a source or sink.
	Workers int
	// BatchNanos counts the operator's batch calls by duration: entry i
	// those that took [2^(i-1), 2^i) nanoseconds. Nil for other stages.
	BatchNanos []int64
}

// LatencyQuantile returns the upper bound, in seconds, of the bucket of
// counts (as StageFlow.BatchNanos) that holds quantile q, or 0 when the
// counts are empty.
func LatencyQuantile(counts []int64, q float64) float64 {
	var l engine.Latency
	copy(l[:], counts)
	return l.Quantile(q).Seconds()
}

// PartitionStatus is where one partition of an event-time source stands:
// the offset of its last record read, its watermark in epoch milliseconds
// (nil before its first record) and whether it is idle. It is a plain
// value.
type PartitionStatus struct {
	Source      string `json:"source"`
	Topic       string `json:"topic,omitempty"`
	Partition   int32  `json:"partition"`
	Offset      int64  `json:"offset"`
	WatermarkMs *int64 `json:"watermark_ms"`
	Idle        bool   `json:"idle"`
	// Lag is a Kafka partition's records after the last one polled, as
	// of its last fetch; nil for other sources, or before a fetch.
	Lag *int64 `json:"lag"`
}

// CheckpointRecord is one checkpoint of the run: when it completed, its
// epoch, the pause it cost, the records the sources read since the one
// before, and its outcome ("completed", or "failed" with the error). It
// is a plain value.
type CheckpointRecord struct {
	Epoch        uint64    `json:"epoch"`
	At           time.Time `json:"at"`
	PauseSeconds float64   `json:"pause_seconds"`
	Records      int64     `json:"records"`
	// StateWrites and StateBytes count the state writes of the epoch
	// (keys and values), ChangelogRecords the changes the checkpoint
	// wrote to the changelog.
	StateWrites      int64  `json:"state_writes"`
	StateBytes       int64  `json:"state_bytes"`
	ChangelogRecords int64  `json:"changelog_records"`
	Outcome          string `json:"outcome"`
	Error            string `json:"error,omitempty"`
}

// DeadLetterSample is a dead letter the run wrote: the stage that
// rejected the record, why, where the record came from, and its key and
// value (cut to 1 KiB). It is a plain value.
type DeadLetterSample struct {
	At     time.Time `json:"at"`
	Stage  string    `json:"stage"`
	Reason string    `json:"reason"`
	Origin string    `json:"origin"`
	Key    string    `json:"key,omitempty"`
	Value  string    `json:"value"`
}

// SinkSample is a record a sink wrote, its key and value cut to 1 KiB.
// It is a plain value.
type SinkSample struct {
	Key   string `json:"key,omitempty"`
	Value string `json:"value"`
}

// LiveView is what Live returns; a plain value, the caller's.
type LiveView struct {
	Flows       []StageFlow
	Partitions  []PartitionStatus
	Checkpoints []CheckpointRecord      // oldest first, the last 20
	DeadLetters []DeadLetterSample      // oldest first, the last 20
	SinkSamples map[string][]SinkSample // by sink, oldest first, the last 20 written since sampling began
}

// Live returns what the admin console shows of the current or last run
// beyond Stats. A call starts, or keeps up for ten seconds more, the
// sampling of the sinks' records and the tracking of partitions, which
// cost nothing while nobody calls; the first call's view may have none
// yet. It is safe from any goroutine, at any time.
func (p *Pipeline) Live() LiveView {
	t := &p.metrics.tap
	t.watchUntil.Store(time.Now().Add(sampleWatch).UnixNano())
	v := LiveView{Flows: p.flows()}
	if ri := p.run.Load(); ri != nil {
		lags := partitionLags(ri.sources)
		for _, ps := range ri.ep.Partitions() {
			st := PartitionStatus{Source: ps.Source, Topic: ps.Topic, Partition: ps.Partition, Offset: ps.Offset, Idle: ps.Idle}
			if ps.Watermark != engine.NoWatermark {
				wm := ps.Watermark
				st.WatermarkMs = &wm
			}
			if l, ok := lags[topicPartition{ps.Topic, ps.Partition}]; ok {
				st.Lag = &l
			}
			v.Partitions = append(v.Partitions, st)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	v.Checkpoints = slices.Clone(t.checkpoints)
	v.DeadLetters = slices.Clone(t.dead)
	v.SinkSamples = map[string][]SinkSample{}
	for _, s := range p.cfg.Sinks {
		v.SinkSamples[s.Name] = slices.Clone(t.sinks[s.Name])
	}
	return v
}

// flows returns each stage's flow, in Topology's order; nil before Run.
func (p *Pipeline) flows() []StageFlow {
	ri := p.run.Load()
	if ri == nil {
		return nil
	}
	es := ri.ep.Stats()
	var out []StageFlow
	for _, c := range es.Sources {
		out = append(out, StageFlow{Stage: "source", Name: c.Name, BlockedSeconds: c.Blocked.Seconds(), Workers: 1})
	}
	for i, c := range es.Steps {
		f := StageFlow{Stage: "operator", Name: p.cfg.Operators[i].Name, BlockedSeconds: c.Blocked.Seconds(),
			Workers: max(p.cfg.Engine.Parallelism, 1)}
		if i < len(es.StepLatency) {
			f.BatchNanos = slices.Clone(es.StepLatency[i][:])
		}
		out = append(out, f)
	}
	for _, c := range es.Sinks {
		out = append(out, StageFlow{Stage: "sink", Name: c.Name, Workers: 1})
	}
	return out
}

type topicPartition struct {
	topic     string
	partition int32
}

// partitionLags returns the lag of each partition the Kafka sources own.
func partitionLags(sources []*kafka.Source) map[topicPartition]int64 {
	lags := map[topicPartition]int64{}
	for _, s := range sources {
		for _, pl := range s.PartitionLags() {
			lags[topicPartition{pl.Topic, pl.Partition}] = pl.Lag
		}
	}
	return lags
}

// liveTap keeps what Live shows of a run's outputs and checkpoints: it is
// the engine.Tap of the pipeline's metrics, fed by the sink loop and the
// checkpoints, read by Live. It is safe for concurrent use.
type liveTap struct {
	watchUntil  atomic.Int64 // Unix nanoseconds; sample the sinks until then
	mu          sync.Mutex
	checkpoints []CheckpointRecord
	dead        []DeadLetterSample
	sinks       map[string][]SinkSample
	lastRead    int64 // source records at the last checkpoint
	// commit is what the checkpoint being taken wrote, told by the
	// checkpoints before the engine reports the checkpoint taken.
	commit checkpoint.CommitStats
}

// committed notes what a checkpoint wrote, for checkpointed to show.
func (t *liveTap) committed(s checkpoint.CommitStats) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.commit = s
}

// keepLast appends v to s, keeping the last liveKeep.
func keepLast[T any](s []T, v ...T) []T {
	s = append(s, v...)
	if n := len(s) - liveKeep; n > 0 {
		s = append(s[:0], s[n:]...)
	}
	return s
}

func cut(b []byte) string {
	if len(b) > maxSampleBytes {
		return string(b[:maxSampleBytes]) + "…"
	}
	return string(b)
}

// checkpointed notes a checkpoint of p's run.
func (t *liveTap) checkpointed(p *Pipeline, epoch uint64, pause time.Duration, failure string) {
	var read int64
	if ri := p.run.Load(); ri != nil {
		for _, c := range ri.ep.Stats().Sources {
			read += c.Out
		}
	}
	rec := CheckpointRecord{Epoch: epoch, At: time.Now(), PauseSeconds: pause.Seconds(), Outcome: "completed", Error: failure}
	if failure != "" {
		rec.Outcome = "failed"
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.commit; c.Epoch == epoch && failure == "" {
		rec.StateWrites, rec.StateBytes, rec.ChangelogRecords = c.State.Writes, c.State.Bytes, c.ChangelogRecords
		if c.Aborted {
			rec.Outcome = "aborted by a rebalance; redone"
		}
	}
	rec.Records = max(read-t.lastRead, 0)
	t.lastRead = read
	t.checkpoints = keepLast(t.checkpoints, rec)
}

// Sampling implements engine.Tap.
func (m *pipelineMetrics) Sampling() bool { return time.Now().UnixNano() < m.tap.watchUntil.Load() }

// SinkWrote implements engine.Tap.
func (m *pipelineMetrics) SinkWrote(i int, recs []record.Record) {
	if i >= len(m.p.cfg.Sinks) || len(recs) == 0 {
		return
	}
	recs = recs[max(len(recs)-liveKeep, 0):]
	samples := make([]SinkSample, len(recs))
	for j := range recs {
		samples[j] = SinkSample{Key: cut(recs[j].Key), Value: cut(recs[j].Value)}
	}
	name := m.p.cfg.Sinks[i].Name
	t := &m.tap
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sinks == nil {
		t.sinks = map[string][]SinkSample{}
	}
	t.sinks[name] = keepLast(t.sinks[name], samples...)
}

// DeadLettered implements engine.Tap.
func (m *pipelineMetrics) DeadLettered(dl *record.DeadLetter) {
	s := DeadLetterSample{At: time.Now(), Stage: dl.Stage, Reason: dl.Reason, Origin: dl.Record.Origin.String(),
		Key: cut(dl.Record.Key), Value: cut(dl.Record.Value)}
	m.tap.mu.Lock()
	defer m.tap.mu.Unlock()
	m.tap.dead = keepLast(m.tap.dead, s)
}

// CheckpointFailed implements engine.Tap.
func (m *pipelineMetrics) CheckpointFailed(epoch uint64, err error) {
	m.tap.checkpointed(m.p, epoch, 0, err.Error())
}

var _ engine.Tap = (*pipelineMetrics)(nil)
