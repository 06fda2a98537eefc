package sensoranomaly_test

import (
	"os"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
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
