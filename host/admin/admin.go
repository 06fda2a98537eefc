package admin

import (
	"context"
	"crypto/sha256"
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

	"github.com/weir-stream/weir/host"
	"github.com/weir-stream/weir/host/admin/console"
)

// Options configure Start. It is a plain value, read by Start.
type Options struct {
	// Listen is host:port. A bare ":port" listens on 127.0.0.1. Listening
	// anywhere but loopback needs a Token.
	Listen string
	// Token, when set, must come as "Authorization: Bearer <token>" on
	// /metrics and /api/*; /healthz and /readyz stay open for probes.
	Token  string
	Logger *slog.Logger
}

// Server is a weir process's admin HTTP server, for the pipelines
// registered with it:
//
//	GET  /                        the web console (package console), and
//	GET  /pipelines/{name}        each pipeline's page of it; /console/ serves its files
//	GET  /healthz                 200 while the process serves
//	GET  /readyz                  200 once every registered pipeline runs, else 503
//	GET  /metrics                 Prometheus metrics of every registered pipeline
//	GET  /api/pipeline            each pipeline's topology and live stats, JSON
//	GET  /api/plugins             each plugin operator's live version, JSON
//	POST /api/plugins/reload      reload plugins (?pipeline=NAME&operator=NAME, both optional;
//	                              &wait=DURATION waits, at most 5m, for the new versions' probation)
//	                              and report each operator's outcome (host.ReloadResult)
//	POST /api/plugins/promote     promote an operator's shadow plugin (?pipeline=NAME&operator=NAME)
//	GET  /api/state               an operator's state for one record key, read now, JSON
//	                              (421, naming the owner, for a key of another instance's task)
//	                              (?operator=NAME&key=KEY or &key_hex=HEX; &pipeline=NAME with several)
//	GET  /api/v1/...              the version 1 API: the routes above in snake_case, and each
//	                              pipeline's console view (v1.go, docs/admin-api.md)
//
// Requests are checked in this order:
//
//   - The Host header, against DNS rebinding: a web page whose name an
//     attacker points at 127.0.0.1 would otherwise reach the API from the
//     browser of anyone running weir. On a loopback address, a request is
//     answered only if its Host is the address listened on (as given, or
//     as bound: a bare ":port" is 127.0.0.1:port) or localhost, 127.0.0.1
//     or [::1] with the server's port; any other gets 421 Misdirected
//     Request. /healthz and /readyz answer any Host, for probes that reach
//     the process under another name: they change nothing and tell only
//     whether the process and its pipelines run. Beyond loopback the
//     server has a token (Start requires one), so any Host is
//     answered and the token does the refusing.
//   - State-changing requests (every method but GET, HEAD and OPTIONS),
//     against cross-site request forgery: one whose Origin header is not
//     the server's own origin (http:// and an accepted Host; beyond
//     loopback, the request's Host) or whose Sec-Fetch-Site header is
//     other than same-origin or none gets 403 Forbidden. The server never
//     sends CORS headers, so no other origin can read a response either.
//   - The token, when there is one, on /metrics and /api/*: a missing or
//     wrong one gets 401 Unauthorized with a WWW-Authenticate header. It is
//     compared in constant time, as SHA-256 digests, so that neither its
//     bytes nor its length can be found by timing.
//
// It is safe for concurrent use. It serves from Start until Close; Register
// pipelines before running them, and Close it after they end. It holds the
// pipelines registered, never closes them, and reads them only through
// their methods that are safe during a run.
type Server struct {
	srv *http.Server
	ln  net.Listener
	// hosts are the Host values accepted (lower case), and anyHost is set
	// when the server listens beyond loopback and accepts every Host.
	hosts   map[string]bool
	anyHost bool
	// tokenSum is the SHA-256 of the token; hasToken tells whether there is one.
	tokenSum [sha256.Size]byte
	hasToken bool
	log      *slog.Logger
	registry *prometheus.Registry
	mu       sync.Mutex
	pipes    []*host.Pipeline
	views    console.Views // the console's, for rates between its polls
	done     chan struct{}
}

// ErrTokenRequired is returned by Start for a non-loopback address without
// a token.
var ErrTokenRequired = errors.New("the admin server would be reachable from other machines: set a token, or listen on 127.0.0.1")

