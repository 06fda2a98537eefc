package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host"
	"github.com/weir-stream/weir/host/admin/console"
)

// chromiumPath is Debian's chromium, which scripts/install-toolchains.sh
// installs.
const chromiumPath = "/usr/bin/chromium"

// consoleHealthy is the pipeline whose console the browser test drives: a
// key_by, a Wasm map with keyed state, a plugin that dead-letters a
// record of each run of the counts (key c's seventh), and a window, with
// checkpoints.
const consoleHealthy = `name: healthy
state: {backend: badger, dir: state}
checkpoints: {interval: 1s, delivery: at_least_once}
sources:
  - name: gen
    type: generator
    rate: 1000
    key: k
    fields: [{name: k, kind: random_choice, values: ["a", "b", "c"]}, {name: ts, kind: timestamp}]
    event_time: {field: ts, format: epoch_ms}
operators:
  - {name: by-k, type: key_by, field: k}
  - {name: count, type: map, plugin: count.wasm}
  - {name: check, type: map, plugin: fail_on.wasm, config: {bad: '{"key":"c","count":7}'}}
  - name: per-key
    type: window
    kind: tumbling
    size: 1s
    key_field: key
    aggregates: [{func: count, as: n}]
sinks: [{name: out, type: discard}]
dead_letter: {type: file, path: dead.jsonl}
`

// consoleLagging runs beside it: a second source replays old event time,
// slower than the clock, so that its partition falls ever further behind,
// and the count operator runs a shadow candidate whose outputs differ.
const consoleLagging = `name: lagging
sources:
  - name: live
    type: generator
    rate: 500
    key: k
    fields: [{name: k, kind: random_choice, values: ["a", "b", "c"]}, {name: ts, kind: timestamp}]
    event_time: {field: ts, format: epoch_ms}
  - name: replay
    type: generator
    rate: 50
    key: k
    fields: [{name: k, kind: random_choice, values: ["a", "b"]}, {name: ts, kind: sequence, start: %d}]
    event_time: {field: ts, format: epoch_ms}
operators:
  - {name: by-k, type: key_by, field: k}
  - {name: count, type: map, plugin: count.wasm, shadow: count_v2.wasm}
sinks: [{name: out, type: discard}]
`

