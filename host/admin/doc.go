// Package admin is weir's admin HTTP server: health and readiness probes,
// Prometheus metrics, and a JSON API to read the registered pipelines'
// topology, stats and state and to reload or promote their plugins. Start
// it, Register the pipelines it reports on, and Close it after they end;
// Server documents the endpoints and how requests are checked.
//
// It reads pipelines only through the public methods of *host.Pipeline
// that are safe while a pipeline runs. PipelineInfo and StageInfo are the
// JSON answers of GET /api/pipeline; PipelineV1, StatsV1 and StageStatsV1
// those of the version 1 API under /api/v1, in snake_case throughout
// (docs/admin-api.md). The web console at / is package console's page,
// reading the version 1 API.
package admin
