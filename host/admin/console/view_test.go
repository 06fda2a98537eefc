package console

import (
	"testing"

	"github.com/weir-stream/weir/host"
)

// A thousand partitions: the view counts them all and lists the hundred
// furthest behind, those with no watermark yet first; idle ones do not
// hold the least watermark back.
func TestPartitionsCapped(t *testing.T) {
	var ps []host.PartitionStatus
	for i := range 1000 {
		wm := int64(10_000 + i)
		p := host.PartitionStatus{Source: "s", Partition: int32(i), WatermarkMs: &wm}
		switch i {
		case 500:
			p.WatermarkMs = nil
		case 999:
			low := int64(5)
			p.WatermarkMs, p.Idle = &low, true
		}
		ps = append(ps, p)
	}
	got := partitions(ps)
	if got.Total != 1000 || got.Idle != 1 || len(got.Rows) != maxPartitionRows || *got.MinWatermarkMs != 10_000 {
		t.Fatalf("total %d, idle %d, %d rows, least watermark %d", got.Total, got.Idle, len(got.Rows), *got.MinWatermarkMs)
	}
	if got.Rows[0].Partition != 500 || got.Rows[1].Partition != 999 || got.Rows[2].Partition != 0 || got.Rows[99].Partition != 97 {
		t.Errorf("rows begin %d, %d, %d and end %d; want 500 (no watermark), 999, 0 … 97", got.Rows[0].Partition,
			got.Rows[1].Partition, got.Rows[2].Partition, got.Rows[99].Partition)
	}
	if empty := partitions(nil); empty.Rows == nil || empty.MinWatermarkMs != nil {
		t.Errorf("no partitions: %+v, want [] rows and no watermark", empty)
	}
}

// Rates are per second between two samples; backpressure is the share
// of that time the stage's workers waited, each worker counted once.
func TestStageRates(t *testing.T) {
	then := host.StageCounts{In: 100, Out: 90, Dead: 1}
	now := host.StageCounts{In: 300, Out: 280, Dead: 5}
	var batches [40]int64
	batches[20] = 10 // about 1ms
	pf := &host.StageFlow{BlockedSeconds: 1, Workers: 2, BatchNanos: make([]int64, 40)}
	f := &host.StageFlow{BlockedSeconds: 2, Workers: 2, BatchNanos: batches[:]}
	r := stageRates(now, then, f, pf, 2)
	if r.in != 100 || r.out != 95 || r.dead != 2 || r.backpressure != 0.25 || !r.hasLatency || r.p99 != host.LatencyQuantile(batches[:], 0.99) {
		t.Errorf("rates %+v", r)
	}
	// A run started again: counts went back, and count from zero.
	r = stageRates(host.StageCounts{In: 40}, then, nil, nil, 2)
	if r.in != 20 || r.backpressure != 0 || r.hasLatency {
		t.Errorf("rates after a restart %+v", r)
	}
}
