package kafkasensors_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// TestKafkaSensors runs the README's Kafka demo through the weir binary: the
// producer writes 1000 seeded readings to the embedded broker, the pipeline
// adds temp_f through the Wasm map, and the printer prints the output topic.
// Every reading must come out once, with temp_f right and appended after the
// seed's fields.
func TestKafkaSensors(t *testing.T) {
	checkSensors(t, weirtest.Run(t, ".", "", "run", "--sequential", "produce.yaml", "pipeline.yaml", "print.yaml"))
}

// checkSensors checks a run of the demo: every reading once, temp_f right
// and appended after the seed's fields, on the embedded broker, with no
// dead letters.
func checkSensors(t *testing.T, res weirtest.Result) {
	t.Helper()
	if res.Code != 0 {
		t.Fatalf("exit %d\n%s", res.Code, res.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(lines) != 1000 {
		t.Fatalf("%d lines, want 1000\nstderr:\n%s", len(lines), res.Stderr)
	}
	type reading struct {
		Device string  `json:"device_id"`
		Temp   float64 `json:"temp"`
		TempF  float64 `json:"temp_f"`
		TS     int64   `json:"ts"`
	}
	devices := map[string]int{}
	for i, line := range lines {
		var r reading
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, line)
		}
		if want := math.Round((r.Temp*9/5+32)*100) / 100; r.TempF != want {
			t.Errorf("line %d: temp_f %v for temp %v, want %v", i, r.TempF, r.Temp, want)
		}
		if !strings.HasPrefix(line, `{"device_id":`) || strings.LastIndex(line, `,"temp_f":`) < strings.LastIndex(line, `"ts":`) {
			t.Errorf("line %d: fields out of order: %s", i, line)
		}
		devices[r.Device]++
	}
	if len(devices) != 3 {
		t.Errorf("devices = %v, want the seed's three", devices)
	}
	if !strings.Contains(res.Stderr, "using an embedded broker") || !strings.Contains(res.Stderr, "dead_letters=0") {
		t.Errorf("log does not show the embedded broker and a clean run:\n%s", res.Stderr)
	}
}
