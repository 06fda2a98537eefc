package kafka

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/internal/engine"
)

// TestPartitionLags: once the source has read every record, each
// partition that had records reports a lag of 0, the partitions add up to
// Lag, and partitions without records are not listed.
func TestPartitionLags(t *testing.T) {
	t.Parallel()
	_, cc := srcBroker(t, map[string]int32{"in": 4})
	recs := srcJSONRecords("in", 0, 60)
	for i, r := range recs {
		r.Partition = int32(i % 3) // partition 3 gets none
	}
	cl := srcClient(t, cc, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	src := srcNewSource(t, cc, "g", "in", nil)
	sink := &srcSink{}
	run := srcStart(t, &engine.Pipeline{Sources: []engine.Source{src}, Sinks: []engine.Sink{sink}})
	weirtest.PollUntil(t, 30*time.Second, "the records", func() bool { return sink.count.Load() >= 60 })
	var got []int32
	weirtest.PollUntil(t, 10*time.Second, "the partitions' lags", func() bool {
		got = got[:0]
		var sum int64
		for _, pl := range src.PartitionLags() {
			if pl.Topic != "in" || pl.Lag != 0 {
				return false
			}
			got = append(got, pl.Partition)
			sum += pl.Lag
		}
		slices.Sort(got)
		return slices.Equal(got, []int32{0, 1, 2}) && sum == src.Lag()
	})
	if _, err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
}
