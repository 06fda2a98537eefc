package sensoranomaly_test

import (
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// TestSensorAnomaly runs the example through the weir binary and compares
// its output with the seed job's 12 lines, byte for byte.
func TestSensorAnomaly(t *testing.T) {
	weirtest.CheckOutput(t, ".")
}