// maxReloadWait bounds the wait of POST /api/plugins/reload.
const maxReloadWait = 5 * time.Minute

// Start starts the admin server; it refuses to listen beyond
// loopback without a token.
func Start(opts Options) (*Server, error) {
	listen := opts.Listen
	name, port, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("admin: listen address %q: %w", listen, err)
	}
	if name == "" {
		name = "127.0.0.1"
		listen = net.JoinHostPort(name, port)
	}
	if !isLoopback(name) && opts.Token == "" {
		return nil, fmt.Errorf("admin: %s: %w", listen, ErrTokenRequired)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("admin: %w", err)
	}
	a := &Server{ln: ln, log: opts.Logger, registry: prometheus.NewRegistry(), done: make(chan struct{}),
		hosts: acceptedHosts(name, ln.Addr()), anyHost: !isLoopback(name)}
	if opts.Token != "" {
		a.tokenSum, a.hasToken = sha256.Sum256([]byte(opts.Token)), true
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		pipelinesCollector{a})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", a.readyz)
	mux.Handle("GET /metrics", a.auth(promhttp.HandlerFor(a.registry, promhttp.HandlerOpts{})))
	mux.Handle("GET /api/pipeline", a.auth(http.HandlerFunc(a.apiPipeline)))
	mux.Handle("GET /api/plugins", a.auth(http.HandlerFunc(a.apiPlugins)))
	mux.Handle("POST /api/plugins/reload", a.auth(http.HandlerFunc(a.apiReload)))
	mux.Handle("POST /api/plugins/promote", a.auth(http.HandlerFunc(a.apiPromote)))
	mux.Handle("GET /api/state", a.auth(http.HandlerFunc(a.apiState)))
	a.routesV1(mux)
	a.srv = &http.Server{Handler: a.guard(mux), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(a.done)
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("admin server stopped", "error", err)
		}
	}()
	a.log.Info("admin server listening", "addr", ln.Addr().String(), "token", a.hasToken)
	return a, nil
}

// isLoopback reports whether name names only this machine.
func isLoopback(name string) bool {
	if name == "localhost" {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// acceptedHosts returns the Host values of requests meant for a server
// that was asked to listen on name and is bound to addr: name and the bound
// IP, and the loopback names, each with the bound port (and without it on
// port 80, where clients leave it out).
func acceptedHosts(name string, addr net.Addr) map[string]bool {
	boundHost, port, _ := net.SplitHostPort(addr.String())
	hosts := map[string]bool{}
	for _, h := range []string{name, boundHost, "localhost", "127.0.0.1", "::1"} {
		hp := strings.ToLower(net.JoinHostPort(h, port))
		hosts[hp] = true
		if port == "80" {
			hosts[strings.TrimSuffix(hp, ":80")] = true
		}
	}
	return hosts
}

// Addr returns the address the server listens on.
func (a *Server) Addr() string { return a.ln.Addr().String() }

// Register adds a pipeline to the server's API and metrics. A second
// pipeline with the same name is refused.
func (a *Server) Register(p *host.Pipeline) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, q := range a.pipes {
		if q.Name() == p.Name() {
			return fmt.Errorf("admin: a pipeline named %q is already registered", p.Name())
		}
	}
	a.pipes = append(a.pipes, p)
	return nil
}

// pipelinesCollector collects the metrics of every pipeline registered
// with a Server, so that they share one set of metric names, each sample
// labelled with its pipeline. It is an unchecked collector (it describes
// nothing): the pipelines, and the const labels of their histograms, are
// known only as they register. Register keeps pipeline names unique, so no
// two samples collide, which the registry checks at each scrape.
type pipelinesCollector struct{ a *Server }

// Describe implements prometheus.Collector.
func (pipelinesCollector) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (c pipelinesCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.a.pipelines() {
		p.Collector().Collect(ch)
	}
}

// Close stops the server.
func (a *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := a.srv.Shutdown(ctx)
	<-a.done
	return err
}

func (a *Server) pipelines() []*host.Pipeline {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*host.Pipeline(nil), a.pipes...)
}

