package devicecharge_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/guest-sdk/go/pyfmt"
)

type reading struct {
	Device string  `json:"device_id"`
	AH     float64 `json:"ampere_hour"`
	TS     int64   `json:"ts"` // epoch milliseconds, as the seed writes it
}

type charge struct {
	Device string      `json:"device_id"`
	Start  string      `json:"window_start"`
	End    string      `json:"window_end"`
	Charge json.Number `json:"charge_consumed"`
}

// seedFields are the fields of the seed's sensor_event(), in its order.
var seedFields = []string{"device_id", "co", "humidity", "motion", "temp", "ampere_hour", "ts"}

// readReadings reads JSON-lines readings.
func readReadings(t *testing.T, path string) []reading {
	t.Helper()
	f, err := os.Open(path)
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
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func charges(t *testing.T, stdout string) []charge {
	t.Helper()
	var out []charge
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var c charge
		d := json.NewDecoder(strings.NewReader(line))
		d.UseNumber()
		if err := d.Decode(&c); err != nil {
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

// checkWindows checks the printed windows against a brute-force 30 s
// tumbling SUM of ampere_hour per device over the readings' ts in epoch
// milliseconds: the same windows, and in each the same charge_consumed,
// to the digit, as the sum in the readings' order (which is each device's
// order in its partition) prints in Python.
func checkWindows(t *testing.T, rs []reading, out []charge) {
	t.Helper()
	type win struct {
		device string
		start  int64 // epoch ms
	}
	want := map[win]float64{}
	for _, r := range rs {
		want[win{r.Device, r.TS - r.TS%30000}] += r.AH
	}
	if len(out) != len(want) {
		t.Errorf("%d windows, want %d", len(out), len(want))
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
		w := win{c.Device, start.UnixMilli()}
		s, ok := want[w]
		if !ok {
			t.Fatalf("unexpected window %+v", c)
		}
		if text := string(pyfmt.AppendFloat(nil, s)); string(c.Charge) != text {
			t.Errorf("%s %s: charge %s, want %s", c.Device, c.Start, c.Charge, text)
		}
		delete(want, w)
	}
	for w := range want {
		t.Errorf("no window for %s at %s", w.device, time.UnixMilli(w.start).UTC().Format(layout))
	}
}

// TestEventTime runs the example as its README does: produce.yaml's
// readings, with ts in epoch milliseconds in the seed's field order, then
// the event-time job. Every 30-second window of every device is checked
// against a brute-force sum of the readings.
func TestEventTime(t *testing.T) {
	out := charges(t, run(t, "produce.yaml", "event-time.yaml", "print.yaml"))
	rs := readReadings(t, "readings.jsonl")
	// The producer writes the seed's records: its fields, in its order,
	// ts in epoch milliseconds (within 2024-08-06, not seconds).
	b, err := os.ReadFile("readings.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := bytes.Cut(b, []byte("\n"))
	if got := fieldNames(t, first); strings.Join(got, ",") != strings.Join(seedFields, ",") {
		t.Errorf("the producer's fields are %v, want the seed's %v", got, seedFields)
	}
	day := time.Date(2024, 8, 6, 0, 0, 0, 0, time.UTC)
	subSecond := 0
	for _, r := range rs {
		if ts := time.UnixMilli(r.TS); ts.Before(day) || !ts.Before(day.Add(24*time.Hour)) {
			t.Fatalf("ts %d is not epoch milliseconds on 2024-08-06", r.TS)
		}
		if r.TS%1000 != 0 {
			subSecond++
		}
	}
	if subSecond < len(rs)/2 {
		t.Errorf("only %d of %d readings have a millisecond part", subSecond, len(rs))
	}
	checkWindows(t, rs, out)
}

// TestEventTimeSeedRecords feeds the event-time job records exactly as the
// seed's producer writes them, json.dumps(sensor_event()) with ts =
// int(time.time() * 1000) on a clock that advances by the seed's
// time.sleep(5) and a few milliseconds per reading, some readings falling
// on the last millisecond of a window or the first of the next, and checks
// every window against a brute-force sum.
func TestEventTimeSeedRecords(t *testing.T) {
	dir := t.TempDir()
	records := filepath.Join(dir, "sensor-readings.jsonl")
	rs := writeSeedRecords(t, records, rand.New(rand.NewPCG(0, 0)), 900)
	producer := filepath.Join(dir, "produce-seed.yaml")
	if err := os.WriteFile(producer, []byte(fmt.Sprintf(`# The seed's records, from a file, to sensor.readings keyed by device_id.
name: seed-producer
kafka: {embedded: {partitions: 3}}
sources: [{name: readings, type: file, path: %q}]
sinks: [{name: topic, type: kafka, topic: sensor.readings, key_field: device_id}]
`, records)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := charges(t, run(t, producer, "event-time.yaml", "print.yaml"))
	checkWindows(t, rs, out)
}

// writeSeedRecords writes n readings as the seed's producer prints them
// and returns them.
func writeSeedRecords(t *testing.T, path string, rng *rand.Rand, n int) []reading {
	t.Helper()
	devices := []string{"b8:27:eb:bf:9d:51", "00:0f:00:70:91:0a", "1c:bf:ce:15:ec:4d"}
	// round(random.uniform(lo, hi), decimals), printed as Python prints it.
	uniform := func(lo, hi float64, decimals int) string {
		p := math.Pow(10, float64(decimals))
		return string(pyfmt.AppendFloat(nil, math.Round((lo+rng.Float64()*(hi-lo))*p)/p))
	}
	now := int64(1722960000000) + rng.Int64N(1000) // 2024-08-06 16:00:00.xxx UTC
	var b bytes.Buffer
	var rs []reading
	boundaries := 0
	for i := range n {
		ts := now
		switch i % 10 { // now and then a reading on a window's edge
		case 3:
			ts = now - now%30000 + 29999 // the window's last millisecond
		case 7:
			ts = now - now%30000 + 30000 // the next window's first
		}
		if ts%30000 == 0 || ts%30000 == 29999 {
			boundaries++
		}
		r := reading{Device: devices[rng.IntN(len(devices))], TS: ts}
		ah := uniform(0.10, 1.80, 2)
		var err error
		if r.AH, err = strconv.ParseFloat(ah, 64); err != nil {
			t.Fatal(err)
		}
		motion := "false"
		if rng.IntN(2) == 0 {
			motion = "true"
		}
		// json.dumps(sensor_event()): ", " and ": " separators, the
		// dict's order.
		fmt.Fprintf(&b, `{"device_id": %q, "co": %s, "humidity": %s, "motion": %s, "temp": %s, "ampere_hour": %s, "ts": %d}`+"\n",
			r.Device, uniform(0.0011, 0.0072, 4), uniform(45.00, 78.00, 2), motion, uniform(17.00, 36.00, 2), ah, ts)
		rs = append(rs, r)
		now = ts + 5000 + rng.Int64N(40) // time.sleep(5), and the loop's own time
	}
	if boundaries < n/10 {
		t.Fatalf("only %d readings on a window's edge", boundaries)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return rs
}

// fieldNames returns the names of the JSON object line's fields, in order.
func fieldNames(t *testing.T, line []byte) []string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(line))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%s: not an object", line)
	}
	var names []string
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tok.(string))
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// TestProcessingTime runs the proctime version: windows follow when weir
// reads the readings, so only the total per device is known in advance.
func TestProcessingTime(t *testing.T) {
	out := charges(t, run(t, "produce.yaml", "processing-time.yaml"))
	want := map[string]float64{}
	for _, r := range readReadings(t, "readings.jsonl") {
		want[r.Device] += r.AH
	}
	got := map[string]float64{}
	for _, c := range out {
		f, err := c.Charge.Float64()
		if err != nil {
			t.Fatal(err)
		}
		got[c.Device] += f
	}
	devices := make([]string, 0, len(want))
	for d := range want {
		devices = append(devices, d)
	}
	sort.Strings(devices)
	for _, d := range devices {
		if math.Abs(got[d]-want[d]) > 1e-6 {
			t.Errorf("%s: total charge %v, want %v", d, got[d], want[d])
		}
	}
}
