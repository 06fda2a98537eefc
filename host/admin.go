package host

import (
	"context"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/weir-stream/weir/host/internal/config"
)

// AdminOptions configure StartAdmin.
type AdminOptions struct {
	// Listen is host:port. A bare ":port" listens on 127.0.0.1. Listening
	// anywhere but loopback needs a Token.
	Listen string
	// Token, when set, must come as "Authorization: Bearer <token>" on
	// /metrics and /api/*; /healthz and /readyz stay open for probes.
	Token  string
	Logger *slog.Logger
}

// Admin is a weir process's admin HTTP server, for the pipelines
// registered with it:
//
//	GET  /healthz                 200 while the process serves
//	GET  /readyz                  200 once every registered pipeline runs, else 503
//	GET  /metrics                 Prometheus metrics
//	GET  /api/pipeline            each pipeline's topology and live stats, JSON
//	GET  /api/plugins             each plugin operator's live version, JSON
//	POST /api/plugins/reload      reload plugins (?pipeline=NAME&operator=NAME, both optional)
//	POST /api/plugins/promote     promote an operator's shadow plugin (?pipeline=NAME&operator=NAME)
//	GET  /api/state               an operator's state for one record key, read now, JSON
//	                              (?operator=NAME&key=KEY or &key_hex=HEX; &pipeline=NAME with several)
//
// It is safe for concurrent use. Register pipelines before running them;
// Close it after they end.
type Admin struct {
	srv      *http.Server
	ln       net.Listener
	token    string
	log      *slog.Logger
	registry *prometheus.Registry
	mu       sync.Mutex
	pipes    []*Pipeline
	done     chan struct{}
}

// ErrAdminToken is returned by StartAdmin for a non-loopback address
// without a token.
var ErrAdminToken = errors.New("the admin server would be reachable from other machines: set a token, or listen on 127.0.0.1")

// StartAdmin starts the admin server; it refuses to listen beyond
// loopback without a token.
func StartAdmin(opts AdminOptions) (*Admin, error) {
	listen := opts.Listen
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("admin: listen address %q: %w", listen, err)
	}
	if host == "" {
		host = "127.0.0.1"
		listen = net.JoinHostPort(host, port)
	}
	if !isLoopback(host) && opts.Token == "" {
		return nil, fmt.Errorf("admin: %s: %w", listen, ErrAdminToken)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("admin: %w", err)
	}
	a := &Admin{ln: ln, token: opts.Token, log: opts.Logger, registry: prometheus.NewRegistry(), done: make(chan struct{})}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", a.readyz)
	mux.Handle("GET /metrics", a.auth(promhttp.HandlerFor(a.registry, promhttp.HandlerOpts{})))
	mux.Handle("GET /api/pipeline", a.auth(http.HandlerFunc(a.apiPipeline)))
	mux.Handle("GET /api/plugins", a.auth(http.HandlerFunc(a.apiPlugins)))
	mux.Handle("POST /api/plugins/reload", a.auth(http.HandlerFunc(a.apiReload)))
	mux.Handle("POST /api/plugins/promote", a.auth(http.HandlerFunc(a.apiPromote)))
	mux.Handle("GET /api/state", a.auth(http.HandlerFunc(a.apiState)))
	a.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(a.done)
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("admin server stopped", "error", err)
		}
	}()
	a.log.Info("admin server listening", "addr", ln.Addr().String(), "token", a.token != "")
	return a, nil
}

// isLoopback reports whether host names only this machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Addr returns the address the server listens on.
func (a *Admin) Addr() string { return a.ln.Addr().String() }

// Register adds a pipeline to the server's API and metrics. A second
// pipeline with the same name is refused.
func (a *Admin) Register(p *Pipeline) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, q := range a.pipes {
		if q.cfg.Name == p.cfg.Name {
			return fmt.Errorf("admin: a pipeline named %q is already registered", p.cfg.Name)
		}
	}
	if err := a.registry.Register(p.metrics); err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	a.pipes = append(a.pipes, p)
	return nil
}

// Close stops the server.
func (a *Admin) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := a.srv.Shutdown(ctx)
	<-a.done
	return err
}

func (a *Admin) pipelines() []*Pipeline {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*Pipeline(nil), a.pipes...)
}

