package devicecharge_test

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

type reading struct {
	Device string  `json:"device_id"`
	AH     float64 `json:"ampere_hour"`
	TS     int64   `json:"ts"`
}

type charge struct {
	Device string  `json:"device_id"`
	Start  string  `json:"window_start"`
	End    string  `json:"window_end"`
	Charge float64 `json:"charge_consumed"`
}

// readings returns what produce.yaml generated, from its file copy.
func readings(t *testing.T) []reading {
	t.Helper()
	f, err := os.Open("readings.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []reading
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r reading
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func charges(t *testing.T, stdout string) []charge {
	t.Helper()
	var out []charge
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var c charge
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		out = append(out, c)
	}
	return out
}

func run(t *testing.T, files ...string) string {
	t.Helper()
	t.Cleanup(func() { os.Remove("readings.jsonl") })
	res := weirtest.Run(t, ".", "", append([]string{"run", "--sequential"}, files...)...)
	if res.Code != 0 {
		t.Fatalf("exit %d\n%s", res.Code, res.Stderr)
	}
	if !strings.Contains(res.Stderr, "dead_letters=0") || strings.Contains(res.Stderr, "late:") {
		t.Errorf("records were rejected:\n%s", res.Stderr)
	}
	return res.Stdout
}

// TestEventTime checks every 30-second window of every device against a
// brute-force sum of the generated readings.
func TestEventTime(t *testing.T) {
	out := charges(t, run(t, "produce.yaml", "event-time.yaml", "print.yaml"))
	type win struct {
		device string
		start  int64
	}
	want := map[win]float64{}
	for _, r := range readings(t) {
		want[win{r.Device, r.TS / 30 * 30}] += r.AH
	}
	if len(out) != len(want) {
		t.Fatalf("%d windows, want %d", len(out), len(want))
	}
	const layout = "2006-01-02 15:04:05"
	for _, c := range out {
		start, err := time.Parse(layout, c.Start)
		if err != nil {
			t.Fatal(err)
		}
		end, err := time.Parse(layout, c.End)
		if err != nil || end.Sub(start) != 30*time.Second {
			t.Fatalf("window %s to %s", c.Start, c.End)
		}
		w := win{c.Device, start.Unix()}
		s, ok := want[w]
		if !ok {
			t.Fatalf("unexpected window %+v", c)
		}
		if math.Abs(s-c.Charge) > 1e-9 {
			t.Errorf("%s %s: charge %v, want %v", c.Device, c.Start, c.Charge, s)
		}
		delete(want, w)
	}
}

// TestProcessingTime runs the proctime version: windows follow when weir
// reads the readings, so only the total per device is known in advance.
func TestProcessingTime(t *testing.T) {
	out := charges(t, run(t, "produce.yaml", "processing-time.yaml"))
	want := map[string]float64{}
	for _, r := range readings(t) {
		want[r.Device] += r.AH
	}
	got := map[string]float64{}
	for _, c := range out {
		got[c.Device] += c.Charge
	}
	for d, s := range want {
		if math.Abs(got[d]-s) > 1e-6 {
			t.Errorf("%s: total charge %v, want %v", d, got[d], s)
		}
	}
}
