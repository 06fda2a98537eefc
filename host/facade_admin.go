package host

import (
	"github.com/prometheus/client_golang/prometheus"
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