// TestConsoleInBrowser runs two pipelines with --admin, opens the console
// in headless Chromium and checks what a person would see: every node of
// the graph, rates that become non-zero, a dead letter with its reason, a
// watermark that advances, a checkpoint, the records the sink wrote, a
// plugin swapped by the page's Reload button and the state box's answer;
// the other pipeline's page shows its lagging partition and its
// shadow's divergences. It saves screenshots into the test's directory,
// and with WEIR_UPDATE_SCREENSHOTS=1 into docs/ for the README.
func TestConsoleInBrowser(t *testing.T) {
	needChromium(t)
	v1, v2 := buildPlugin(t, "plugins/conformance/go/counter"), buildPlugin(t, "host/testdata/plugins/counterv2")
	dir := pipelineDir(t, consoleHealthy, map[string]string{"count.wasm": string(v1), "count_v2.wasm": string(v2),
		"fail_on.wasm": string(buildPlugin(t, "plugins/conformance/go/fail_on")),
		"lagging.yaml": fmt.Sprintf(consoleLagging, time.Now().Add(-2*time.Minute).UnixMilli())})
	proc := weirtest.Start(t, dir, "weir", nil, "run", "--admin", "127.0.0.1:0", "--watch=false", "--status", "never",
		filepath.Join(dir, "pipeline.yaml"), filepath.Join(dir, "lagging.yaml"))
	base := "http://" + proc.AdminAddr(t)
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1400, 1000), chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}

	// Two pipelines: / lists them, each links to its page.
	waitDOM(t, ctx, "the index to list both pipelines",
		`[...document.querySelectorAll('#index-list a')].map(a => a.textContent).join(",") === "healthy,lagging"`)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/pipelines/healthy")); err != nil {
		t.Fatal(err)
	}
	waitDOM(t, ctx, "the graph's nodes", `document.querySelectorAll('#graph g.node').length === 7`)
	ids := evalJS[[]string](t, ctx, `[...document.querySelectorAll('#graph g.node')].map(g => g.dataset.id)`)
	want := []string{"source:gen", "operator:by-k", "operator:count", "operator:check", "operator:per-key", "sink:out", "dead_letter"}
	if !slices.Equal(ids, want) {
		t.Fatalf("graph nodes %v, want %v", ids, want)
	}
	waitDOM(t, ctx, "every node's rate to become non-zero", `[...document.querySelectorAll('#graph g.node')]
		.filter(g => g.dataset.stage !== "dead_letter")
		.every(g => Number(g.dataset.stage === "source" ? g.dataset.outRate : g.dataset.inRate) > 0)`)
	waitDOM(t, ctx, "a dead letter with its reason", `[...document.querySelectorAll('#dead-letters li')].some(li =>
		li.querySelector('.reason').textContent.includes('bad input: {"key":"c","count":7}') && li.textContent.includes('at check'))`)
	waitDOM(t, ctx, "a watermark", `document.querySelector('#watermark').dataset.ms !== ""`)
	wm1 := evalJS[int64](t, ctx, `Number(document.querySelector('#watermark').dataset.ms)`)
	waitDOM(t, ctx, "the watermark to advance", fmt.Sprintf(`Number(document.querySelector('#watermark').dataset.ms) > %d`, wm1))
	waitDOM(t, ctx, "a completed checkpoint that wrote state", `[...document.querySelectorAll('#checkpoints tbody tr')].some(tr =>
		tr.lastChild.textContent === "completed" && Number(tr.children[3].textContent) > 0 &&
		Number(tr.children[4].textContent.split(" ")[0]) > 0)`)
	waitDOM(t, ctx, "a sink sample", `document.querySelectorAll('#sinks [data-sink="out"] li').length > 0`)
	shoot(t, ctx, "console-healthy.png")

	// The Reload button swaps the plugin for the module now in its file.
	if err := os.WriteFile(filepath.Join(dir, "count.wasm"), v2, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#plugins tr[data-operator="count"] button.reload`))); err != nil {
		t.Fatal(err)
	}
	waitDOM(t, ctx, "the page to show version 2 after the reload", `document.querySelector('#graph g[data-id="operator:count"]').dataset.version === "2" &&
		document.querySelector('#plugins tr[data-operator="count"] td:nth-child(2)').textContent === "v2" &&
		document.querySelector('#plugin-msg').textContent.includes("count: swapped, version 2")`)

	// The state box reads count's state for a key, through /api/v1/state.
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`#state-operator`), "count"),
		chromedp.SendKeys(chromedp.CSS(`#state-key`), "a"), chromedp.Click(chromedp.CSS(`#state-form button`))); err != nil {
		t.Fatal(err)
	}
	waitDOM(t, ctx, "count's value state for key a", `(() => { const e = JSON.parse(document.querySelector('#state-result').textContent);
		return e.length === 1 && e[0].kind === "value" && e[0].name === "count" && e[0].value_hex.length === 16; })()`)

	// The lagging pipeline's page: its replayed partition falls behind, and
	// its shadow's divergences show beside the Promote button.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/pipelines/lagging")); err != nil {
		t.Fatal(err)
	}
	waitDOM(t, ctx, "the replayed partition, over a minute behind", `[...document.querySelectorAll('#partitions tbody tr')].some(tr =>
		tr.children[0].textContent === "replay" && tr.children[5].className === "behind")`)
	waitDOM(t, ctx, "the shadow's divergences and its Promote button", `document.querySelectorAll('#divergences pre').length > 0 &&
		!document.querySelector('#plugins tr[data-operator="count"] button.promote').hidden`)
	shoot(t, ctx, "console-lagging-shadow.png")
}

// needChromium skips the test when Debian's chromium is missing, saying
// how to install it, or fails it where toolchains are required (CI, whose
// scripts/install-toolchains.sh installs it).
func needChromium(t testing.TB) {
	t.Helper()
	_, err := os.Stat(chromiumPath)
	if err == nil {
		return
	}
	msg := fmt.Sprintf("the console's browser test needs Debian's chromium at %s: run scripts/install-toolchains.sh (%v)", chromiumPath, err)
	if v := os.Getenv(weirtest.RequireToolchains); v != "" && v != "0" {
		t.Fatalf("%s (%s=%s: a missing toolchain fails the test here)", msg, weirtest.RequireToolchains, v)
	}
	t.Skip(msg)
}

// browser starts headless Chromium for the test, with a fresh profile and
// the flags that keep it off the network, and returns its tab's context.
func browser(t testing.TB) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting %s: %v", chromiumPath, err)
	}
	return ctx
}

