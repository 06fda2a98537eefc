package host_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/host"
)

func httpGet(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metricValue returns the value of the sample of metric whose labels
// include every one of labels, or -1.
func metricValue(body, metric string, labels ...string) float64 {
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, metric+"{") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if ok {
			f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

func TestAdminRefusesOpenBindWithoutToken(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0"} {
		if _, err := host.StartAdmin(host.AdminOptions{Listen: addr}); !errors.Is(err, host.ErrAdminToken) {
			t.Errorf("%s without a token: %v, want ErrAdminToken", addr, err)
		}
	}
	a, err := host.StartAdmin(host.AdminOptions{Listen: "0.0.0.0:0", Token: "s3cret"})
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
		if code, _ := httpGet(t, base+tc.path, tc.token); code != tc.want {
			t.Errorf("GET %s with token %q: %d, want %d", tc.path, tc.token, code, tc.want)
		}
	}
	// A bare port listens on loopback, no token needed.
	b, err := host.StartAdmin(host.AdminOptions{Listen: ":0"})
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
	var base string
	r := startReloadRigWith(t, buildModule(t, "plugins/conformance/go/counter"), false, func(p *host.Pipeline) {
		a, err := host.StartAdmin(host.AdminOptions{Listen: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		if err := a.Register(p); err != nil {
			t.Fatal(err)
		}
		base = "http://" + a.Addr()
	})
	r.feed(100)
	pollUntil(t, 10*time.Second, "the counters", func() bool {
		_, body := httpGet(t, base+"/metrics", "")
		return metricValue(body, "weir_records_out_total", `name="count"`) == 100
	})
	_, body := httpGet(t, base+"/metrics", "")
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
		if got := metricValue(body, want.metric, want.labels...); got != want.value {
			t.Errorf("%s%v = %v, want %v", want.metric, want.labels, got, want.value)
		}
	}
	for _, h := range []string{"weir_batch_latency_seconds_count", "weir_udf_call_seconds_count"} {
		if !regexp.MustCompile(`(?m)^` + h + `\{[^}]*\} [1-9]`).MatchString(body) {
			t.Errorf("histogram %s has no observations:\n%s", h, grepLines(body, "weir_"))
		}
	}
	if code, _ := httpGet(t, base+"/readyz", ""); code != 200 {
		t.Errorf("readyz while running: %d", code)
	}

	code, body := httpGet(t, base+"/api/pipeline", "")
	var infos []host.PipelineInfo
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
	code, body = httpGet(t, base+"/api/state?operator=count&key=k3", "")
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
		if code, body := httpGet(t, base+"/api/state?"+tc.query, ""); code != tc.code {
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
	pollUntil(t, 10*time.Second, "the end of the run", func() bool { return r.p.Stats().State == host.StateFinished })
	if code, _ := httpGet(t, base+"/readyz", ""); code != 503 {
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
