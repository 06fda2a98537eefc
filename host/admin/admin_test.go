package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host"
	"github.com/weir-stream/weir/host/admin"
	"github.com/weir-stream/weir/host/plugintool"
)

func TestAdminRefusesOpenBindWithoutToken(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0"} {
		if _, err := admin.Start(admin.Options{Listen: addr}); !errors.Is(err, admin.ErrTokenRequired) {
			t.Errorf("%s without a token: %v, want ErrTokenRequired", addr, err)
		}
	}
	a, err := admin.Start(admin.Options{Listen: "0.0.0.0:0", Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	base := "http://" + strings.Replace(a.Addr(), "0.0.0.0", "127.0.0.1", 1)
	for _, tc := range []struct {
		path, token string
		want        int
	}{
		{"/healthz", "", 200},
		{"/metrics", "", 401},
		{"/metrics", "wrong", 401},
		{"/metrics", "s3cret", 200},
		{"/api/pipeline", "", 401},
		{"/api/pipeline", "s3cret", 200},
	} {
		if code, _ := weirtest.HTTPGet(t, base+tc.path, tc.token); code != tc.want {
			t.Errorf("GET %s with token %q: %d, want %d", tc.path, tc.token, code, tc.want)
		}
	}
	// A bare port listens on loopback, no token needed.
	b, err := admin.Start(admin.Options{Listen: ":0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !strings.HasPrefix(b.Addr(), "127.0.0.1:") {
		t.Errorf("bare port listens on %s, want 127.0.0.1", b.Addr())
	}
}

// TestAdminDuringRun scrapes /metrics and reads /api/pipeline while a
// pipeline runs: the counters match what was processed.
func TestAdminDuringRun(t *testing.T) {
	r := startCounter(t)
	base := r.base
	r.feed(100)
	weirtest.PollUntil(t, 10*time.Second, "the counters", func() bool {
		_, body := weirtest.HTTPGet(t, base+"/metrics", "")
		return weirtest.MetricValue(body, "weir_records_out_total", `name="count"`) == 100
	})
	_, body := weirtest.HTTPGet(t, base+"/metrics", "")
	for _, want := range []struct {
		metric string
		labels []string
		value  float64
	}{
		{"weir_records_in_total", []string{`pipeline="reload"`, `stage="operator"`, `name="count"`}, 100},
		{"weir_records_out_total", []string{`stage="source"`, `name="in"`}, 100},
		{"weir_records_out_total", []string{`stage="sink"`, `name="out"`}, 100},
		{"weir_records_dead_total", []string{`name="count"`}, 0},
		{"weir_pipeline_running", []string{`pipeline="reload"`}, 1},
		{"weir_pipeline_standby", []string{`pipeline="reload"`}, 0},
		{"weir_plugin_info", []string{`operator="count"`, `version="1"`}, 1},
	} {
		if got := weirtest.MetricValue(body, want.metric, want.labels...); got != want.value {
			t.Errorf("%s%v = %v, want %v", want.metric, want.labels, got, want.value)
		}
	}
	for _, h := range []string{"weir_batch_latency_seconds_count", "weir_udf_call_seconds_count"} {
		if !regexp.MustCompile(`(?m)^` + h + `\{[^}]*\} [1-9]`).MatchString(body) {
			t.Errorf("histogram %s has no observations:\n%s", h, grepLines(body, "weir_"))
		}
	}
	if code, _ := weirtest.HTTPGet(t, base+"/readyz", ""); code != 200 {
		t.Errorf("readyz while running: %d", code)
	}

	code, body := weirtest.HTTPGet(t, base+"/api/pipeline", "")
	var infos []admin.PipelineInfo
	if err := json.Unmarshal([]byte(body), &infos); err != nil || code != 200 || len(infos) != 1 {
		t.Fatalf("api/pipeline: %d %v\n%s", code, err, body)
	}
	in := infos[0]
	if in.Stats.State != host.StateRunning || len(in.Operators) != 2 || in.Operators[1].Plugin == "" || len(in.Plugins) != 1 {
		t.Fatalf("api/pipeline: %+v", in)
	}
	for _, s := range in.Stats.Stages {
		if s.Out != 100 {
			t.Errorf("stage %s %s: out %d, want 100", s.Stage, s.Name, s.Out)
		}
	}

	// Interactive query: the counter's state of one key, as it is now.
	// Its ValueState "count" is an int64, 8 bytes little-endian; the feed
	// gave each of its 5 keys 20 records.
	code, body = weirtest.HTTPGet(t, base+"/api/state?operator=count&key=k3", "")
	var st struct {
		Pipeline, Operator string
		Entries            []map[string]any
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil || code != 200 || st.Pipeline != "reload" || len(st.Entries) != 1 {
		t.Fatalf("api/state: %d %v\n%s", code, err, body)
	}
	if e := st.Entries[0]; e["kind"] != "value" || e["name"] != "count" || e["value_hex"] != "1400000000000000" {
		t.Errorf("api/state entry %v, want the value \"count\" 20 (1400000000000000)", e)
	}
	for _, tc := range []struct {
		query string
		code  int
	}{
		{"operator=count&key=nobody", 200}, // no entries
		{"operator=nope&key=k3", 404},
		{"operator=count", 400},
		{"operator=count&key_hex=zz", 400},
		{"pipeline=other&operator=count&key=k3", 404},
	} {
		if code, body := weirtest.HTTPGet(t, base+"/api/state?"+tc.query, ""); code != tc.code {
			t.Errorf("api/state?%s: %d, want %d\n%s", tc.query, code, tc.code, body)
		}
	}

	// Reload through the API: the same module is "unchanged", a missing
	// operator is a 404.
	resp, err := http.Post(base+"/api/plugins/reload?operator=count", "", nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("reload: %v %v", err, resp)
	}
	resp.Body.Close()
	resp, err = http.Post(base+"/api/plugins/reload?operator=nope", "", nil)
	if err != nil || resp.StatusCode != 404 {
		t.Fatalf("reload of a missing operator: %v %v", err, resp)
	}
	resp.Body.Close()
	resp, err = http.Post(base+"/api/plugins/promote?operator=count", "", nil)
	if err != nil || resp.StatusCode != 422 {
		t.Fatalf("promote without a shadow: %v %v", err, resp)
	}
	resp.Body.Close()
	r.in.Close()
	weirtest.PollUntil(t, 10*time.Second, "the end of the run", func() bool { return r.p.Stats().State == host.StateFinished })
	if code, _ := weirtest.HTTPGet(t, base+"/readyz", ""); code != 503 {
		t.Errorf("readyz after the run: %d, want 503", code)
	}
}

func grepLines(body, prefix string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// adminDo sends a request with the given Host (when not "") and headers.
func adminDo(t *testing.T, method, url, hostHeader string, headers map[string]string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if hostHeader != "" {
		req.Host = hostHeader
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// startAdmin starts an admin server, closed at the end of the test, and
// returns it with its port.
func startAdmin(t *testing.T, opts admin.Options) (*admin.Server, string) {
	t.Helper()
	a, err := admin.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	_, port, err := net.SplitHostPort(a.Addr())
	if err != nil {
		t.Fatal(err)
	}
	return a, port
}

// noCORS fails the test if a response carries a CORS header.
func noCORS(t *testing.T, what string, h http.Header) {
	t.Helper()
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			t.Errorf("%s: response has the CORS header %s: %v", what, k, h[k])
		}
	}
}

// TestAdminRefusesForeignHosts: on loopback, a request for any name but
// the server's address or a loopback name with its port is refused with
// 421 (DNS rebinding), except for the health probes; beyond loopback,
// where a token is required, any Host is served.
func TestAdminRefusesForeignHosts(t *testing.T) {
	servers := map[string]admin.Options{
		"127.0.0.1":   {Listen: "127.0.0.1:0"},
		"localhost":   {Listen: "localhost:0"},
		"bare port":   {Listen: ":0"},
		"with token":  {Listen: "127.0.0.1:0", Token: "s3cret"},
		"all, token":  {Listen: "0.0.0.0:0", Token: "s3cret"},
		"::1 literal": {Listen: "[::1]:0"},
	}
	bases, ports := map[string]string{}, map[string]string{}
	for name, opts := range servers {
		if name == "::1 literal" {
			if ln, err := net.Listen("tcp", "[::1]:0"); err != nil {
				continue // no IPv6 loopback here: its cases skip
			} else {
				ln.Close()
			}
		}
		a, port := startAdmin(t, opts)
		bases[name], ports[name] = "http://"+strings.Replace(a.Addr(), "0.0.0.0", "127.0.0.1", 1), port
	}
	for _, tc := range []struct {
		name, server, method, path string
		host                       string // with {port} for the server's port
		want                       int
	}{
		{"the address listened on", "127.0.0.1", "GET", "/api/pipeline", "127.0.0.1:{port}", 200},
		{"localhost", "127.0.0.1", "GET", "/api/pipeline", "localhost:{port}", 200},
		{"localhost in capitals", "127.0.0.1", "GET", "/api/pipeline", "LocalHost:{port}", 200},
		{"IPv6 loopback", "127.0.0.1", "GET", "/api/pipeline", "[::1]:{port}", 200},
		{"a foreign name", "127.0.0.1", "GET", "/api/pipeline", "evil.example:{port}", 421},
		{"a foreign name without port", "127.0.0.1", "GET", "/api/pipeline", "evil.example", 421},
		{"localhost on another port", "127.0.0.1", "GET", "/api/pipeline", "localhost:1", 421},
		{"localhost without the port", "127.0.0.1", "GET", "/api/pipeline", "localhost", 421},
		{"metrics for a foreign name", "127.0.0.1", "GET", "/metrics", "evil.example:{port}", 421},
		{"plugins for a foreign name", "127.0.0.1", "GET", "/api/plugins", "evil.example:{port}", 421},
		{"state for a foreign name", "127.0.0.1", "GET", "/api/state?operator=x&key=y", "evil.example:{port}", 421},
		{"a reload for a foreign name", "127.0.0.1", "POST", "/api/plugins/reload", "evil.example:{port}", 421},
		{"a promotion for a foreign name", "127.0.0.1", "POST", "/api/plugins/promote?operator=x", "evil.example:{port}", 421},
		{"healthz answers any name", "127.0.0.1", "GET", "/healthz", "evil.example:{port}", 200},
		{"readyz answers any name", "127.0.0.1", "GET", "/readyz", "evil.example:{port}", 503}, // no pipeline registered
		{"listened on as localhost", "localhost", "GET", "/api/pipeline", "localhost:{port}", 200},
		{"listened on as localhost, by IP", "localhost", "GET", "/api/pipeline", "127.0.0.1:{port}", 200},
		{"listened on as localhost, a foreign name", "localhost", "GET", "/api/pipeline", "evil.example:{port}", 421},
		{"a bare port is 127.0.0.1", "bare port", "GET", "/api/pipeline", "127.0.0.1:{port}", 200},
		{"a bare port, a foreign name", "bare port", "GET", "/api/pipeline", "evil.example:{port}", 421},
		{"a token does not open other names on loopback", "with token", "GET", "/api/pipeline", "evil.example:{port}", 421},
		{"beyond loopback any name is served", "all, token", "GET", "/api/pipeline", "evil.example:{port}", 200},
		{"beyond loopback any name, no token", "all, token", "GET", "/metrics", "evil.example:{port}", 401},
		{"IPv6 loopback listened on", "::1 literal", "GET", "/api/pipeline", "[::1]:{port}", 200},
		{"IPv6 loopback, localhost", "::1 literal", "GET", "/api/pipeline", "localhost:{port}", 200},
		{"IPv6 loopback, a foreign name", "::1 literal", "GET", "/api/pipeline", "evil.example:{port}", 421},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, ok := bases[tc.server]
			if !ok {
				t.Skip("no IPv6 loopback")
			}
			headers := map[string]string{}
			if servers[tc.server].Token != "" && tc.want != 401 {
				headers["Authorization"] = "Bearer s3cret"
			}
			hostHeader := strings.ReplaceAll(tc.host, "{port}", ports[tc.server])
			code, body, h := adminDo(t, tc.method, base+tc.path, hostHeader, headers)
			if code != tc.want {
				t.Fatalf("%s %s with Host %s: %d, want %d\n%s", tc.method, tc.path, hostHeader, code, tc.want, body)
			}
			if code == http.StatusMisdirectedRequest && !strings.Contains(body, "DNS rebinding") {
				t.Errorf("the refusal does not say why: %s", body)
			}
			noCORS(t, tc.name, h)
		})
	}
}

// TestAdminRefusesCrossOriginPosts: a state-changing request that a page
// of another origin sent (its Origin, or the browser's Sec-Fetch-Site,
// says so) is refused with 403; the server's own origin and clients that
// send neither header (curl, weir plugin reload) pass. Refused or not, no
// response carries CORS headers.
func TestAdminRefusesCrossOriginPosts(t *testing.T) {
	_, port := startAdmin(t, admin.Options{Listen: "127.0.0.1:0"})
	open, openPort := startAdmin(t, admin.Options{Listen: "0.0.0.0:0", Token: "s3cret"})
	base := "http://127.0.0.1:" + port
	openBase := "http://" + strings.Replace(open.Addr(), "0.0.0.0", "127.0.0.1", 1)
	// With no pipeline registered, a reload that passes the checks is a
	// 404; a promotion without an operator a 400.
	for _, tc := range []struct {
		name, method, url, hostHeader string
		headers                       map[string]string
		want                          int
	}{
		{"no Origin (curl)", "POST", base + "/api/plugins/reload", "", nil, 404},
		{"its own origin", "POST", base + "/api/plugins/reload", "", map[string]string{"Origin": "http://127.0.0.1:" + port}, 404},
		{"its own origin as localhost", "POST", base + "/api/plugins/reload", "localhost:" + port,
			map[string]string{"Origin": "http://localhost:" + port}, 404},
		{"another site", "POST", base + "/api/plugins/reload", "", map[string]string{"Origin": "http://evil.example"}, 403},
		{"another port of localhost", "POST", base + "/api/plugins/reload", "", map[string]string{"Origin": "http://localhost:3000"}, 403},
		{"https is another origin", "POST", base + "/api/plugins/reload", "", map[string]string{"Origin": "https://127.0.0.1:" + port}, 403},
		{"an opaque origin", "POST", base + "/api/plugins/reload", "", map[string]string{"Origin": "null"}, 403},
		{"a promotion from another site", "POST", base + "/api/plugins/promote", "", map[string]string{"Origin": "http://evil.example"}, 403},
		{"a promotion without Origin", "POST", base + "/api/plugins/promote", "", nil, 400},
		{"Sec-Fetch-Site cross-site", "POST", base + "/api/plugins/reload", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"Sec-Fetch-Site same-site", "POST", base + "/api/plugins/reload", "", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"Sec-Fetch-Site same-origin", "POST", base + "/api/plugins/reload", "",
			map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:" + port}, 404},
		{"Sec-Fetch-Site none (typed in)", "POST", base + "/api/plugins/reload", "", map[string]string{"Sec-Fetch-Site": "none"}, 404},
		{"own Origin but cross-site fetch", "POST", base + "/api/plugins/reload", "",
			map[string]string{"Origin": "http://127.0.0.1:" + port, "Sec-Fetch-Site": "cross-site"}, 403},
		{"a GET from another site is not state-changing", "GET", base + "/api/pipeline", "", map[string]string{"Origin": "http://evil.example"}, 200},
		{"GET on reload is not allowed", "GET", base + "/api/plugins/reload", "", nil, 405},
		{"GET on promote is not allowed", "GET", base + "/api/plugins/promote?operator=x", "", nil, 405},
		{"a CORS preflight gets no CORS answer", "OPTIONS", base + "/api/plugins/reload", "",
			map[string]string{"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"}, 405},
		{"beyond loopback, the origin of the Host used", "POST", openBase + "/api/plugins/reload", "weir.internal:" + openPort,
			map[string]string{"Origin": "http://weir.internal:" + openPort, "Authorization": "Bearer s3cret"}, 404},
		{"beyond loopback, another site", "POST", openBase + "/api/plugins/reload", "weir.internal:" + openPort,
			map[string]string{"Origin": "http://evil.example", "Authorization": "Bearer s3cret"}, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, h := adminDo(t, tc.method, tc.url, tc.hostHeader, tc.headers)
			if code != tc.want {
				t.Fatalf("%s %s %v: %d, want %d\n%s", tc.method, tc.url, tc.headers, code, tc.want, body)
			}
			if code == http.StatusForbidden && !strings.Contains(body, "forbidden:") {
				t.Errorf("the refusal does not say why: %s", body)
			}
			noCORS(t, tc.name, h)
		})
	}
}

// TestAdminToken: with a token, /metrics and /api/* need it as a bearer
// token; a missing or wrong one is a 401 with a WWW-Authenticate
// challenge, and the probes stay open.
func TestAdminToken(t *testing.T) {
	a, _ := startAdmin(t, admin.Options{Listen: "127.0.0.1:0", Token: "s3cret"})
	base := "http://" + a.Addr()
	for _, tc := range []struct {
		name, path, authorization string
		want                      int
		challenge                 string // in WWW-Authenticate
	}{
		{"no token", "/api/pipeline", "", 401, `Bearer realm="weir"`},
		{"a wrong token", "/api/pipeline", "Bearer wrong", 401, `error="invalid_token"`},
		{"a prefix of the token", "/api/pipeline", "Bearer s3cre", 401, `error="invalid_token"`},
		{"the token and more", "/api/pipeline", "Bearer s3cret2", 401, `error="invalid_token"`},
		{"another scheme", "/api/pipeline", "Basic s3cret", 401, `error="invalid_token"`},
		{"no scheme", "/api/pipeline", "s3cret", 401, `error="invalid_token"`},
		{"the token", "/api/pipeline", "Bearer s3cret", 200, ""},
		{"the scheme in lower case", "/api/pipeline", "bearer s3cret", 200, ""},
		{"metrics without the token", "/metrics", "", 401, `Bearer realm="weir"`},
		{"metrics with the token", "/metrics", "Bearer s3cret", 200, ""},
		{"healthz stays open", "/healthz", "", 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			headers := map[string]string{}
			if tc.authorization != "" {
				headers["Authorization"] = tc.authorization
			}
			code, body, h := adminDo(t, "GET", base+tc.path, "", headers)
			if code != tc.want {
				t.Fatalf("GET %s with %q: %d, want %d\n%s", tc.path, tc.authorization, code, tc.want, body)
			}
			if got := h.Get("WWW-Authenticate"); (tc.challenge == "") != (got == "") || !strings.Contains(got, tc.challenge) {
				t.Errorf("WWW-Authenticate %q, want one with %q", got, tc.challenge)
			}
		})
	}
}

// TestAdminMetricsOfSeveralPipelines registers two pipelines with one
// admin server: each one's series are on /metrics with its own counts,
// histograms included.
func TestAdminMetricsOfSeveralPipelines(t *testing.T) {
	a, _ := startAdmin(t, admin.Options{Listen: "127.0.0.1:0"})
	ctx := context.Background()
	for name, n := range map[string]int{"three": 3, "five": 5} {
		var in strings.Builder
		for i := range n {
			fmt.Fprintf(&in, "{\"i\":%d}\n", i)
		}
		path := writePipeline(t, "name: "+name+"\nsources: [{name: in, type: stdin}]\nsinks: [{name: out, type: discard}]\n")
		p, err := host.Load(ctx, path, host.Options{Stdin: strings.NewReader(in.String())})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close(ctx) })
		if err := a.Register(p); err != nil {
			t.Fatalf("registering pipeline %s: %v", name, err)
		}
		if _, err := p.Run(ctx); err != nil {
			t.Fatal(err)
		}
	}
	code, body := weirtest.HTTPGet(t, "http://"+a.Addr()+"/metrics", "")
	if code != 200 {
		t.Fatalf("metrics: %d\n%s", code, body)
	}
	for name, n := range map[string]float64{"three": 3, "five": 5} {
		pl := `pipeline="` + name + `"`
		if got := weirtest.MetricValue(body, "weir_records_out_total", pl, `stage="source"`); got != n {
			t.Errorf("%s: weir_records_out_total of the source = %v, want %v", name, got, n)
		}
		if got := weirtest.MetricValue(body, "weir_records_in_total", pl, `stage="sink"`); got != n {
			t.Errorf("%s: weir_records_in_total of the sink = %v, want %v", name, got, n)
		}
		if got := weirtest.MetricValue(body, "weir_batch_latency_seconds_count", pl); got < 1 {
			t.Errorf("%s: weir_batch_latency_seconds_count = %v, want observations", name, got)
		}
	}
	if err := a.Register(mustLoad(t, "name: five\nsources: [{name: in, type: stdin}]\nsinks: [{name: out, type: discard}]\n")); err == nil {
		t.Error("a second pipeline named five was registered")
	}
}

