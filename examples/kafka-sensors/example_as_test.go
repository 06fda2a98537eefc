package kafkasensors_test

import (
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// TestKafkaSensorsAssemblyScript runs the README's Kafka demo with the
// AssemblyScript map (pipeline-as.yaml, plugins/fahrenheit-as) through the
// weir binary, and checks the output as TestKafkaSensors does for the Go
// map: every reading once, temp_f right, appended after the seed's fields.
func TestKafkaSensorsAssemblyScript(t *testing.T) {
	weirtest.NeedToolchain(t, "assemblyscript")
	checkSensors(t, weirtest.Run(t, ".", "", "run", "--sequential", "produce.yaml", "pipeline-as.yaml", "print.yaml"))
}
