package main_test

import (
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
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

// TestAdminAndPluginReload runs a pipeline with --admin, reads its health
// and metrics, reloads its plugin with weir plugin reload after replacing
// the module, and with SIGHUP, and checks the refusals.
func TestAdminAndPluginReload(t *testing.T) {
	bin := weirtest.Weir(t)
	root := weirtest.Root(t)
	build := func(dir string) []byte {
		res := weirtest.Run(t, root, "", "plugin", "build", dir)
		if res.Code != 0 {
			t.Fatalf("plugin build %s: %s", dir, res.Stderr)
		}
		b, err := os.ReadFile(strings.TrimSpace(res.Stdout))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	v1, v2 := build("plugins/conformance/go/counter"), build("host/testdata/plugins/counterv2")
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
`, map[string]string{"count.wasm": string(v1)})
	addr := freePort(t)
	cmd := exec.Command(bin, "run", "--admin", addr, "--watch=false", "--status", "never", "pipeline.yaml")
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if code, _ := get("/readyz"); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never ready\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, `weir_plugin_info{operator="count",pipeline="live"`) {
		t.Fatalf("metrics: %d\n%s", code, body)
	}

	if err := os.WriteFile(filepath.Join(dir, "count.wasm"), v2, 0o644); err != nil {
		t.Fatal(err)
	}
	res := weirtest.Run(t, dir, "", "plugin", "reload", "--admin", addr, "count")
	if res.Code != 0 || strings.TrimSpace(res.Stdout) != "reloaded" {
		t.Fatalf("plugin reload: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	if _, body := get("/metrics"); !strings.Contains(body, `operator="count",pipeline="live",sha256=`) || !strings.Contains(body, `version="2"`) {
		t.Fatalf("metrics after the reload do not show version 2:\n%s", body)
	}
	res = weirtest.Run(t, dir, "", "plugin", "reload", "--admin", addr, "nope")
	if res.Code != 1 || !strings.Contains(res.Stderr, `no plugin operator of that name: "nope"`) {
		t.Fatalf("reload of a missing operator: exit %d\n%s", res.Code, res.Stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "count.wasm"), []byte("not wasm"), 0o644); err != nil {
		t.Fatal(err)
	}
	res = weirtest.Run(t, dir, "", "plugin", "reload", "--admin", addr)
	if res.Code != 1 || !strings.Contains(res.Stderr, "not a WebAssembly module") {
		t.Fatalf("reload of a broken module: exit %d\n%s", res.Code, res.Stderr)
	}
	// SIGHUP reloads every plugin too: v1 again.
	if err := os.WriteFile(filepath.Join(dir, "count.wasm"), v1, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	deadline = time.Now().Add(30 * time.Second)
	for {
		if _, body := get("/metrics"); strings.Contains(body, `version="3"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("SIGHUP did not reload\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("weir exited with %v\n%s", err, stderr.String())
	}
	if code, _ := get("/healthz"); code != 0 {
		t.Errorf("the admin server still answers after exit")
	}
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