// mustLoad loads a pipeline from yaml, closed at the end of the test.
func mustLoad(t *testing.T, yaml string) *host.Pipeline {
	t.Helper()
	ctx := context.Background()
	p, err := host.Load(ctx, writePipeline(t, yaml), host.Options{Stdin: strings.NewReader("")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(ctx) })
	return p
}

// counterRun is a pipeline named reload, registered with an admin server
// at base, whose stateful counter plugin counts each key's records, with
// two workers, fed from in.
type counterRun struct {
	t    *testing.T
	p    *host.Pipeline
	in   *io.PipeWriter
	base string
}

// startCounter builds the counter plugin, loads the pipeline, registers it
// with a new admin server and runs it until the test ends.
func startCounter(t *testing.T) *counterRun {
	t.Helper()
	ctx := context.Background()
	plugin, _, err := plugintool.Build(ctx, filepath.Join(weirtest.Root(t), "plugins/conformance/go/counter"), "")
	if err != nil {
		t.Fatal(err)
	}
	path := writePipeline(t, `name: reload
engine: {parallelism: 2, batch_size: 8}
sources: [{name: in, type: stdin}]
operators:
  - {name: by-k, type: key_by, field: k}
  - {name: count, type: map, plugin: "`+plugin+`"}
sinks: [{name: out, type: stdout}]
dead_letter: {type: file, path: `+filepath.Join(t.TempDir(), "dead.jsonl")+`}
`)
	pr, pw := io.Pipe()
	p, err := host.Load(ctx, path, host.Options{Stdin: pr, Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := startAdmin(t, admin.Options{Listen: "127.0.0.1:0"})
	if err := a.Register(p); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.Run(ctx)
		done <- err
	}()
	t.Cleanup(func() {
		pw.Close()
		<-done
		p.Close(ctx)
	})
	return &counterRun{t: t, p: p, in: pw, base: "http://" + a.Addr()}
}

// feed sends n records over 5 keys and waits until the sink has written
// them all.
func (r *counterRun) feed(n int) {
	r.t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{\"k\":\"k%d\",\"i\":%d}\n", i%5, i)
	}
	if _, err := io.WriteString(r.in, b.String()); err != nil {
		r.t.Fatal(err)
	}
	weirtest.PollUntil(r.t, 20*time.Second, fmt.Sprintf("%d results", n), func() bool {
		st := r.p.Stats().Stages
		return len(st) > 0 && st[len(st)-1].Out >= int64(n)
	})
}

// writePipeline writes a pipeline file into a temporary directory and
// returns its path.
func writePipeline(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pipeline.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
