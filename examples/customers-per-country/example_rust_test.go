package customerspercountry_test

import (
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
	checkTotals(t, weirtest.Run(t, ".", "", "run", "--sequential", "produce.yaml", "pipeline-rust.yaml"))
}
