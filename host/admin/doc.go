// Package admin is weir's admin HTTP server: health and readiness probes,
// Prometheus metrics, and a JSON API to read the registered pipelines'
// topology, stats and state and to reload or promote their plugins. Start
// it, Register the pipelines it reports on, and Close it after they end;
// Server documents the endpoints and how requests are checked.
//
// It reads pipelines only through the public methods of *host.Pipeline
// that are safe while a pipeline runs. PipelineInfo and StageInfo are the
// JSON answers of GET /api/pipeline.
package admin
