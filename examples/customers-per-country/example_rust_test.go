package customerspercountry_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// TestCustomersPerCountryRust runs the same pipeline as
// TestCustomersPerCountry with the aggregate written with the Rust SDK
// (pipeline-rust.yaml, plugins/count-rust), and checks the same totals:
// JP 2, GB 2, TR 13, USA 3.
func TestCustomersPerCountryRust(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Rust plugin")
	}
	if _, err := os.Stat("/usr/bin/cargo"); err != nil {
		t.Skip("no Rust toolchain (run scripts/install-toolchains.sh)")
	}
	res := weirtest.Run(t, ".", "", "run", "--sequential", "produce.yaml", "pipeline-rust.yaml")
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
