package engine

import (
	"cmp"
	"math/bits"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
)

// Tap is an Observer that also sees what the run writes, for a live view
// of it (the admin console). Its methods are called from the sink loop's
// goroutine and must be quick; they must copy what they keep, for the
// records' bytes are reused once they return.
type Tap interface {
	Observer
	// Sampling reports whether SinkWrote is wanted now: the writes are
	// shown only while someone looks, and cost nothing otherwise.
	Sampling() bool
	// SinkWrote reports records sink i (by index) wrote.
	SinkWrote(i int, recs []record.Record)
	// DeadLettered reports a dead letter written.
	DeadLettered(dl *record.DeadLetter)
	// CheckpointFailed reports a checkpoint whose commit failed, which
	// fails the run.
	CheckpointFailed(epoch uint64, err error)
}

// LatencyBuckets is the number of buckets of a Latency.
const LatencyBuckets = 40

// Latency counts durations in buckets of powers of two nanoseconds:
// bucket i holds those in [2^(i-1), 2^i) ns (bucket 0, zero), the last
// also every longer one. It is a plain value.
type Latency [LatencyBuckets]int64

// Quantile returns the upper bound of the bucket that holds quantile q
// (0 < q <= 1) of the durations counted, or 0 when none are.
func (l *Latency) Quantile(q float64) time.Duration {
	var n int64
	for _, c := range l {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := int64(q * float64(n))
	var seen int64
	for i, c := range l {
		seen += c
		if seen >= rank && c > 0 {
			return time.Duration(1) << i
		}
	}
	return time.Duration(1) << (LatencyBuckets - 1)
}

// Sub returns the counts of l less those of o: what was counted since o.
func (l Latency) Sub(o Latency) Latency {
	for i := range l {
		l[i] -= o[i]
	}
	return l
}

// liveLatency is a Latency added to while the run goes.
type liveLatency [LatencyBuckets]atomic.Int64

func (l *liveLatency) observe(d time.Duration) {
	l[min(bits.Len64(uint64(max(d, 0))), LatencyBuckets-1)].Add(1)
}

func (st *runStats) latencies() []Latency {
	out := make([]Latency, len(st.stepLatency))
	for i := range st.stepLatency {
		for b := range st.stepLatency[i] {
			out[i][b] = st.stepLatency[i][b].Load()
		}
	}
	return out
}

// PartitionStats is where one partition of an event-time source stands:
// the offset of its last record dispatched, its watermark (NoWatermark
// before it showed a record) and whether it is idle. It is plain data.
type PartitionStats struct {
	Source    string
	Topic     string
	Partition int32
	Offset    int64
	Watermark int64
	Idle      bool
}

// partitionsWatch is how long after a call of Partitions the dispatcher
// keeps the partitions it reports up to date.
const partitionsWatch = 10 * time.Second

// Partitions returns where each partition of the current or last run's
// event-time sources stands, as of the dispatcher's last watermark tick,
// sorted by source, topic and partition; nil before the run's first tick
// after the first call. The dispatcher works the table out only while it
// is asked for, until partitionsWatch after the last call. It may be
// called from any goroutine, at any time.
func (p *Pipeline) Partitions() []PartitionStats {
	st := p.stats.Load()
	if st == nil {
		return nil
	}
	st.watched.Store(time.Now().Add(partitionsWatch).UnixNano())
	if ps := st.partitions.Load(); ps != nil {
		return *ps
	}
	return nil
}

// notePartitions publishes the partition table, on the dispatcher's
// watermark tick, while Partitions is being asked for.
func (r *runner) notePartitions() {
	if time.Now().UnixNano() > r.st.watched.Load() {
		return
	}
	var out []PartitionStats
	now := r.wms.now()
	for i, s := range r.wms.sources[:r.wms.nsrc] {
		if s.et == nil {
			continue
		}
		ooo := s.et.MaxOutOfOrderness.Milliseconds()
		name := r.p.Sources[i].Name()
		for k, pt := range s.parts {
			ps := PartitionStats{Source: name, Topic: k.topic, Partition: k.partition, Offset: pt.offset, Watermark: NoWatermark}
			if pt.max != NoWatermark {
				ps.Watermark = pt.max - ooo
			}
			ps.Idle = s.et.IdleTimeout > 0 && now.Sub(pt.lastSeen) >= s.et.IdleTimeout
			out = append(out, ps)
		}
	}
	slices.SortFunc(out, func(a, b PartitionStats) int {
		return cmp.Or(strings.Compare(a.Source, b.Source), strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	r.st.partitions.Store(&out)
}