// auth requires the bearer token, when there is one.
func (a *Admin) auth(h http.Handler) http.Handler {
	if a.token == "" {
		return h
	}
	want := []byte("Bearer " + a.token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="weir"`)
			http.Error(w, "unauthorized: send Authorization: Bearer <token>", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (a *Admin) readyz(w http.ResponseWriter, _ *http.Request) {
	var notReady []string
	pipes := a.pipelines()
	for _, p := range pipes {
		if s := p.state(); s != StateRunning {
			notReady = append(notReady, p.cfg.Name+" is "+s)
		}
	}
	if len(pipes) == 0 {
		notReady = append(notReady, "no pipeline registered")
	}
	if len(notReady) > 0 {
		http.Error(w, strings.Join(notReady, "; "), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

// StageInfo is one stage of a pipeline's topology in the admin API.
type StageInfo struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Plugin string `json:"plugin,omitempty"`
}

// PipelineInfo is a pipeline in the admin API: its topology and stats.
type PipelineInfo struct {
	Name      string         `json:"name"`
	File      string         `json:"file"`
	Sources   []StageInfo    `json:"sources"`
	Operators []StageInfo    `json:"operators"`
	Sinks     []StageInfo    `json:"sinks"`
	Plugins   []PluginStatus `json:"plugins,omitempty"`
	Stats     Stats          `json:"stats"`
}

// Info returns the pipeline's topology with its live stats.
func (p *Pipeline) Info() PipelineInfo {
	c := p.cfg
	info := PipelineInfo{Name: c.Name, File: c.File, Plugins: p.Plugins(), Stats: p.Stats()}
	for _, s := range c.Sources {
		info.Sources = append(info.Sources, StageInfo{Name: s.Name, Type: string(s.Type)})
	}
	for _, op := range c.Operators {
		si := StageInfo{Name: op.Name, Type: string(op.Type)}
		if op.Type.IsPlugin() || (op.Type == config.OperatorWindow && op.Plugin != "") {
			si.Plugin = op.Plugin
		}
		info.Operators = append(info.Operators, si)
	}
	for _, s := range c.Sinks {
		info.Sinks = append(info.Sinks, StageInfo{Name: s.Name, Type: string(s.Type)})
	}
	return info
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func (a *Admin) apiPipeline(w http.ResponseWriter, _ *http.Request) {
	var out []PipelineInfo
	for _, p := range a.pipelines() {
		out = append(out, p.Info())
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *Admin) apiPlugins(w http.ResponseWriter, _ *http.Request) {
	out := map[string][]PluginStatus{}
	for _, p := range a.pipelines() {
		out[p.cfg.Name] = p.Plugins()
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *Admin) apiReload(w http.ResponseWriter, r *http.Request) {
	pipeline, operator := r.URL.Query().Get("pipeline"), r.URL.Query().Get("operator")
	var errs []string
	found := false
	for _, p := range a.pipelines() {
		if pipeline != "" && p.cfg.Name != pipeline {
			continue
		}
		found = true
		if err := p.ReloadPlugins(r.Context(), operator); err != nil {
			errs = append(errs, p.cfg.Name+": "+err.Error())
		}
	}
	switch {
	case !found:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no pipeline named %q", pipeline)})
	case len(errs) > 0:
		status := http.StatusUnprocessableEntity
		if len(errs) == 1 && strings.Contains(errs[0], ErrNoSuchPlugin.Error()) {
			status = http.StatusNotFound
		}
		writeJSON(w, status, map[string]any{"error": strings.Join(errs, "; ")})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"reloaded": true})
	}
}

func (a *Admin) apiPromote(w http.ResponseWriter, r *http.Request) {
	pipeline, operator := r.URL.Query().Get("pipeline"), r.URL.Query().Get("operator")
	if operator == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "name the operator: ?operator=NAME"})
		return
	}
	var errs []string
	for _, p := range a.pipelines() {
		if pipeline != "" && p.cfg.Name != pipeline {
			continue
		}
		err := p.Promote(r.Context(), operator)
		if err == nil {
			writeJSON(w, http.StatusOK, map[string]any{"promoted": true, "pipeline": p.cfg.Name})
			return
		}
		if !errors.Is(err, ErrNoSuchPlugin) {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": p.cfg.Name + ": " + err.Error()})
			return
		}
		errs = append(errs, p.cfg.Name+": "+err.Error())
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such operator: " + strings.Join(errs, "; ")})
}

// apiState answers an interactive query: the state entries an operator
// holds for one record key (Pipeline.QueryState), in the JSON form of weir
// state inspect --json.
func (a *Admin) apiState(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	pipeline, operator := q.Get("pipeline"), q.Get("operator")
	if operator == "" || (q.Has("key") == q.Has("key_hex")) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "name the operator and the record key: ?operator=NAME&key=KEY (or &key_hex=HEX)"})
		return
	}
	key := []byte(q.Get("key"))
	if q.Has("key_hex") {
		var err error
		if key, err = hex.DecodeString(q.Get("key_hex")); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "key_hex: " + err.Error()})
			return
		}
	}
	var errs []string
	for _, p := range a.pipelines() {
		if pipeline != "" && p.cfg.Name != pipeline {
			continue
		}
		es, err := p.QueryState(operator, key)
		if errors.Is(err, ErrNoSuchOperator) {
			errs = append(errs, err.Error())
			continue
		}
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": p.cfg.Name + ": " + err.Error()})
			return
		}
		out := make([]map[string]any, len(es))
		for i := range es {
			out[i] = es[i].Fields()
		}
		writeJSON(w, http.StatusOK, map[string]any{"pipeline": p.cfg.Name, "operator": operator, "entries": out})
		return
	}
	if len(errs) == 0 {
		errs = append(errs, fmt.Sprintf("no pipeline named %q", pipeline))
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"error": strings.Join(errs, "; ")})
}
