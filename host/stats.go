package host

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/kafka"
)

// Stats are a pipeline's live counts and positions. It is a plain value.
type Stats struct {
	// State is "loaded" before Run, "standby" while it waits for
	// another instance to leave its consumer group, "running", then
	// "finished" or "failed".
	State  string        `json:"state"`
	Stages []StageCounts `json:"stages"`
	// DeadLetter counts the dead letters written.
	DeadLetter int64 `json:"dead_letters"`
	// Watermark is the event-time watermark the operators were last
	// given, in epoch milliseconds; absent (nil) before the first.
	Watermark *int64 `json:"watermark_ms,omitempty"`
	// ConsumerLag is the Kafka sources' records not yet polled; nil
	// (null) while it is unknown: a source holds no partition yet.
	ConsumerLag *int64 `json:"consumer_lag"`
	// Checkpoints taken in this run, the last one's epoch, and the pause
	// it cost.
	Checkpoints         int64   `json:"checkpoints"`
	LastCheckpoint      uint64  `json:"last_checkpoint,omitempty"`
	LastCheckpointPause float64 `json:"last_checkpoint_pause_seconds,omitempty"`
	// Restore is how far the state's last restore from the changelog came
	// (or, while State is "restoring", or "running" and Left is not 0,
	// has come: a running pipeline catches up with tasks it was given
	// beside its own); nil if the pipeline has not restored any.
	Restore *RestoreStats `json:"restore,omitempty"`
	// Tasks are the tasks (input partitions) this instance's run owns,
	// when the pipeline's instances share its consumer group by task;
	// nil otherwise.
	Tasks []int32 `json:"tasks,omitempty"`
	// Repartition says how the run sends its key_by's records to the
	// keyed state after it, when its instances share that state by
	// task: "topic", through the repartition topic, or "in_process",
	// while this instance owns every task; "" otherwise.
	Repartition string `json:"repartition,omitempty"`
}

// The values of Stats.Repartition.
const (
	RepartitionTopic     = "topic"
	RepartitionInProcess = "in_process"
)

// RestoreStats is how far a restore of the state from the changelog is:
// per task (changelog partition), the changelog records replayed and left
// (counted in offsets, so a transaction marker counts as one), with their
// totals, the seconds it has taken and an estimate of those left. It is a
// plain value.
type RestoreStats struct {
	Tasks      []TaskRestore `json:"tasks"`
	Replayed   int64         `json:"replayed"`
	Left       int64         `json:"left"`
	Seconds    float64       `json:"seconds"`
	EtaSeconds float64       `json:"eta_seconds"`
}

// TaskRestore is one task's part of a RestoreStats.
type TaskRestore struct {
	Task     int   `json:"task"`
	Replayed int64 `json:"replayed"`
	Left     int64 `json:"left"`
}

// onRestore records a restore's progress; while records are left, the
// pipeline is restoring, unless it is running (catching up with tasks it
// was given).
func (p *Pipeline) onRestore(pr kafka.ReplayProgress) {
	rs := &RestoreStats{Seconds: pr.Elapsed.Seconds(), EtaSeconds: pr.ETA().Seconds()}
	for i, t := range pr.Tasks {
		rs.Tasks = append(rs.Tasks, TaskRestore{Task: i, Replayed: t.Replayed, Left: t.Left})
	}
	rs.Replayed, rs.Left = pr.Totals()
	p.restore.Store(rs)
	if rs.Left > 0 && p.runState.Load() != StateRunning {
		// A running pipeline catching up with tasks it was given
		// restores them beside its own, which keep running.
		p.runState.Store(StateRestoring)
	}
}

// Pipeline run states.
const (
	StateLoaded  = "loaded"
	StateRunning = "running"
	// StateStandby: a pipeline with state waits for another instance in
	// its consumer group to leave (see Pipeline.Run).
	StateStandby = "standby"
	// StateRestoring: the pipeline's state is being restored from its
	// changelog before the run reads a record (see Stats.Restore).
	StateRestoring = "restoring"
	StateFinished  = "finished"
	StateFailed    = "failed"
)

// runInfo is what a pipeline knows about its current run, for Stats and
// the admin server; it is published atomically by Run.
type runInfo struct {
	ep      *engine.Pipeline
	sources []*kafka.Source
	// before are the counts of the runs before this one in the same Run
	// (a run started again in process), which the counters include.
	before Summary
	tasks  *kafka.Tasks // the run's, when it shares its group by task
	repart string       // Stats.Repartition
}

