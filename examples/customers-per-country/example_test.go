package customerspercountry_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// TestCustomersPerCountry runs the seed's 20 customers through Kafka, key_by
// country and a 5 s window whose aggregate is the Wasm plugin, and checks
// the seed's totals: JP 2, GB 2, TR 13, USA 3. The windows are on
// processing time, so a run that straddles a 5 s boundary splits a country's
// count over two windows; the totals are the same.
func TestCustomersPerCountry(t *testing.T) {
	checkTotals(t, weirtest.Run(t, ".", "", "run", "--sequential", "produce.yaml", "pipeline.yaml"))
}

// checkTotals checks a run's per-country counts against the seed's totals,
// with nothing rejected.
func checkTotals(t *testing.T, res weirtest.Result) {
	t.Helper()
	if res.Code != 0 {
		t.Fatalf("exit %d\n%s", res.Code, res.Stderr)
	}
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		var r struct {
			Country string
			Count   int
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got[r.Country] += r.Count
	}
	want := map[string]int{"JP": 2, "GB": 2, "TR": 13, "USA": 3}
	if len(got) != len(want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	for c, n := range want {
		if got[c] != n {
			t.Errorf("%s: %d, want %d", c, got[c], n)
		}
	}
	if !strings.Contains(res.Stderr, "dead_letters=0") {
		t.Errorf("records were rejected:\n%s", res.Stderr)
	}
}
