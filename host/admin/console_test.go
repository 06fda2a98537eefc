package admin_test

import (
	"context"
	"encoding/json"
	"io"
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
	"github.com/weir-stream/weir/host/admin/console"
	"github.com/weir-stream/weir/host/plugintool"
)

// TestAPIv1 reads the version 1 API while a pipeline runs: snake_case
// stage counts (the old route keeps its Go names), one pipeline by name,
// and its console view, with the graph, rates, a dead letter with its
// provenance and the records its sink wrote.
func TestAPIv1(t *testing.T) {
	r := startCounter(t)
	r.feed(100)
	code, body := weirtest.HTTPGet(t, r.base+"/api/v1/pipelines", "")
	var raw []map[string]any
	if err := json.Unmarshal([]byte(body), &raw); code != 200 || err != nil || len(raw) != 1 {
		t.Fatalf("api/v1/pipelines: %d %v\n%s", code, err, body)
	}
	stages, _ := raw[0]["stats"].(map[string]any)["stages"].([]any)
	if len(stages) != 4 {
		t.Fatalf("api/v1/pipelines stages: %v", stages)
	}
	for _, s := range stages {
		keys := []string{}
		for k := range s.(map[string]any) {
			keys = append(keys, k)
		}
		if want := "dead in name out stage"; strings.Join(sorted(keys), " ") != want {
			t.Errorf("a stage of api/v1/pipelines has the keys %v, want %s", sorted(keys), want)
		}
	}
	if raw[0]["console"] != "/pipelines/reload" {
		t.Errorf("console page %v, want /pipelines/reload", raw[0]["console"])
	}
	if _, old := weirtest.HTTPGet(t, r.base+"/api/pipeline", ""); !strings.Contains(old, `"Stage": "source"`) {
		t.Errorf("the old /api/pipeline changed its stages' form:\n%s", old)
	}
	var one admin.PipelineV1
	if code, body := weirtest.HTTPGet(t, r.base+"/api/v1/pipelines/reload", ""); code != 200 || json.Unmarshal([]byte(body), &one) != nil || one.Name != "reload" {
		t.Errorf("api/v1/pipelines/reload: %d\n%s", code, body)
	}
	if code, _ := weirtest.HTTPGet(t, r.base+"/api/v1/pipelines/nope/console", ""); code != 404 {
		t.Errorf("the console of a pipeline not registered: %d, want 404", code)
	}

	view := consoleView(t, r.base) // starts the sampling of the sink
	ids := []string{}
	for _, n := range view.Nodes {
		ids = append(ids, n.ID)
	}
	if want := "source:in operator:by-k operator:count sink:out dead_letter"; strings.Join(ids, " ") != want {
		t.Errorf("nodes %v, want %s", ids, want)
	}
	if _, err := io.WriteString(r.in, "not json\n"); err != nil {
		t.Fatal(err)
	}
	r.feed(130)
	weirtest.PollUntil(t, 20*time.Second, "the dead letter, the sink's records and count's batch times in the view", func() bool {
		view = consoleView(t, r.base)
		return len(view.DeadLetters) == 1 && len(view.SinkSamples["out"]) == 20 && view.Nodes[2].BatchP99Seconds != nil
	})
	dl := view.DeadLetters[0]
	if dl.Stage != "in" || !strings.Contains(dl.Reason, "not JSON") || dl.Value != "not json" || dl.Origin != "in offset 100 line 101" {
		t.Errorf("dead letter %+v, want the source's of the line not json, with its origin", dl)
	}
	if s := view.SinkSamples["out"][19].Value; !regexp.MustCompile(`^\{"key":"k\d","count":\d+\}$`).MatchString(s) {
		t.Errorf("the sink's last record %q is not the counter's", s)
	}
	count := view.Nodes[2]
	if count.Plugin == "" || count.Version != 1 || count.In < 130 || count.Backpressure == nil || count.BatchP99Seconds == nil {
		t.Errorf("count's node %+v, want its plugin's version, counts, backpressure and batch times", count)
	}
	if view.Nodes[3].Backpressure != nil || len(view.Edges) != 4 || !view.Edges[3].Dead {
		t.Errorf("sink node %+v, edges %+v: want no backpressure on the sink, and by-k's way to the dead letters", view.Nodes[3], view.Edges)
	}
}