// Stats returns the pipeline's live counts. It is safe to call from any
// goroutine, during and after Run.
func (p *Pipeline) Stats() Stats {
	st := Stats{State: p.state(), Restore: p.restore.Load()}
	ri := p.run.Load()
	if ri == nil {
		return st
	}
	es := ri.ep.Stats()
	total := Summary{Stages: slices.Clone(ri.before.Stages), DeadLetter: ri.before.DeadLetter}
	total.add(Summary{Stages: p.stageCounts(es.Summary), DeadLetter: es.DeadLetter})
	st.Stages, st.DeadLetter = total.Stages, total.DeadLetter
	if es.Watermark != engine.NoWatermark && es.Watermark != math.MaxInt64 {
		wm := es.Watermark
		st.Watermark = &wm
	}
	st.ConsumerLag = consumerLag(ri.sources)
	if ri.tasks != nil {
		st.Tasks = slices.Clone(ri.tasks.Begun())
		if st.Tasks == nil {
			st.Tasks = []int32{}
		}
	}
	st.Repartition = ri.repart
	st.Checkpoints, st.LastCheckpoint = es.Checkpoints, es.LastCheckpoint
	st.LastCheckpointPause = es.LastCheckpointPause.Seconds()
	return st
}

// stageCounts names an engine summary's counts after the pipeline file.
func (p *Pipeline) stageCounts(es engine.Summary) []StageCounts {
	var out []StageCounts
	for _, c := range es.Sources {
		out = append(out, StageCounts{Stage: "source", Name: c.Name, Out: c.Out, Dead: c.Dead})
	}
	for i, c := range es.Steps {
		out = append(out, StageCounts{Stage: "operator", Name: p.cfg.Operators[i].Name, In: c.In, Out: c.Out, Dead: c.Dead})
	}
	for _, c := range es.Sinks {
		out = append(out, StageCounts{Stage: "sink", Name: c.Name, In: c.In, Out: c.Out, Dead: c.Dead})
	}
	return out
}

func (p *Pipeline) state() string {
	if s, _ := p.runState.Load().(string); s != "" {
		return s
	}
	return StateLoaded
}

// pipelineMetrics are a pipeline's Prometheus metrics: histograms fed as
// things happen, and counters and gauges read from Stats when scraped
// (collect). Its histograms are safe for concurrent use; onSwap is set
// before the pipeline runs.
type pipelineMetrics struct {
	p            *Pipeline
	batchLatency prometheus.Histogram
	checkpoint   prometheus.Histogram
	udfCall      *prometheus.HistogramVec
	swapPause    prometheus.Histogram
	limitHits    *prometheus.CounterVec
	// onSwap, when set (tests, benchmarks), also gets each swap's pause.
	onSwap func(time.Duration)
	// tap keeps what the admin console shows of the run's outputs and
	// checkpoints (facade_admin.go).
	tap liveTap
}

func newPipelineMetrics(p *Pipeline) *pipelineMetrics {
	labels := prometheus.Labels{"pipeline": p.cfg.Name}
	return &pipelineMetrics{
		p: p,
		batchLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "weir_batch_latency_seconds", ConstLabels: labels,
			Help:    "Time from a source batch entering the pipeline to every output acknowledging it.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}),
		checkpoint: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "weir_checkpoint_pause_seconds", ConstLabels: labels,
			Help:    "How long each checkpoint paused the sources: barrier, drain, commit.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		swapPause: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "weir_plugin_swap_seconds", ConstLabels: labels,
			Help:    "Per operator instance, from noticing a new plugin version to finishing its first batch with it.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 16),
		}),
		udfCall: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "weir_udf_call_seconds", ConstLabels: labels,
			Help:    "Duration of each plugin batch call, per operator.",
			Buckets: prometheus.ExponentialBuckets(0.00001, 2, 18),
		}, []string{"operator"}),
		limitHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weir_plugin_limit_hits_total", ConstLabels: labels,
			Help: "Plugin calls that hit a sandbox bound, by its config key: timeout, memory_limit_pages, max_state_value, max_batch_state, max_batch_output.",
		}, []string{"operator", "limit"}),
	}
}

// BatchCompleted implements engine.Observer.
func (m *pipelineMetrics) BatchCompleted(d time.Duration) { m.batchLatency.Observe(d.Seconds()) }