// evalJS evaluates expr in the page, failing the test on error.
func evalJS[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := evalCtx[T](ctx, expr)
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

func evalCtx[T any](ctx context.Context, expr string) (T, error) {
	ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return chromedp.Run(ectx, chromedp.Evaluate[T](expr))
}

// waitDOM polls the page until the JavaScript expression cond is true; a
// cond that throws (an element not there yet) counts as false.
func waitDOM(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	expr := "(() => { try { return !!(" + cond + "); } catch (e) { return false; } })()"
	weirtest.PollUntil(t, 60*time.Second, what, func() bool {
		ok, err := evalCtx[bool](ctx, expr)
		return err == nil && ok
	})
}

// shoot saves a screenshot of the whole page into the test's directory,
// and, with WEIR_UPDATE_SCREENSHOTS=1, into docs/ for the README.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{t.TempDir()}
	if d := os.Getenv("WEIR_TEST_ARTIFACTS"); d != "" {
		dirs = append(dirs, d)
	}
	if os.Getenv("WEIR_UPDATE_SCREENSHOTS") == "1" {
		dirs = append(dirs, filepath.Join(weirtest.Root(t), "docs"))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshot %s saved in %s", name, strings.Join(dirs, ", "))
}

// consoleCostPipeline runs as fast as it can: a generator, a key_by, a
// Wasm map with keyed state and a window, into discard.
const consoleCostPipeline = `name: cost
sources:
  - name: gen
    type: generator
    key: k
    fields: [{name: k, kind: random_choice, values: ["a", "b", "c", "d"]}, {name: ts, kind: timestamp}]
    event_time: {field: ts, format: epoch_ms}
operators:
  - {name: by-k, type: key_by, field: k}
  - {name: count, type: map, plugin: count.wasm}
  - name: per-key
    type: window
    kind: tumbling
    size: 1s
    key_field: key
    aggregates: [{func: count, as: n}]
sinks: [{name: out, type: discard}]
`

// BenchmarkConsoleCost measures what serving the console to a browser
// costs a pipeline: its throughput in phases of consolePhase, taking turns
// with Chromium on a blank page and on the pipeline's console (polling
// once a second), as console/blank; then the server's time per poll of the
// console's view. Run it once:
//
//	go test -run='^$' -bench=ConsoleCost -benchtime=1x ./cmd/weir/
func BenchmarkConsoleCost(b *testing.B) {
	needChromium(b)
	res := weirtest.Run(b, weirtest.Root(b), "", "plugin", "build", "plugins/conformance/go/counter")
	module, err := os.ReadFile(strings.TrimSpace(res.Stdout))
	if res.Code != 0 || err != nil {
		b.Fatalf("plugin build: %s %v", res.Stderr, err)
	}
	dir := b.TempDir()
	for name, content := range map[string][]byte{"pipeline.yaml": []byte(consoleCostPipeline), "count.wasm": module} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	proc := weirtest.Start(b, dir, "weir", nil, "run", "--admin", "127.0.0.1:0", "--watch=false", "--status", "never", filepath.Join(dir, "pipeline.yaml"))
	addr := proc.AdminAddr(b)
	ctx := browser(b)
	weirtest.PollUntil(b, 30*time.Second, "the pipeline to run", func() bool { return weirtest.SourceRecords(addr) > 0 })
	pages := map[bool]string{false: "about:blank", true: "http://" + addr + "/pipelines/cost"}
	rates := map[bool][]float64{}
	for i := range 2 * consolePairs {
		console := i%2 == 1
		if err := chromedp.Do(ctx, chromedp.Navigate(pages[console])); err != nil {
			b.Fatal(err)
		}
		rates[console] = append(rates[console], throughput(addr, consolePhase))
	}
	ratio := median(rates[true]) / median(rates[false])
	b.ReportMetric(median(rates[false]), "records/s-blank")
	b.ReportMetric(median(rates[true]), "records/s-console")
	b.ReportMetric(ratio, "console/blank")
	b.ReportMetric(pollTime(b, "http://"+addr+"/api/v1/pipelines/cost/console").Seconds()*1e6, "µs/poll")
	b.Logf("records/s with a blank page %v, with the console %v", rates[false], rates[true])
}

// The paired phases of BenchmarkConsoleCost.
const (
	consolePairs = 5
	consolePhase = 6 * time.Second
)

// throughput returns the records per second the sources read over d
// (after a second for the page to settle).
func throughput(addr string, d time.Duration) float64 {
	time.Sleep(time.Second) // a benchmark's phase, not a test's wait
	before, start := weirtest.SourceRecords(addr), time.Now()
	time.Sleep(d)
	return float64(weirtest.SourceRecords(addr)-before) / time.Since(start).Seconds()
}

// pollTime returns the mean time the server takes to answer the
// console's view, over 200 requests.
func pollTime(b *testing.B, url string) time.Duration {
	const n = 200
	start := time.Now()
	for range n {
		code, _ := weirtest.HTTPGet(b, url, "")
		if code != 200 {
			b.Fatalf("GET %s: %d", url, code)
		}
	}
	return time.Since(start) / n
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestConsoleLargePipeline serves the console's page with a pipeline of
// 50 operators and 1,000 partitions whose every count and watermark
// changes at each poll, and checks that the page keeps up: the whole
// graph is drawn, the partition table holds the 100 furthest behind,
// and the views keep being rendered. It logs the slowest render.
func TestConsoleLargePipeline(t *testing.T) {
	needChromium(t)
	var polls atomic.Int64
	mux := http.NewServeMux()
	mux.Handle("GET /pipelines/{name}", console.Page())
	mux.Handle("GET /console/", console.Assets())
	mux.HandleFunc("GET /api/v1/pipelines", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`[{"name":"big"}]`))
	})
	mux.HandleFunc("GET /api/v1/pipelines/big/console", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(largeView(polls.Add(1)))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1400, 1000), chromedp.Navigate(srv.URL+"/pipelines/big")); err != nil {
		t.Fatal(err)
	}
	waitDOM(t, ctx, "the graph's 53 nodes and 100 partition rows", `document.querySelectorAll('#graph g.node').length === 53 &&
		document.querySelectorAll('#partitions tbody tr').length === 100`)
	waitDOM(t, ctx, "ten renders", `window.weirConsole.renders >= 10`)
	waitDOM(t, ctx, "the last poll's rates on the last operator", fmt.Sprintf(
		`Number(document.querySelector('#graph g[data-id="operator:op49"]').dataset.inRate) >= %d`, 1000*10))
	st := evalJS[map[string]float64](t, ctx, `window.weirConsole`)
	t.Logf("50 operators, 1,000 partitions: %.0f renders, the slowest (the first, which draws the graph) %.1f ms, the last %.1f ms",
		st["renders"], st["maxRenderMs"], st["lastRenderMs"])
	shoot(t, ctx, "console-large.png")
}

