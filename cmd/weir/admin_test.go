package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host"
)

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// buildPlugin builds the plugin folder dir (relative to the module root,
// or absolute) with weir plugin build and returns the module.
func buildPlugin(t *testing.T, dir string) []byte {
	t.Helper()
	res := weirtest.Run(t, weirtest.Root(t), "", "plugin", "build", dir)
	if res.Code != 0 {
		t.Fatalf("plugin build %s: %s", dir, res.Stderr)
	}
	b, err := os.ReadFile(strings.TrimSpace(res.Stdout))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// panickingModule makes a Go plugin with weir plugin new, gives it a bug
// that panics on every record, and builds it. The Go SDK turns the panic
// into the record's error, so the host sees rejections, not traps.
func panickingModule(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	res := weirtest.Run(t, dir, "", "plugin", "new", "--lang", "go", "buggy")
	if res.Code != 0 {
		t.Fatalf("plugin new: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	const mainGo = `package main

import weir "github.com/weir-stream/weir/guest-sdk/go"

func init() {
	weir.Map(func(r *weir.Record) ([]byte, error) {
		var seen map[string]bool
		seen[string(r.Value)] = true // assignment to entry in nil map
		return r.Value, nil
	})
}

func main() {}
`
	if err := os.WriteFile(filepath.Join(dir, "buggy", "main.go"), []byte(mainGo), 0o644); err != nil {
		t.Fatal(err)
	}
	return buildPlugin(t, filepath.Join(dir, "buggy"))
}

// adminProcess is a weir run serving --admin, ended at the end of the test.
type adminProcess struct {
	t      *testing.T
	cmd    *exec.Cmd
	addr   string
	stdin  io.WriteCloser
	stderr string // the file its standard error goes to
}

// startAdminRun runs weir run --admin on args in dir and waits until the
// admin server answers.
func startAdminRun(t *testing.T, dir string, args ...string) *adminProcess {
	t.Helper()
	a := &adminProcess{t: t, addr: freePort(t), stderr: filepath.Join(t.TempDir(), "stderr")}
	a.cmd = exec.Command(weirtest.Weir(t), append([]string{"run", "--admin", a.addr, "--watch=false", "--status", "never"}, args...)...)
	a.cmd.Dir = dir
	stderr, err := os.Create(a.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close() // the process has its own copy
	a.cmd.Stderr = stderr
	if a.stdin, err = a.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.cmd.Process.Kill()
		a.cmd.Wait()
	})
	weirtest.PollUntil(t, 30*time.Second, "the admin server", func() bool {
		code, _ := a.get("/healthz")
		return code == 200
	})
	return a
}

// log returns what the process wrote to standard error so far.
func (a *adminProcess) log() string {
	b, _ := os.ReadFile(a.stderr)
	return string(b)
}

// request sends a request to the admin server with extra headers.
func (a *adminProcess) request(method, path string, headers map[string]string) (int, string) {
	req, err := http.NewRequest(method, "http://"+a.addr+path, nil)
	if err != nil {
		a.t.Fatal(err)
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (a *adminProcess) get(path string) (int, string) { return a.request(http.MethodGet, path, nil) }

// reload runs weir plugin reload against the process.
func (a *adminProcess) reload(dir string, args ...string) weirtest.Result {
	a.t.Helper()
	return weirtest.Run(a.t, dir, "", append([]string{"plugin", "reload", "--admin", a.addr}, args...)...)
}

// stop ends the process with SIGTERM and requires a clean exit.
func (a *adminProcess) stop() {
	a.t.Helper()
	a.cmd.Process.Signal(syscall.SIGTERM)
	if err := a.cmd.Wait(); err != nil {
		a.t.Fatalf("weir exited with %v\n%s", err, a.log())
	}
}

// TestAdminAndPluginReload runs a pipeline with --admin, reads its health
// and metrics, and reloads its plugin with weir plugin reload after
// replacing the module, which reports each outcome: swapped after
// probation, unchanged, refused, and rolled back (a Go plugin that panics
// on every record); then SIGHUP reloads too, and the admin server refuses
// foreign Hosts and cross-origin posts.
func TestAdminAndPluginReload(t *testing.T) {
	t.Parallel()
	v1, v2 := buildPlugin(t, "plugins/conformance/go/counter"), buildPlugin(t, "host/testdata/plugins/counterv2")
	buggy := panickingModule(t)
	dir := pipelineDir(t, `name: live
sources:
  - name: gen
    type: generator
    rate: 500
    key: k
    fields: [{name: k, kind: random_choice, values: ["a", "b"]}]
operators:
  - {name: by-k, type: key_by, field: k}
  - {name: count, type: map, plugin: count.wasm}
sinks: [{name: out, type: discard}]
dead_letter: {type: file, path: dead.jsonl}
`, map[string]string{"count.wasm": string(v1)})
	a := startAdminRun(t, dir, "pipeline.yaml")
	weirtest.PollUntil(t, 30*time.Second, "the pipeline to run", func() bool {
		code, _ := a.get("/readyz")
		return code == 200
	})
	if code, body := a.get("/metrics"); code != 200 || !strings.Contains(body, `weir_plugin_info{operator="count",pipeline="live"`) {
		t.Fatalf("metrics: %d\n%s", code, body)
	}
	install := func(module []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "count.wasm"), module, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	install(v2)
	res := a.reload(dir, "count")
	if want := regexp.MustCompile(`^live/count: swapped to version 2 \(from 1\), passed probation: 0 of \d+ records failed in 10 batches\n$`); res.Code != 0 || !want.MatchString(res.Stdout) {
		t.Fatalf("plugin reload: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	if _, body := a.get("/metrics"); !strings.Contains(body, `operator="count",pipeline="live",sha256=`) || !strings.Contains(body, `version="2"`) {
		t.Fatalf("metrics after the reload do not show version 2:\n%s", body)
	}
	res = a.reload(dir)
	if res.Code != 0 || res.Stdout != "live/count: unchanged: version 2 runs this module already\n" {
		t.Fatalf("reload of the same module: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	res = a.reload(dir, "nope")
	if res.Code != 1 || !strings.Contains(res.Stderr, `no plugin operator of that name: "nope"`) {
		t.Fatalf("reload of a missing operator: exit %d\n%s", res.Code, res.Stderr)
	}
	install([]byte("not wasm"))
	res = a.reload(dir)
	if res.Code != 1 || res.Stdout != "" || !strings.Contains(res.Stderr, "live/count: refused, version 2 goes on: ") ||
		!strings.Contains(res.Stderr, "not a WebAssembly module") {
		t.Fatalf("reload of a broken module: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	install(buggy)
	res = a.reload(dir, "--pipeline", "live", "count")
	if res.Code != 1 || res.Stdout != "" || !strings.Contains(res.Stderr, "live/count: rolled back to version 2: version 3 failed on 100% of the records of its first 10 batches") {
		t.Fatalf("reload of a version that panics on every record: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	if _, body := a.get("/metrics"); !strings.Contains(body, `version="2"`) ||
		weirtest.MetricValue(body, "weir_plugin_reloads_total", `outcome="rolled_back"`) != 1 {
		t.Fatalf("metrics after the rollback do not show version 2 and the rollback:\n%s", body)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "dead.jsonl")); !strings.Contains(string(b), "assignment to entry in nil map") {
		t.Fatalf("the panics are not in the dead letters:\n%s", b)
	}

	// SIGHUP reloads every plugin too: v1 again, as version 4.
	install(v1)
	a.cmd.Process.Signal(syscall.SIGHUP)
	weirtest.PollUntil(t, 30*time.Second, "the reload on SIGHUP", func() bool {
		_, body := a.get("/metrics")
		return strings.Contains(body, `version="4"`)
	})

	// A page of another site cannot reach or drive the API.
	_, port, _ := net.SplitHostPort(a.addr)
	for _, tc := range []struct {
		name, method, path string
		headers            map[string]string
		want               int
	}{
		{"a foreign Host (DNS rebinding)", "GET", "/api/plugins", map[string]string{"Host": "evil.example:" + port}, 421},
		{"a foreign Host on metrics", "GET", "/metrics", map[string]string{"Host": "evil.example:" + port}, 421},
		{"a foreign Host on the probe", "GET", "/healthz", map[string]string{"Host": "evil.example:" + port}, 200},
		{"localhost", "GET", "/api/plugins", map[string]string{"Host": "localhost:" + port}, 200},
		{"a reload from another origin", "POST", "/api/plugins/reload", map[string]string{"Origin": "http://evil.example"}, 403},
		{"a reload from another site", "POST", "/api/plugins/reload", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"a reload as a GET", "GET", "/api/plugins/reload", nil, 405},
	} {
		if code, body := a.request(tc.method, tc.path, tc.headers); code != tc.want {
			t.Errorf("%s: %s %s: %d, want %d\n%s", tc.name, tc.method, tc.path, code, tc.want, body)
		}
	}
	a.stop()
	if code, _ := a.get("/healthz"); code != 0 {
		t.Errorf("the admin server still answers after exit")
	}
}

// TestAdminSeveralPipelines runs two pipelines in one process with
// --admin: /metrics has each one's series, with its own counts; a reload
// of one pipeline whose input is idle reports its new version on
// probation.
func TestAdminSeveralPipelines(t *testing.T) {
	v1, v2 := buildPlugin(t, "plugins/conformance/go/counter"), buildPlugin(t, "host/testdata/plugins/counterv2")
	dir := pipelineDir(t, `name: typed
sources: [{name: in, type: stdin}]
operators:
  - {name: by-k, type: key_by, field: k}
  - {name: count, type: map, plugin: count.wasm}
sinks: [{name: out, type: discard}]
`, map[string]string{"count.wasm": string(v1), "generated.yaml": `name: generated
sources: [{name: gen, type: generator, count: 70, key: k, fields: [{name: k, kind: sequence}]}]
operators:
  - {name: by-k, type: key_by, field: k}
  - {name: count, type: map, plugin: count.wasm}
sinks: [{name: out, type: discard}]
`})
	a := startAdminRun(t, dir, "pipeline.yaml", "generated.yaml")
	var in strings.Builder
	for i := range 30 {
		fmt.Fprintf(&in, "{\"k\":\"k%d\"}\n", i%3)
	}
	if _, err := io.WriteString(a.stdin, in.String()); err != nil {
		t.Fatal(err)
	}
	var body string
	weirtest.PollUntil(t, 30*time.Second, "both pipelines' counts", func() bool {
		_, body = a.get("/metrics")
		return weirtest.MetricValue(body, "weir_records_in_total", `pipeline="typed"`, `stage="sink"`) == 30 &&
			weirtest.MetricValue(body, "weir_records_in_total", `pipeline="generated"`, `stage="sink"`) == 70
	})
	for _, pipe := range []struct {
		name string
		n    float64
	}{{"typed", 30}, {"generated", 70}} {
		for _, m := range []struct {
			metric string
			labels []string
			want   float64
		}{
			{"weir_records_out_total", []string{`stage="source"`}, pipe.n},
			{"weir_records_in_total", []string{`stage="operator"`, `name="count"`}, pipe.n},
			{"weir_plugin_info", []string{`operator="count"`, `version="1"`}, 1},
		} {
			if got := weirtest.MetricValue(body, m.metric, append(m.labels, `pipeline="`+pipe.name+`"`)...); got != m.want {
				t.Errorf("%s %s%v = %v, want %v", pipe.name, m.metric, m.labels, got, m.want)
			}
		}
		for _, h := range []string{"weir_batch_latency_seconds_count", "weir_udf_call_seconds_count"} {
			if got := weirtest.MetricValue(body, h, `pipeline="`+pipe.name+`"`); got < 1 {
				t.Errorf("%s: histogram %s has no observations", pipe.name, h)
			}
		}
	}

	// The typed pipeline's input is idle: its new version cannot finish
	// probation, and the command says so rather than waiting for ever.
	if err := os.WriteFile(filepath.Join(dir, "count.wasm"), v2, 0o644); err != nil {
		t.Fatal(err)
	}
	res := a.reload(dir, "--pipeline", "typed", "--wait", "0")
	if res.Code != 0 || res.Stdout != "typed/count: swapped to version 2 (from 1), on probation: 0 of 10 batches so far, 0 of 0 records failed\n" {
		t.Fatalf("reload with --wait 0: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	if _, body := a.get("/metrics"); weirtest.MetricValue(body, "weir_plugin_info", `pipeline="typed"`, `version="2"`) != 1 ||
		weirtest.MetricValue(body, "weir_plugin_info", `pipeline="generated"`, `version="1"`) != 1 {
		t.Fatalf("after reloading the typed pipeline:\n%s", body)
	}
	var plugins map[string][]host.PluginStatus
	if _, body := a.get("/api/plugins"); json.Unmarshal([]byte(body), &plugins) != nil {
		t.Fatalf("api/plugins: %s", body)
	}
	if typed, gen := plugins["typed"], plugins["generated"]; len(typed) != 1 || typed[0].Probation == nil || typed[0].Probation.Of != 10 ||
		len(gen) != 1 || gen[0].Probation != nil {
		t.Fatalf("api/plugins: %+v, want the typed pipeline's version on probation, the generated one's not", plugins)
	}
	a.stdin.Close()
	a.stop()
}

// TestAdminRefusesOpenBind: beyond loopback, --admin needs a token.
func TestAdminRefusesOpenBind(t *testing.T) {
	dir := pipelineDir(t, `name: p
sources: [{name: in, type: generator, count: 1, fields: [{name: n, kind: sequence}]}]
sinks: [{name: out, type: discard}]
`, nil)
	res := weirtest.Run(t, dir, "", "run", "--admin", "0.0.0.0:0", "pipeline.yaml")
	if res.Code != 1 || !strings.Contains(res.Stderr, "set a token") {
		t.Fatalf("exit %d\n%s", res.Code, res.Stderr)
	}
}
