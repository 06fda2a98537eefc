package sensoranomaly_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/broker"
)

// TestSensorAnomaly runs the example through the weir binary and compares
// its output with the seed job's 12 lines, byte for byte.
func TestSensorAnomaly(t *testing.T) {
	weirtest.CheckOutput(t, ".")
}

// TestSensorAnomalyThroughKafka runs the README's demo: the readings go
// through a topic on the embedded broker, and the output is still the seed's
// 12 lines, byte for byte.
func TestSensorAnomalyThroughKafka(t *testing.T) {
	want, err := os.ReadFile("expected-output.txt")
	if err != nil {
		t.Fatal(err)
	}
	res := weirtest.Run(t, ".", "", "run", "--sequential", "to-kafka.yaml", "from-kafka.yaml")
	if res.Code != 0 {
		t.Fatalf("exit %d\n%s", res.Code, res.Stderr)
	}
	if res.Stdout != string(want) {
		t.Fatalf("output:\n%s\nwant:\n%s", res.Stdout, want)
	}
	if !strings.Contains(res.Stderr, "using an embedded broker") {
		t.Errorf("the log does not say the embedded broker was used:\n%s", res.Stderr)
	}
}

// TestSensorAnomalyStateSurvivesRestart splits the readings over two runs
// of weir that keep state with the badger backend in one directory: the
// second run's first alert uses the value the first run stored, so the two
// outputs together are still the seed's 12 lines.
func TestSensorAnomalyStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	root := writeParts(t, dir)
	pipeline := fmt.Sprintf(`name: sensor-anomaly-durable
state: {backend: badger, dir: state}
sources: [{name: readings, type: file, path: part0.jsonl}]
operators:
  - {name: by-sensor, type: key_by, field: id}
  - {name: detect, type: flat_map, plugin: %q, config: {threshold: 1}}
  - {name: serialize, type: map, plugin: %q}
sinks: [{name: console, type: stdout, format: raw}]
`, filepath.Join(root, "plugins/anomaly"), filepath.Join(root, "plugins/serializer"))
	if err := os.WriteFile(filepath.Join(dir, "pipeline.yaml"), []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	first := weirtest.Run(t, dir, "", "run", "pipeline.yaml")
	if first.Code != 0 {
		t.Fatalf("first run: exit %d\n%s", first.Code, first.Stderr)
	}
	t.Setenv("WEIR_SOURCES_READINGS_PATH", "part1.jsonl")
	second := weirtest.Run(t, dir, "", "run", "pipeline.yaml")
	if second.Code != 0 {
		t.Fatalf("second run: exit %d\n%s", second.Code, second.Stderr)
	}
	checkTwoRuns(t, first.Stdout, second.Stdout)
}

// TestSensorAnomalyOnKafkaResumesFromCheckpoint is seed 001 on Kafka with
// checkpoints: the first run reads the first four readings from the topic
// and stops; more readings arrive; the second run resumes from the
// checkpoint (its offsets and its state) and its first alert still uses the
// value the first run saw. Together they print the seed's 12 lines once.
func TestSensorAnomalyOnKafkaResumesFromCheckpoint(t *testing.T) {
	dir := t.TempDir()
	root := writeParts(t, dir)
	b, err := broker.Start(broker.Options{Topics: "sensor.readings:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	brokers := strings.Join(b.Addrs(), ",")
	t.Setenv("WEIR_KAFKA_BROKERS", brokers)
	pipeline := fmt.Sprintf(`name: sensor-anomaly-kafka-durable
state: {backend: badger, dir: state}
checkpoints: {interval: 1s}
sources: [{name: readings, type: kafka, topics: [sensor.readings], stop_at: latest}]
operators:
  - {name: by-sensor, type: key_by, field: id}
  - {name: detect, type: flat_map, plugin: %q, config: {threshold: 1}}
  - {name: serialize, type: map, plugin: %q}
sinks: [{name: console, type: stdout, format: raw}]
`, filepath.Join(root, "plugins/anomaly"), filepath.Join(root, "plugins/serializer"))
	if err := os.WriteFile(filepath.Join(dir, "pipeline.yaml"), []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	var out [2]string
	for i := range out {
		if res := weirtest.Run(t, dir, "", "produce", "--brokers", brokers, "--topic", "sensor.readings", "--key-field", "id", fmt.Sprintf("part%d.jsonl", i)); res.Code != 0 {
			t.Fatalf("produce: exit %d\n%s", res.Code, res.Stderr)
		}
		res := weirtest.Run(t, dir, "", "run", "pipeline.yaml")
		if res.Code != 0 {
			t.Fatalf("run %d: exit %d\n%s", i+1, res.Code, res.Stderr)
		}
		if i == 1 && !strings.Contains(res.Stderr, "resuming from a checkpoint") {
			t.Errorf("the second run did not resume from a checkpoint:\n%s", res.Stderr)
		}
		out[i] = res.Stdout
	}
	checkTwoRuns(t, out[0], out[1])
}

// checkTwoRuns checks that two runs over the two halves of the readings
// printed the seed's output together.
func checkTwoRuns(t *testing.T, first, second string) {
	t.Helper()
	want, err := os.ReadFile("expected-output.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got := first + second; got != string(want) {
		t.Fatalf("the two runs printed:\n%s\nwant:\n%s", got, want)
	}
}

// writeParts writes the seed's readings, split in two halves, to
// part0.jsonl and part1.jsonl in dir, and returns the example's directory.
func writeParts(t *testing.T, dir string) string {
	t.Helper()
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	var all []map[string]any
	b, err := os.ReadFile("readings.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatal(err)
	}
	for i, part := range [][]map[string]any{all[:4], all[4:]} {
		var lines []string
		for _, r := range part {
			// Keep the seed's field order, which the serializer prints.
			lines = append(lines, fmt.Sprintf(`{"id": %q, "kind": %q, "value": %v, "timestamp": %.0f}`, r["id"], r["kind"], r["value"], r["timestamp"]))
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part%d.jsonl", i)), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}
