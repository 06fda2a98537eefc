package devicecharge_test

import (
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// TestEpochMsPlugin runs the producer's epoch-ms plugin on its cases
// (plugins/epoch-ms/weir-test.jsonl) with `weir plugin test`: ts*1000 + ms
// in the reading's field order, ms dropped, bad readings rejected.
func TestEpochMsPlugin(t *testing.T) {
	res := weirtest.Run(t, ".", "", "plugin", "test", "plugins/epoch-ms")
	if res.Code != 0 {
		t.Fatalf("weir plugin test plugins/epoch-ms: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
}
