package console

import (
	"cmp"
	"slices"
	"time"

	"github.com/weir-stream/weir/host"
)

// View is one pipeline as the console shows it, the JSON answer of GET
// /api/v1/pipelines/{name}/console. Rates are per second over the last
// second or so; counts are since the process started. It is a plain
// value.
type View struct {
	Pipeline string `json:"pipeline"`
	File     string `json:"file"`
	State    string `json:"state"`
	NowMs    int64  `json:"now_ms"`
	// WatermarkMs is the pipeline's watermark, the least over its
	// sources, and WatermarkLagSeconds the wall clock less it.
	WatermarkMs         *int64     `json:"watermark_ms"`
	WatermarkLagSeconds *float64   `json:"watermark_lag_seconds"`
	ConsumerLag         *int64     `json:"consumer_lag"`
	DeadLettersTotal    int64      `json:"dead_letters_total"`
	Nodes               []Node     `json:"nodes"`
	Edges               []Edge     `json:"edges"`
	Partitions          Partitions `json:"partitions"`
	// Checkpoints are the last ones, oldest first, of CheckpointsTotal.
	Checkpoints      []host.CheckpointRecord `json:"checkpoints"`
	CheckpointsTotal int64                   `json:"checkpoints_total"`
	Restore          *host.RestoreStats      `json:"restore"`
	Tasks            []int32                 `json:"tasks"`
	// DeadLetters are the last ones written, oldest first.
	DeadLetters []host.DeadLetterSample      `json:"dead_letters"`
	Plugins     []host.PluginStatus          `json:"plugins"`
	SinkSamples map[string][]host.SinkSample `json:"sink_samples"`
}

// Node is one node of the pipeline's graph: a source, an operator, a sink
// or the dead-letter output, with its layer in the graph's layout (0 for
// the sources; the dead-letter output is in the sinks'). Backpressure is the share of the last second the stage
// waited for room downstream (nil for a sink and the dead-letter output);
// batch times are of an operator's calls. It is a plain value.
type Node struct {
	ID              string   `json:"id"`
	Stage           string   `json:"stage"`
	Name            string   `json:"name"`
	Type            string   `json:"type"`
	Plugin          string   `json:"plugin,omitempty"`
	Version         int      `json:"version,omitempty"`
	Layer           int      `json:"layer"`
	In              int64    `json:"in"`
	Out             int64    `json:"out"`
	Dead            int64    `json:"dead"`
	InPerSecond     float64  `json:"in_per_second"`
	OutPerSecond    float64  `json:"out_per_second"`
	DeadPerSecond   float64  `json:"dead_per_second"`
	Backpressure    *float64 `json:"backpressure"`
	BatchP50Seconds *float64 `json:"batch_p50_seconds"`
	BatchP99Seconds *float64 `json:"batch_p99_seconds"`
}

// Edge joins two nodes by ID; Dead marks the way to the dead-letter
// output. It is a plain value.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
	Dead bool   `json:"dead,omitempty"`
}

// maxPartitionRows caps the partitions a View lists, the furthest behind
// first, so that a page of a thousand partitions stays light.
const maxPartitionRows = 100

// Partitions are the event-time sources' partitions: how many, how many
// idle, the least watermark, and the Rows furthest behind. It is a plain
// value.
type Partitions struct {
	Total          int                    `json:"total"`
	Idle           int                    `json:"idle"`
	MinWatermarkMs *int64                 `json:"min_watermark_ms"`
	Rows           []host.PartitionStatus `json:"rows"`
}

// deadLetterID is the node ID of the dead-letter output.
const deadLetterID = "dead_letter"

// View returns p as the console shows it now. Rates are worked out from
// the counts of the call at least a second before, or shared with a
// call less than a second before (another tab); the first call's are 0.
func (v *Views) View(p *host.Pipeline) View {
	now := time.Now()
	st, live := p.Stats(), p.Live()
	s := v.rates(p.Name(), now, st, live.Flows)
	out := View{Pipeline: p.Name(), File: p.File(), State: st.State, NowMs: now.UnixMilli(), WatermarkMs: st.Watermark,
		ConsumerLag: st.ConsumerLag, DeadLettersTotal: st.DeadLetter, Checkpoints: nonNil(live.Checkpoints),
		CheckpointsTotal: st.Checkpoints, Restore: st.Restore, Tasks: st.Tasks, DeadLetters: nonNil(live.DeadLetters),
		Plugins: nonNil(p.Plugins()), SinkSamples: live.SinkSamples}
	if st.Watermark != nil {
		lag := float64(now.UnixMilli()-*st.Watermark) / 1000
		out.WatermarkLagSeconds = &lag
	}
	out.Nodes, out.Edges = graph(p, st, s.rates, out.Plugins)
	out.Partitions = partitions(live.Partitions)
	return out
}

// rates returns the pipeline's latest sample, taking a new one when the
// last is older than minInterval.
func (v *Views) rates(name string, now time.Time, st host.Stats, flows []host.StageFlow) *sample {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.last == nil {
		v.last = map[string]*sample{}
	}
	prev := v.last[name]
	if prev != nil && now.Sub(prev.at) < minInterval {
		return prev
	}
	s := &sample{at: now, stats: st, flows: flows, rates: make([]nodeRates, len(st.Stages))}
	if prev == nil || len(prev.stats.Stages) != len(st.Stages) {
		// No rates yet; batch times over the run so far.
		prev = &sample{at: now, stats: st}
	}
	dt := max(now.Sub(prev.at).Seconds(), 1e-3)
	for i, c := range st.Stages {
		s.rates[i] = stageRates(c, prev.stats.Stages[i], flowAt(flows, i), flowAt(prev.flows, i), dt)
	}
	v.last[name] = s
	return s
}