// CheckpointTaken implements engine.Observer.
func (m *pipelineMetrics) CheckpointTaken(epoch uint64, d time.Duration) {
	m.checkpoint.Observe(d.Seconds())
	m.tap.checkpointed(m.p, epoch, d, "")
}

// PluginSwapped implements operator.Metrics.
func (m *pipelineMetrics) PluginSwapped(d time.Duration) {
	m.swapPause.Observe(d.Seconds())
	if m.onSwap != nil {
		m.onSwap(d)
	}
}

// PluginLimit implements operator.Metrics.
func (m *pipelineMetrics) PluginLimit(operator string) func(string) {
	return func(limit string) { m.limitHits.WithLabelValues(operator, limit).Inc() }
}

// PluginCall implements operator.Metrics.
func (m *pipelineMetrics) PluginCall(operator string) func(time.Duration) {
	h := m.udfCall.WithLabelValues(operator)
	return func(d time.Duration) { h.Observe(d.Seconds()) }
}

var (
	descIn = prometheus.NewDesc("weir_records_in_total", "Records given to a stage.",
		[]string{"pipeline", "stage", "name"}, nil)
	descOut = prometheus.NewDesc("weir_records_out_total", "Records a stage read (source), passed on (operator) or wrote (sink).",
		[]string{"pipeline", "stage", "name"}, nil)
	descDead = prometheus.NewDesc("weir_records_dead_total", "Records a stage sent to the dead-letter output.",
		[]string{"pipeline", "stage", "name"}, nil)
	descBlocked = prometheus.NewDesc("weir_stage_blocked_seconds_total", "Time a stage waited for room in the queue of the stage after it: its backpressure.",
		[]string{"pipeline", "stage", "name"}, nil)
	descDeadLetters = prometheus.NewDesc("weir_dead_letters_total", "Dead letters written.", []string{"pipeline"}, nil)
	descRunning     = prometheus.NewDesc("weir_pipeline_running", "1 while the pipeline runs.", []string{"pipeline"}, nil)
	descStandby     = prometheus.NewDesc("weir_pipeline_standby", "1 while the pipeline waits as a standby for another instance to leave its consumer group.", []string{"pipeline"}, nil)
	descWatermark   = prometheus.NewDesc("weir_watermark_lag_seconds", "Wall clock minus the event-time watermark.", []string{"pipeline"}, nil)
	descLag         = prometheus.NewDesc("weir_consumer_lag_records", "Kafka records not yet polled, over the pipeline's Kafka sources.", []string{"pipeline"}, nil)
	descCheckpoints = prometheus.NewDesc("weir_checkpoints_total", "Checkpoints taken in this run.", []string{"pipeline"}, nil)
	descInProcess   = prometheus.NewDesc("weir_repartition_in_process", "1 while the run routes its key_by's records in process, owning every task; 0 while they go through the repartition topic.", []string{"pipeline"}, nil)
	descRestoring   = prometheus.NewDesc("weir_pipeline_restoring", "1 while the pipeline restores its state from the changelog.", []string{"pipeline"}, nil)
	descRestoreDone = prometheus.NewDesc("weir_restore_records_replayed", "Changelog records the last restore replayed, by task (changelog partition).",
		[]string{"pipeline", "task"}, nil)
	descRestoreLeft = prometheus.NewDesc("weir_restore_records_left", "Changelog records the last restore has left to replay, by task (changelog partition).",
		[]string{"pipeline", "task"}, nil)
	descPlugin = prometheus.NewDesc("weir_plugin_info", "The live version of each plugin operator (always 1).",
		[]string{"pipeline", "operator", "version", "sha256"}, nil)
	descShadowRecords  = prometheus.NewDesc("weir_shadow_records_total", "Records a shadow plugin was given.", []string{"pipeline", "operator"}, nil)
	descShadowDiverged = prometheus.NewDesc("weir_shadow_diverged_total", "Outputs where a shadow plugin and the live one differed.", []string{"pipeline", "operator"}, nil)
	descReloads        = prometheus.NewDesc("weir_plugin_reloads_total", "Plugin reloads, by outcome: swapped, failed (the old version went on) or rolled_back.",
		[]string{"pipeline", "operator", "outcome"}, nil)
)

