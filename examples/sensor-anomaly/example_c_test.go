package sensoranomaly_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// TestSensorAnomalyC runs pipeline-c.yaml, the example with its serializer
// written in C (plugins/serializer-c), through the weir binary, and
// compares its output with the seed job's 12 lines, byte for byte.
func TestSensorAnomalyC(t *testing.T) {
	weirtest.NeedToolchain(t, "c")
	want, err := os.ReadFile("expected-output.txt")
	if err != nil {
		t.Fatal(err)
	}
	res := weirtest.Run(t, ".", "", "run", "pipeline-c.yaml")
	if res.Code != 0 {
		t.Fatalf("weir run pipeline-c.yaml exited %d\nstderr:\n%s", res.Code, res.Stderr)
	}
	if res.Stdout != string(want) {
		t.Fatalf("output differs from expected-output.txt\n got:\n%s\nwant:\n%s\nstderr:\n%s", res.Stdout, want, res.Stderr)
	}
}

// TestSensorAnomalyCModule builds the C serializer with `weir plugin build`
// and runs pipeline-c.yaml with the built .wasm module in place of the
// source folder, as a deployment would: the output is still the seed's 12
// lines, byte for byte.
func TestSensorAnomalyCModule(t *testing.T) {
	weirtest.NeedToolchain(t, "c")
	want, err := os.ReadFile("expected-output.txt")
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	module := filepath.Join(dir, "serializer.wasm")
	if res := weirtest.Run(t, ".", "", "plugin", "build", "plugins/serializer-c", "-o", module); res.Code != 0 {
		t.Fatalf("weir plugin build plugins/serializer-c exited %d\nstderr:\n%s", res.Code, res.Stderr)
	}
	pipeline, err := os.ReadFile("pipeline-c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(pipeline)
	for from, to := range map[string]string{
		"plugin: plugins/serializer-c": "plugin: " + module,
		"plugin: plugins/anomaly":      "plugin: " + filepath.Join(root, "plugins", "anomaly"),
		"path: readings.json":          "path: " + filepath.Join(root, "readings.json"),
	} {
		if !strings.Contains(text, from) {
			t.Fatalf("pipeline-c.yaml has no %q", from)
		}
		text = strings.Replace(text, from, to, 1)
	}
	if err := os.WriteFile(filepath.Join(dir, "pipeline.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	res := weirtest.Run(t, dir, "", "run", "pipeline.yaml")
	if res.Code != 0 {
		t.Fatalf("weir run exited %d\nstderr:\n%s", res.Code, res.Stderr)
	}
	if res.Stdout != string(want) {
		t.Fatalf("output differs from expected-output.txt\n got:\n%s\nwant:\n%s\nstderr:\n%s", res.Stdout, want, res.Stderr)
	}
}

// TestSensorAnomalyCMatchesPython is TestSensorAnomalyMatchesPython for
// pipeline-c.yaml: with the serializer in C, weir still prints byte for
// byte what the seed's Python code prints for the generated readings.
func TestSensorAnomalyCMatchesPython(t *testing.T) {
	weirtest.NeedToolchain(t, "c")
	checkAgainstPython(t, "pipeline-c.yaml")
}
