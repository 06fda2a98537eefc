package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// pipelineDir writes pipeline.yaml (with {{root}} replaced by the module
// root) and any extra files into a temporary directory and returns it.
func pipelineDir(t *testing.T, yaml string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	yaml = strings.ReplaceAll(yaml, "{{root}}", weirtest.Root(t))
	if err := os.WriteFile(filepath.Join(dir, "pipeline.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// deadLetters reads a dead-letter file of JSON lines.
func deadLetters(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("dead letter %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

const fiveReadings = `{"id":"a","v":1}
{"id":"b","v":2}
this is not JSON
{"id":"c","v":3}
{"id":"d","v":4}
`

// TestBadInput covers each kind of bad input: the exit code, and an error
// that says what and where.
func TestBadInput(t *testing.T) {
	tests := []struct {
		name     string
		yaml     string
		args     []string // default: run pipeline.yaml
		wantCode int
		wantErr  []string // substrings of stderr
	}{
		{
			name: "missing plugin file",
			yaml: `name: p
sources: [{name: in, type: stdin}]
operators:
  - name: up
    type: map
    plugin: plugins/nowhere.wasm
sinks: [{name: out, type: stdout}]
`,
			wantCode: 3,
			wantErr:  []string{"pipeline.yaml:6:13", `operators[0] "up".plugin`, "nowhere.wasm"},
		},
		{
			name: "module without the ABI export",
			yaml: `name: p
sources: [{name: in, type: stdin}]
operators:
  - name: up
    type: map
    plugin: {{root}}/host/internal/wasm/testdata/no_version.wasm
sinks: [{name: out, type: stdout}]
`,
			wantCode: 4,
			wantErr:  []string{"pipeline.yaml:6:13", `"up"`, "no_version.wasm", "weir_abi_v1"},
		},
		{
			name: "validate: a map plugin as a filter",
			yaml: `name: p
sources: [{name: in, type: stdin}]
operators:
  - name: f
    type: filter
    plugin: {{root}}/plugins/identity
sinks: [{name: out, type: stdout}]
`,
			args:     []string{"validate", "pipeline.yaml"},
			wantCode: 4,
			wantErr:  []string{"pipeline.yaml:6:13", `operator "f"`, "the plugin implements map, not filter"},
		},
		{
			name: "unknown field",
			yaml: `name: p
sources: [{name: in, type: stdin}]
operators:
  - name: up
    type: map
    plugn: x.wasm
sinks: [{name: out, type: stdout}]
`,
			wantCode: 3,
			wantErr:  []string{"pipeline.yaml:6:5", `unknown field "plugn"`, `did you mean "plugin"`},
		},
		{
			name: "validate reports the same",
			yaml: `name: p
sources: [{name: in, type: stdin, formt: jsonl}]
sinks: [{name: out, type: stdout}]
`,
			args:     []string{"validate", "pipeline.yaml"},
			wantCode: 3,
			wantErr:  []string{"pipeline.yaml:2:35", `unknown field "formt"`},
		},
		{
			name:     "no pipeline argument",
			args:     []string{"run"},
			wantCode: 2,
			wantErr:  []string{"want one or more pipeline files"},
		},
		{
			name:     "unknown flag",
			args:     []string{"run", "--bogus", "pipeline.yaml"},
			wantCode: 2,
			wantErr:  []string{"bogus"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := pipelineDir(t, tt.yaml, nil)
			args := tt.args
			if args == nil {
				args = []string{"run", "pipeline.yaml"}
			}
			res := weirtest.Run(t, dir, "", args...)
			if res.Code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", res.Code, tt.wantCode, res.Stderr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(res.Stderr, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, res.Stderr)
				}
			}
			if res.Stdout != "" {
				t.Errorf("stdout = %q, want nothing", res.Stdout)
			}
		})
	}
}

// TestNonJSONRecordGoesToDeadLetter checks that a record that is not JSON
// goes to the dead-letter output with its position and the reason, that
// every other record comes out, and that the exit summary counts it.
func TestNonJSONRecordGoesToDeadLetter(t *testing.T) {
	dir := pipelineDir(t, `name: p
sources: [{name: in, type: file, path: in.jsonl}]
sinks: [{name: out, type: stdout}]
dead_letter: {type: file, path: dlq.jsonl}
`, map[string]string{"in.jsonl": fiveReadings})
	res := weirtest.Run(t, dir, "", "run", "pipeline.yaml")
	if res.Code != 0 {
		t.Fatalf("exit %d\n%s", res.Code, res.Stderr)
	}
	if want := strings.ReplaceAll(fiveReadings, "this is not JSON\n", ""); res.Stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", res.Stdout, want)
	}
	dead := deadLetters(t, filepath.Join(dir, "dlq.jsonl"))
	if len(dead) != 1 {
		t.Fatalf("dead letters: %v", dead)
	}
	d := dead[0]
	if d["value"] != "this is not JSON" || d["line"] != 3.0 || d["offset"] != 2.0 || d["source"] != "in" ||
		!strings.Contains(d["reason"].(string), "in.jsonl:3: not JSON") {
		t.Errorf("dead letter = %v", d)
	}
	if !strings.Contains(res.Stderr, "dead_letters=1") {
		t.Errorf("exit summary does not count the dead letter:\n%s", res.Stderr)
	}
}

// TestTrapOnOneRecord runs a plugin that traps on one record: that record
// goes to the dead-letter output, and every other record comes out in order.
func TestTrapOnOneRecord(t *testing.T) {
	t.Parallel()
	dir := pipelineDir(t, `name: p
sources: [{name: in, type: stdin, format: lines}]
operators:
  - name: trappy
    type: map
    plugin: {{root}}/plugins/conformance/go/trap_on
sinks: [{name: out, type: stdout, format: raw}]
dead_letter: {type: file, path: dlq.jsonl}
`, nil)
	res := weirtest.Run(t, dir, "one\ntwo\ntrap\nthree\nfour\n", "run", "pipeline.yaml")
	if res.Code != 0 {
		t.Fatalf("exit %d\n%s", res.Code, res.Stderr)
	}
	if want := "one\ntwo\nthree\nfour\n"; res.Stdout != want {
		t.Errorf("stdout = %q, want %q", res.Stdout, want)
	}
	dead := deadLetters(t, filepath.Join(dir, "dlq.jsonl"))
	if len(dead) != 1 || dead[0]["value"] != "trap" || dead[0]["stage"] != "trappy" || dead[0]["line"] != 3.0 {
		t.Fatalf("dead letters = %v", dead)
	}
}

// TestSignalDrains sends SIGTERM to a pipeline reading an open stdin and
// checks that it drains what it read and exits 0.
func TestSignalDrains(t *testing.T) {
	dir := pipelineDir(t, `name: p
sources: [{name: in, type: stdin}]
sinks: [{name: out, type: stdout}]
`, nil)
	cmd := exec.Command(weirtest.Weir(t), "run", "pipeline.yaml")
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	stdin.Write([]byte("{\"n\":1}\n{\"n\":2}\n"))
	// Wait until both records are through, then signal.
	buf := make([]byte, 0, 64)
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(string(buf), "\n") < 2 && time.Now().Before(deadline) {
		chunk := make([]byte, 64)
		n, err := stdout.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if err != nil {
			break
		}
	}
	if got := string(buf); got != "{\"n\":1}\n{\"n\":2}\n" {
		t.Fatalf("before the signal, stdout = %q", got)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err = cmd.Wait()
	if err != nil {
		t.Fatalf("weir exited with %v after SIGTERM\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "drained") {
		t.Errorf("no drain message in the log:\n%s", stderr.String())
	}
}

func TestPluginCommands(t *testing.T) {
	root := weirtest.Root(t)
	out := filepath.Join(t.TempDir(), "identity.wasm")
	res := weirtest.Run(t, root, "", "plugin", "build", "plugins/identity", "-o", out)
	if res.Code != 0 || strings.TrimSpace(res.Stdout) != out {
		t.Fatalf("plugin build: exit %d, stdout %q\n%s", res.Code, res.Stdout, res.Stderr)
	}
	res = weirtest.Run(t, root, "", "plugin", "inspect", out)
	if res.Code != 0 {
		t.Fatalf("plugin inspect: exit %d\n%s", res.Code, res.Stderr)
	}
	// identity is a Go map plugin: it exports every operation's entry
	// points, and inspect lists the one it registered.
	for _, want := range []string{"abi:     v1", "ops:     map\n", "weir_map", "weir_filter", "weir_ops", "weir_alloc", "wasi_snapshot_preview1.fd_write"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, res.Stdout)
		}
	}
	res = weirtest.Run(t, root, "", "plugin", "inspect", filepath.Join(root, "README.md"))
	if res.Code == 0 || !strings.Contains(res.Stderr, "README.md") {
		t.Errorf("inspecting a non-Wasm file: exit %d, stderr %q", res.Code, res.Stderr)
	}
}