// largeView is the view of a pipeline of 50 operators and 1,000
// partitions at its poll n: every rate and watermark moves with n.
func largeView(n int64) console.View {
	v := console.View{Pipeline: "big", State: "running", NowMs: time.Now().UnixMilli(), Checkpoints: []host.CheckpointRecord{},
		DeadLetters: []host.DeadLetterSample{}, Plugins: []host.PluginStatus{}, SinkSamples: map[string][]host.SinkSample{},
		Partitions: console.Partitions{Total: 1000, Rows: []host.PartitionStatus{}}}
	bp := 0.3
	add := func(id, stage string, layer int) {
		v.Nodes = append(v.Nodes, console.Node{ID: id, Stage: stage, Name: id, Type: "map", Layer: layer, In: n * 1000,
			InPerSecond: float64(n * 1000), OutPerSecond: float64(n * 1000), Backpressure: &bp})
		if len(v.Nodes) > 1 {
			v.Edges = append(v.Edges, console.Edge{From: v.Nodes[len(v.Nodes)-2].ID, To: id})
		}
	}
	add("source:in", "source", 0)
	for i := range 50 {
		add(fmt.Sprintf("operator:op%d", i), "operator", i+1)
	}
	add("sink:out", "sink", 51)
	v.Nodes = append(v.Nodes, console.Node{ID: "dead_letter", Stage: "dead_letter", Name: "dead letters", Layer: 51})
	for i := range 100 {
		wm := v.NowMs - int64(100-i)*1000 - n
		v.Partitions.Rows = append(v.Partitions.Rows, host.PartitionStatus{Source: "in", Topic: "t", Partition: int32(i * 10), Offset: n * 1000, WatermarkMs: &wm})
	}
	return v
}
