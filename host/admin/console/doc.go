// Package console is weir's web console: a page, served by the admin
// server at /, that shows each registered pipeline live, as a graph of
// its sources, operators, sinks and dead-letter output with their rates,
// errors, batch times and backpressure, beside its partitions, watermark,
// checkpoints, restores, dead letters, plugins and the records its sinks
// write, with buttons to reload and promote plugins and a box to look up
// state by key.
//
// The page is hand-written HTML, CSS and JavaScript, embedded in the
// binary (Assets): no build step and nothing fetched from elsewhere. It
// polls the admin API about once a second for a View of its pipeline
// (Views.View, at GET /api/v1/pipelines/{name}/console), and drives the
// plugins through the API's own reload and promote routes, under the
// same Host, CSRF and token checks as any other client.
package console