// collect sends the pipeline's metrics, reading the live stats. The admin
// server's collector calls it (Pipeline.Collector) for every pipeline:
// every sample carries the pipeline's name (a label, or the histograms'
// const label), so several pipelines' metrics never collide.
func (m *pipelineMetrics) collect(ch chan<- prometheus.Metric) {
	name := m.p.cfg.Name
	st := m.p.Stats()
	for _, s := range st.Stages {
		if s.Stage != "source" {
			ch <- prometheus.MustNewConstMetric(descIn, prometheus.CounterValue, float64(s.In), name, s.Stage, s.Name)
		}
		ch <- prometheus.MustNewConstMetric(descOut, prometheus.CounterValue, float64(s.Out), name, s.Stage, s.Name)
		ch <- prometheus.MustNewConstMetric(descDead, prometheus.CounterValue, float64(s.Dead), name, s.Stage, s.Name)
	}
	for _, f := range m.p.flows() {
		if f.Stage != "sink" {
			ch <- prometheus.MustNewConstMetric(descBlocked, prometheus.CounterValue, f.BlockedSeconds, name, f.Stage, f.Name)
		}
	}
	ch <- prometheus.MustNewConstMetric(descDeadLetters, prometheus.CounterValue, float64(st.DeadLetter), name)
	running := 0.0
	if st.State == StateRunning {
		running = 1
	}
	ch <- prometheus.MustNewConstMetric(descRunning, prometheus.GaugeValue, running, name)
	standby := 0.0
	if st.State == StateStandby {
		standby = 1
	}
	ch <- prometheus.MustNewConstMetric(descStandby, prometheus.GaugeValue, standby, name)
	if st.Watermark != nil {
		lag := float64(time.Now().UnixMilli()-*st.Watermark) / 1000
		ch <- prometheus.MustNewConstMetric(descWatermark, prometheus.GaugeValue, lag, name)
	}
	if st.ConsumerLag != nil {
		ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(*st.ConsumerLag), name)
	}
	ch <- prometheus.MustNewConstMetric(descCheckpoints, prometheus.CounterValue, float64(st.Checkpoints), name)
	if st.Repartition != "" {
		in := 0.0
		if st.Repartition == RepartitionInProcess {
			in = 1
		}
		ch <- prometheus.MustNewConstMetric(descInProcess, prometheus.GaugeValue, in, name)
	}
	m.collectRestore(ch, st)
	for _, ps := range m.p.Plugins() {
		ch <- prometheus.MustNewConstMetric(descPlugin, prometheus.GaugeValue, 1, name, ps.Operator, strconv.Itoa(ps.Version), ps.SHA256)
		ch <- prometheus.MustNewConstMetric(descReloads, prometheus.CounterValue, float64(ps.Reloads), name, ps.Operator, "swapped")
		ch <- prometheus.MustNewConstMetric(descReloads, prometheus.CounterValue, float64(ps.Failures), name, ps.Operator, "failed")
		ch <- prometheus.MustNewConstMetric(descReloads, prometheus.CounterValue, float64(ps.Rollbacks), name, ps.Operator, "rolled_back")
		if sh := ps.Shadow; sh != nil {
			ch <- prometheus.MustNewConstMetric(descShadowRecords, prometheus.CounterValue, float64(sh.Records), name, ps.Operator)
			ch <- prometheus.MustNewConstMetric(descShadowDiverged, prometheus.CounterValue, float64(sh.Diverged), name, ps.Operator)
		}
	}
	m.batchLatency.Collect(ch)
	m.checkpoint.Collect(ch)
	m.udfCall.Collect(ch)
	m.swapPause.Collect(ch)
	m.limitHits.Collect(ch)
}

// collectRestore sends the restore's metrics.
func (m *pipelineMetrics) collectRestore(ch chan<- prometheus.Metric, st Stats) {
	name := m.p.cfg.Name
	restoring := 0.0
	if st.State == StateRestoring {
		restoring = 1
	}
	ch <- prometheus.MustNewConstMetric(descRestoring, prometheus.GaugeValue, restoring, name)
	if st.Restore == nil {
		return
	}
	for _, t := range st.Restore.Tasks {
		task := strconv.Itoa(t.Task)
		ch <- prometheus.MustNewConstMetric(descRestoreDone, prometheus.GaugeValue, float64(t.Replayed), name, task)
		ch <- prometheus.MustNewConstMetric(descRestoreLeft, prometheus.GaugeValue, float64(t.Left), name, task)
	}
}