// guard refuses requests for another Host (DNS rebinding) and
// cross-origin state-changing requests (CSRF); see Server.
func (a *Server) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		probe := r.URL.Path == "/healthz" || r.URL.Path == "/readyz"
		if !probe && !a.anyHost && !a.hosts[strings.ToLower(r.Host)] {
			http.Error(w, fmt.Sprintf("misdirected request: Host %q is not this admin server's address; "+
				"use %s or localhost (requests for other names are refused against DNS rebinding)", r.Host, a.Addr()),
				http.StatusMisdirectedRequest)
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			if o := r.Header.Get("Origin"); o != "" && !a.ownOrigin(o, r) {
				http.Error(w, fmt.Sprintf("forbidden: cross-origin request from %q; the admin API takes %s requests only from its own origin", o, r.Method),
					http.StatusForbidden)
				return
			}
			if sf := r.Header.Get("Sec-Fetch-Site"); sf != "" && sf != "same-origin" && sf != "none" {
				http.Error(w, fmt.Sprintf("forbidden: %s request from another site (Sec-Fetch-Site: %s)", r.Method, sf),
					http.StatusForbidden)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// ownOrigin reports whether origin, an Origin header, is the server's:
// http:// and an accepted Host (beyond loopback, the request's Host).
func (a *Server) ownOrigin(origin string, r *http.Request) bool {
	hostport, ok := strings.CutPrefix(strings.ToLower(origin), "http://")
	if !ok {
		return false
	}
	return a.hosts[hostport] || (a.anyHost && hostport == strings.ToLower(r.Host))
}

// auth requires the bearer token, when there is one.
func (a *Server) auth(h http.Handler) http.Handler {
	if !a.hasToken {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header := r.Header.Get("Authorization")
		if header == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="weir"`)
			http.Error(w, "unauthorized: send Authorization: Bearer <token>", http.StatusUnauthorized)
			return
		}
		if !a.tokenMatches(header) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="weir", error="invalid_token"`)
			http.Error(w, "unauthorized: the bearer token is not this server's", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// tokenMatches reports whether an Authorization header carries the token.
// The SHA-256 digests are compared, in constant time, so that the time
// taken depends neither on the token's bytes nor on its length.
func (a *Server) tokenMatches(header string) bool {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false // nothing secret decided this
	}
	sum := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(sum[:], a.tokenSum[:]) == 1
}

func (a *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	var notReady []string
	pipes := a.pipelines()
	for _, p := range pipes {
		if s := p.Stats().State; s != host.StateRunning {
			notReady = append(notReady, p.Name()+" is "+s)
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

// StageInfo is one stage of a pipeline's topology in the admin API. It is
// a plain value.
type StageInfo struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Plugin string `json:"plugin,omitempty"`
}

// PipelineInfo is a pipeline in the admin API, GET /api/pipeline: its
// topology and live stats. It is a plain value.
type PipelineInfo struct {
	Name      string              `json:"name"`
	File      string              `json:"file"`
	Sources   []StageInfo         `json:"sources"`
	Operators []StageInfo         `json:"operators"`
	Sinks     []StageInfo         `json:"sinks"`
	Plugins   []host.PluginStatus `json:"plugins,omitempty"`
	Stats     host.Stats          `json:"stats"`
}

// pipelineInfo returns the pipeline's topology with its live stats.
func pipelineInfo(p *host.Pipeline) PipelineInfo {
	info := PipelineInfo{Name: p.Name(), File: p.File(), Plugins: p.Plugins(), Stats: p.Stats()}
	for _, st := range p.Topology() {
		si := StageInfo{Name: st.Name, Type: st.Type, Plugin: st.Plugin}
		switch st.Stage {
		case "source":
			info.Sources = append(info.Sources, si)
		case "operator":
			info.Operators = append(info.Operators, si)
		case "sink":
			info.Sinks = append(info.Sinks, si)
		}
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

func (a *Server) apiPipeline(w http.ResponseWriter, _ *http.Request) {
	var out []PipelineInfo
	for _, p := range a.pipelines() {
		out = append(out, pipelineInfo(p))
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *Server) apiPlugins(w http.ResponseWriter, _ *http.Request) {
	out := map[string][]host.PluginStatus{}
	for _, p := range a.pipelines() {
		out[p.Name()] = p.Plugins()
	}
	writeJSON(w, http.StatusOK, out)
}

// apiReload reloads plugins and answers each operator's host.ReloadResult:
// {"results": [...]}, with 200 when none was refused or rolled back, else
// 422 and "error" naming them. The pipelines reload side by side, each
// waiting up to wait for its new versions' probation, so that the request
// waits no longer for several pipelines than for one.
func (a *Server) apiReload(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	pipeline, operator := q.Get("pipeline"), q.Get("operator")
	var wait time.Duration
	if s := q.Get("wait"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 || d > maxReloadWait {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("wait=%s: want a duration from 0s to %s", s, maxReloadWait)})
			return
		}
		wait = d
	}
	var pipes []*host.Pipeline
	for _, p := range a.pipelines() {
		if pipeline == "" || p.Name() == pipeline {
			pipes = append(pipes, p)
		}
	}
	each := make([][]host.ReloadResult, len(pipes))
	errs := make([]error, len(pipes))
	var wg sync.WaitGroup
	for i, p := range pipes {
		wg.Go(func() { each[i], errs[i] = p.Reload(r.Context(), operator, wait) })
	}
	wg.Wait()
	results := []host.ReloadResult{} // [] in the answer, never null
	var missing []string
	for i, p := range pipes {
		if errs[i] != nil {
			missing = append(missing, p.Name()+": "+errs[i].Error())
			continue
		}
		results = append(results, each[i]...)
	}
	switch {
	case len(pipes) == 0 && pipeline == "":
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no pipeline registered"})
		return
	case len(pipes) == 0:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no pipeline named %q", pipeline)})
		return
	case len(results) == 0 && len(missing) > 0:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": strings.Join(missing, "; ")})
		return
	}
	var failed []string
	for _, res := range results {
		if res.Failed() {
			failed = append(failed, res.String())
		}
	}
	if len(failed) > 0 {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"results": results, "error": strings.Join(failed, "; ")})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": results})
}

func (a *Server) apiPromote(w http.ResponseWriter, r *http.Request) {
	pipeline, operator := r.URL.Query().Get("pipeline"), r.URL.Query().Get("operator")
	if operator == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "name the operator: ?operator=NAME"})
		return
	}
	var errs []string
	for _, p := range a.pipelines() {
		if pipeline != "" && p.Name() != pipeline {
			continue
		}
		err := p.Promote(r.Context(), operator)
		if err == nil {
			writeJSON(w, http.StatusOK, map[string]any{"promoted": true, "pipeline": p.Name()})
			return
		}
		if !errors.Is(err, host.ErrNoSuchPlugin) {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": p.Name() + ": " + err.Error()})
			return
		}
		errs = append(errs, p.Name()+": "+err.Error())
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such operator: " + strings.Join(errs, "; ")})
}

// apiState answers an interactive query: the state entries an operator
// holds for one record key (host.Pipeline.QueryState), in the JSON form of weir
// state inspect --json.
func (a *Server) apiState(w http.ResponseWriter, r *http.Request) {
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
		if pipeline != "" && p.Name() != pipeline {
			continue
		}
		es, err := p.QueryState(operator, key)
		if errors.Is(err, host.ErrNoSuchOperator) {
			errs = append(errs, err.Error())
			continue
		}
		if nl := (*host.NotLocalError)(nil); errors.As(err, &nl) {
			// As Kafka Streams' queryMetadataForKey: say who has it.
			writeJSON(w, http.StatusMisdirectedRequest, map[string]any{"error": p.Name() + ": " + err.Error(),
				"pipeline": p.Name(), "task": nl.Task, "owner": nl.Owner})
			return
		}
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": p.Name() + ": " + err.Error()})
			return
		}
		out := make([]map[string]any, len(es))
		for i := range es {
			out[i] = es[i].Fields()
		}
		writeJSON(w, http.StatusOK, map[string]any{"pipeline": p.Name(), "operator": operator, "entries": out})
		return
	}
	if len(errs) == 0 {
		errs = append(errs, fmt.Sprintf("no pipeline named %q", pipeline))
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"error": strings.Join(errs, "; ")})
}
