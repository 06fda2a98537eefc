package customerspercountry_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/broker"
)

// The seed's totals per country for its 20 customers.
var seedTotals = map[string]int{"JP": 2, "GB": 2, "TR": 13, "USA": 3}

// count is one line of the output: a country's count in a window.
type count struct {
	Country string `json:"country"`
	Start   string `json:"window_start"`
	End     string `json:"window_end"`
	Count   int    `json:"count"`
}

// TestCustomersPerCountry runs the README's command: the seed's 20
// customers through Kafka, key_by country, a 5 s window whose aggregate is
// the Wasm plugin, and the window-bounds map. Each line must carry its
// window, 5 s long, aligned to 5 s and within the run's wall-clock time,
// and the counts must add up to the seed's totals: JP 2, GB 2, TR 13,
// USA 3. (The windows are on processing time, so a run that straddles a
// 5 s boundary splits a country's count over two windows.)
func TestCustomersPerCountry(t *testing.T) {
	before := time.Now()
	res := weirtest.Run(t, ".", "", "run", "--sequential", "produce.yaml", "pipeline.yaml")
	checkInRun(t, checkTotals(t, res, seedTotals), before, time.Now())
}

// TestCustomersPerCountryWindows checks the counts against the records
// themselves: the customers go to a broker the test runs, the test reads
// them back and counts them per country by brute force, and the
// pipeline's windows, all within its run (the windows are on processing
// time), must add up to those counts.
func TestCustomersPerCountryWindows(t *testing.T) {
	checkWindows(t, "pipeline.yaml")
}

// checkWindows runs produce.yaml, then pipeline, on a broker of the
// test's, and checks pipeline's windows against a brute-force count of the
// records in the topic.
func checkWindows(t *testing.T, pipeline string) {
	t.Helper()
	b, err := broker.Start(broker.Options{Topics: "customer.create:3"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	brokers := strings.Join(b.Addrs(), ",")
	t.Setenv("WEIR_KAFKA_BROKERS", brokers)
	if res := weirtest.Run(t, ".", "", "run", "produce.yaml"); res.Code != 0 {
		t.Fatalf("produce.yaml: exit %d\n%s", res.Code, res.Stderr)
	}
	res := weirtest.Run(t, ".", "", "consume", "--brokers", brokers, "--topic", "customer.create",
		"--from-beginning", "--max", "20", "--timeout", "10s")
	if res.Code != 0 {
		t.Fatalf("consume: exit %d\n%s", res.Code, res.Stderr)
	}
	want := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		var c struct{ Country string }
		if err := json.Unmarshal([]byte(line), &c); err != nil || c.Country == "" {
			t.Fatalf("consume printed %q (%v)", line, err)
		}
		want[c.Country]++
	}
	before := time.Now()
	res = weirtest.Run(t, ".", "", "run", pipeline)
	checkInRun(t, checkTotals(t, res, want), before, time.Now())
}

// checkInRun checks that every window lies within the run, from before to
// after, as processing-time windows must.
func checkInRun(t *testing.T, counts []count, before, after time.Time) {
	t.Helper()
	for _, c := range counts {
		start, _ := time.Parse(sqlLayout, c.Start)
		if start.After(after) || !start.Add(5*time.Second).After(before.Truncate(time.Millisecond)) {
			t.Errorf("window %s to %s is outside the run, %s to %s", c.Start, c.End, before.UTC().Format(sqlLayout), after.UTC().Format(sqlLayout))
		}
	}
}

// sqlLayout is how window bounds print: Flink SQL's TIMESTAMP(3), in UTC.
const sqlLayout = "2006-01-02 15:04:05"

// checkTotals checks a run's lines: each a country's count with the
// bounds of its 5 s window, no country twice in a window, counts adding up
// to totals, nothing rejected. It returns the lines.
func checkTotals(t *testing.T, res weirtest.Result, totals map[string]int) []count {
	t.Helper()
	if res.Code != 0 {
		t.Fatalf("exit %d\n%s", res.Code, res.Stderr)
	}
	var out []count
	got := map[string]int{}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		var c count
		d := json.NewDecoder(strings.NewReader(line))
		d.DisallowUnknownFields()
		if err := d.Decode(&c); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		// The fields in seed 000's order: the key, the bounds, the result.
		if want := fmt.Sprintf(`{"country":%q,"window_start":%q,"window_end":%q,"count":%d}`, c.Country, c.Start, c.End, c.Count); line != want {
			t.Errorf("line %s, want %s", line, want)
		}
		start, err1 := time.Parse(sqlLayout, c.Start)
		end, err2 := time.Parse(sqlLayout, c.End)
		switch {
		case err1 != nil || err2 != nil:
			t.Fatalf("%s: window bounds are not yyyy-MM-dd HH:mm:ss: %v %v", line, err1, err2)
		case end.Sub(start) != 5*time.Second || start.UnixMilli()%5000 != 0:
			t.Errorf("%s: not a 5 s tumbling window", line)
		case seen[c.Country+" "+c.Start]:
			t.Errorf("%s: the country's second count for the window", line)
		}
		seen[c.Country+" "+c.Start] = true
		got[c.Country] += c.Count
		out = append(out, c)
	}
	if len(got) != len(totals) {
		t.Fatalf("counts %v, want %v", got, totals)
	}
	for c, n := range totals {
		if got[c] != n {
			t.Errorf("%s: %d, want %d", c, got[c], n)
		}
	}
	if !strings.Contains(res.Stderr, "dead_letters=0") {
		t.Errorf("records were rejected:\n%s", res.Stderr)
	}
	return out
}
