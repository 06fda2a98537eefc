package customerspercountry_test

import (
	"testing"
)

// TestCustomersPerCountryRust is TestCustomersPerCountryWindows with the
// aggregate written with the Rust SDK (pipeline-rust.yaml,
// plugins/count-rust): the windows, printed with their bounds and within
// the run, add up to a brute-force count of the records.
func TestCustomersPerCountryRust(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Rust plugin")
	}
	checkWindows(t, "pipeline-rust.yaml")
}