func sorted(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

func consoleView(t *testing.T, base string) console.View {
	t.Helper()
	code, body := weirtest.HTTPGet(t, base+"/api/v1/pipelines/reload/console", "")
	var v console.View
	if err := json.Unmarshal([]byte(body), &v); code != 200 || err != nil {
		t.Fatalf("console view: %d %v\n%s", code, err, body)
	}
	return v
}

// TestConsolePage: the page and every file it loads are served from the
// binary, without a token, and under the Host check; the API the page
// reads keeps the token, and its posts the CSRF check.
func TestConsolePage(t *testing.T) {
	a, port := startAdmin(t, admin.Options{Listen: "127.0.0.1:0", Token: "s3cret"})
	base := "http://" + a.Addr()
	code, page, h := adminDo(t, "GET", base+"/", "", nil)
	if code != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("GET /: %d %v\n%s", code, h, page)
	}
	if strings.Contains(page, "//") {
		t.Errorf("the page names another host:\n%s", page)
	}
	refs := regexp.MustCompile(`(?:src|stylesheet" href)="([^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(refs) != 2 {
		t.Fatalf("the page loads %v, want its script and style sheet", refs)
	}
	for _, m := range refs {
		if code, body, _ := adminDo(t, "GET", base+m[1], "", nil); code != 200 || len(body) < 100 {
			t.Errorf("GET %s: %d, %d bytes", m[1], code, len(body))
		}
	}
	for _, tc := range []struct {
		method, path, host string
		headers            map[string]string
		want               int
	}{
		{"GET", "/pipelines/any", "", nil, 200},
		{"GET", "/console/missing.js", "", nil, 404},
		{"GET", "/", "evil.example:" + port, nil, http.StatusMisdirectedRequest},
		{"GET", "/api/v1/pipelines", "", nil, 401},
		{"GET", "/api/v1/pipelines", "", map[string]string{"Authorization": "Bearer s3cret"}, 200},
		{"POST", "/api/v1/plugins/reload", "", map[string]string{"Authorization": "Bearer s3cret", "Origin": "http://evil.example"}, 403},
		{"POST", "/api/v1/plugins/reload", "", map[string]string{"Authorization": "Bearer s3cret", "Sec-Fetch-Site": "cross-site"}, 403},
		{"POST", "/api/v1/plugins/reload", "", map[string]string{"Authorization": "Bearer s3cret", "Origin": base, "Sec-Fetch-Site": "same-origin"}, 404},
	} {
		if code, body, h := adminDo(t, tc.method, base+tc.path, tc.host, tc.headers); code != tc.want {
			t.Errorf("%s %s (Host %q, %v): %d, want %d\n%s", tc.method, tc.path, tc.host, tc.headers, code, tc.want, body)
		} else {
			noCORS(t, tc.path, h)
		}
	}
}

// BenchmarkConsoleView measures the server's work for one poll of the
// console: the view of a running pipeline of five stages, encoded as
// JSON. At one poll a second, its time per op is the share of a core the
// console costs the process (the sink's records are sampled meanwhile).
//
//	go test -run='^$' -bench=ConsoleView ./host/admin/
func BenchmarkConsoleView(b *testing.B) {
	ctx := context.Background()
	plugin, _, err := plugintool.Build(ctx, filepath.Join(weirtest.Root(b), "plugins/conformance/go/counter"), "")
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "pipeline.yaml")
	if err := os.WriteFile(path, []byte(`name: view
sources:
  - {name: gen, type: generator, rate: 20000, key: k, fields: [{name: k, kind: random_choice, values: ["a", "b", "c"]}, {name: ts, kind: timestamp}], event_time: {field: ts, format: epoch_ms}}
operators:
  - {name: by-k, type: key_by, field: k}
  - {name: count, type: map, plugin: "`+plugin+`"}
  - {name: per-key, type: window, kind: tumbling, size: 1s, key_field: key, aggregates: [{func: count, as: n}]}
sinks: [{name: out, type: discard}]
`), 0o644); err != nil {
		b.Fatal(err)
	}
	p, err := host.Load(ctx, path, host.Options{})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { p.Run(runCtx); close(done) }()
	defer func() { stop(); <-done; p.Close(ctx) }()
	var views console.Views
	weirtest.PollUntil(b, 30*time.Second, "the sink's records in the view", func() bool {
		return len(views.View(p).SinkSamples["out"]) > 0
	})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := json.Marshal(views.View(p)); err != nil {
			b.Fatal(err)
		}
	}
}
