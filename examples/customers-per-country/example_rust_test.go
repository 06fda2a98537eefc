package customerspercountry_test

import (
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// TestCustomersPerCountryRust is TestCustomersPerCountryWindows with the
// aggregate written with the Rust SDK (pipeline-rust.yaml,
// plugins/count-rust): the windows, printed with their bounds and within
// the run, add up to a brute-force count of the records.
func TestCustomersPerCountryRust(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Rust plugin")
	}
	weirtest.NeedToolchain(t, "rust")
	checkWindows(t, "pipeline-rust.yaml")
}
