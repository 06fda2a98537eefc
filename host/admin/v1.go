package admin

import (
	"net/http"

	"github.com/weir-stream/weir/host"
	"github.com/weir-stream/weir/host/admin/console"
)

// The version 1 API, under /api/v1, answers in snake_case throughout
// (docs/admin-api.md). The routes before it, under /api, answer as they
// did, for a release.

// StageStatsV1 is one stage's record counts in the version 1 API. It is a
// plain value.
type StageStatsV1 struct {
	Stage string `json:"stage"` // "source", "operator" or "sink"
	Name  string `json:"name"`
	In    int64  `json:"in"`
	Out   int64  `json:"out"`
	Dead  int64  `json:"dead"`
}

// StatsV1 is host.Stats in the version 1 API, its stages in snake_case.
// It is a plain value.
type StatsV1 struct {
	host.Stats
	Stages []StageStatsV1 `json:"stages"`
}

// PipelineV1 is a pipeline in the version 1 API, GET /api/v1/pipelines:
// its topology, plugins and live stats. It is a plain value.
type PipelineV1 struct {
	Name      string              `json:"name"`
	File      string              `json:"file"`
	Console   string              `json:"console"` // the path of its console page
	Sources   []StageInfo         `json:"sources"`
	Operators []StageInfo         `json:"operators"`
	Sinks     []StageInfo         `json:"sinks"`
	Plugins   []host.PluginStatus `json:"plugins"`
	Stats     StatsV1             `json:"stats"`
}

// pipelineV1 returns the pipeline in the version 1 API.
func pipelineV1(p *host.Pipeline) PipelineV1 {
	info := pipelineInfo(p)
	out := PipelineV1{Name: info.Name, File: info.File, Console: "/pipelines/" + info.Name, Sources: nonNil(info.Sources),
		Operators: nonNil(info.Operators), Sinks: nonNil(info.Sinks), Plugins: nonNil(info.Plugins),
		Stats: StatsV1{Stats: info.Stats, Stages: []StageStatsV1{}}}
	for _, s := range info.Stats.Stages {
		out.Stats.Stages = append(out.Stats.Stages, StageStatsV1{Stage: s.Stage, Name: s.Name, In: s.In, Out: s.Out, Dead: s.Dead})
	}
	return out
}

// nonNil returns s, or an empty slice for nil: [] in the answer, never null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// routesV1 adds the version 1 API and the console's page to mux.
func (a *Server) routesV1(mux *http.ServeMux) {
	mux.Handle("GET /api/v1/pipelines", a.auth(http.HandlerFunc(a.apiV1Pipelines)))
	mux.Handle("GET /api/v1/pipelines/{name}", a.auth(http.HandlerFunc(a.apiV1Pipeline)))
	mux.Handle("GET /api/v1/pipelines/{name}/console", a.auth(http.HandlerFunc(a.apiV1Console)))
	mux.Handle("GET /api/v1/plugins", a.auth(http.HandlerFunc(a.apiPlugins)))
	mux.Handle("POST /api/v1/plugins/reload", a.auth(http.HandlerFunc(a.apiReload)))
	mux.Handle("POST /api/v1/plugins/promote", a.auth(http.HandlerFunc(a.apiPromote)))
	mux.Handle("GET /api/v1/state", a.auth(http.HandlerFunc(a.apiState)))
	// The page and its files hold no data, so they need no token: the
	// page asks for it, and sends it with each API request.
	mux.Handle("GET /{$}", console.Page())
	mux.Handle("GET /pipelines/{name}", console.Page())
	mux.Handle("GET /console/", console.Assets())
}

func (a *Server) apiV1Pipelines(w http.ResponseWriter, _ *http.Request) {
	out := []PipelineV1{}
	for _, p := range a.pipelines() {
		out = append(out, pipelineV1(p))
	}
	writeJSON(w, http.StatusOK, out)
}

// pipeline returns the registered pipeline named name, or nil.
func (a *Server) pipeline(name string) *host.Pipeline {
	for _, p := range a.pipelines() {
		if p.Name() == name {
			return p
		}
	}
	return nil
}

func (a *Server) apiV1Pipeline(w http.ResponseWriter, r *http.Request) {
	p := a.pipeline(r.PathValue("name"))
	if p == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no pipeline named " + r.PathValue("name")})
		return
	}
	writeJSON(w, http.StatusOK, pipelineV1(p))
}

func (a *Server) apiV1Console(w http.ResponseWriter, r *http.Request) {
	p := a.pipeline(r.PathValue("name"))
	if p == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no pipeline named " + r.PathValue("name")})
		return
	}
	writeJSON(w, http.StatusOK, a.views.View(p))
}