func flowAt(flows []host.StageFlow, i int) *host.StageFlow {
	if i < len(flows) {
		return &flows[i]
	}
	return nil
}

// stageRates works out a stage's rates over dt seconds, from c and f now
// and pc and pf then. Counts that went back (a run started again) count
// from zero.
func stageRates(c, pc host.StageCounts, f, pf *host.StageFlow, dt float64) nodeRates {
	if pf == nil { // the first sample: nothing to take away
		pf = &host.StageFlow{}
	}
	per := func(now, then int64) float64 {
		if now < then {
			then = 0
		}
		return float64(now-then) / dt
	}
	r := nodeRates{in: per(c.In, pc.In), out: per(c.Out, pc.Out), dead: per(c.Dead, pc.Dead)}
	if f == nil {
		return r
	}
	blocked := f.BlockedSeconds - pf.BlockedSeconds
	if blocked < 0 {
		blocked = f.BlockedSeconds
	}
	r.backpressure = min(max(blocked/dt/float64(max(f.Workers, 1)), 0), 1)
	r.p50, r.p99, r.hasLatency = batchTimes(f.BatchNanos, pf.BatchNanos)
	return r
}

// batchTimes returns the p50 and p99 of the batch calls counted in now
// but not then, or of all those in now if none was since (or the counts
// went back: a run started again); ok is false when there are none.
func batchTimes(now, then []int64) (p50, p99 float64, ok bool) {
	if now == nil {
		return 0, 0, false
	}
	window := slices.Clone(now)
	var n int64
	for i := range window {
		if i < len(then) {
			window[i] -= then[i]
		}
		n += window[i]
	}
	if n <= 0 || slices.ContainsFunc(window, func(c int64) bool { return c < 0 }) {
		window = now
	}
	p50, p99 = host.LatencyQuantile(window, 0.5), host.LatencyQuantile(window, 0.99)
	return p50, p99, p99 > 0
}

// graph lays the pipeline out in layers: the sources, each operator in
// file order, the sinks with the dead-letter output below them.
func graph(p *host.Pipeline, st host.Stats, rates []nodeRates, plugins []host.PluginStatus) ([]Node, []Edge) {
	version := map[string]int{}
	for _, ps := range plugins {
		version[ps.Operator] = ps.Version
	}
	var nodes []Node
	var edges []Edge
	var prev []string // the layer before
	layer, last := 0, ""
	for i, spec := range p.Topology() {
		n := Node{ID: spec.Stage + ":" + spec.Name, Stage: spec.Stage, Name: spec.Name, Type: spec.Type, Plugin: spec.Plugin,
			Version: version[spec.Name]}
		if i < len(st.Stages) {
			c := st.Stages[i]
			n.In, n.Out, n.Dead = c.In, c.Out, c.Dead
		}
		if i < len(rates) {
			fill(&n, rates[i])
		}
		if spec.Stage != last && last != "" || spec.Stage == "operator" && last == "operator" {
			layer++
			prev = layerIDs(nodes, layer-1)
		}
		last = spec.Stage
		n.Layer = layer
		for _, from := range prev {
			edges = append(edges, Edge{From: from, To: n.ID})
		}
		nodes = append(nodes, n)
	}
	dl := Node{ID: deadLetterID, Stage: "dead_letter", Name: "dead letters", Type: "dead_letter", Layer: layer, In: st.DeadLetter}
	for _, n := range nodes {
		if n.Dead > 0 {
			edges = append(edges, Edge{From: n.ID, To: deadLetterID, Dead: true})
			dl.InPerSecond += n.DeadPerSecond
		}
	}
	return append(nodes, dl), edges
}

// fill sets a node's rates.
func fill(n *Node, r nodeRates) {
	n.InPerSecond, n.OutPerSecond, n.DeadPerSecond = r.in, r.out, r.dead
	if n.Stage != "sink" {
		bp := r.backpressure
		n.Backpressure = &bp
	}
	if r.hasLatency {
		p50, p99 := r.p50, r.p99
		n.BatchP50Seconds, n.BatchP99Seconds = &p50, &p99
	}
}

func layerIDs(nodes []Node, layer int) []string {
	var ids []string
	for _, n := range nodes {
		if n.Layer == layer {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

// partitions summarises the partitions, listing those furthest behind.
func partitions(ps []host.PartitionStatus) Partitions {
	out := Partitions{Total: len(ps)}
	for _, p := range ps {
		if p.Idle {
			out.Idle++
			continue
		}
		if p.WatermarkMs != nil && (out.MinWatermarkMs == nil || *p.WatermarkMs < *out.MinWatermarkMs) {
			wm := *p.WatermarkMs
			out.MinWatermarkMs = &wm
		}
	}
	rows := slices.Clone(ps)
	slices.SortStableFunc(rows, func(a, b host.PartitionStatus) int {
		return cmp.Compare(watermarkOf(a), watermarkOf(b))
	})
	out.Rows = nonNil(rows[:min(len(rows), maxPartitionRows)])
	return out
}

// nonNil returns s, or an empty slice for nil: [] in the answer, never null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// watermarkOf orders partitions: none yet first, then the furthest behind.
func watermarkOf(p host.PartitionStatus) int64 {
	if p.WatermarkMs == nil {
		return -1 << 63
	}
	return *p.WatermarkMs
}
