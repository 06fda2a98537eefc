package engine

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/internal/record"
)

// gateSink holds its first Write until release is closed.
type gateSink struct {
	memSink
	release chan struct{}
	held    bool
}

func (s *gateSink) Write(recs []record.Record, dead []record.DeadLetter, ack *Ack) ([]record.DeadLetter, error) {
	if !s.held {
		s.held = true
		<-s.release
	}
	return s.memSink.Write(recs, dead, ack)
}

// blockedInSend reports whether a goroutine of the process waits in
// runner.send for room downstream.
func blockedInSend() bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "[select") && strings.Contains(g, "engine.(*runner).send(") {
			return true
		}
	}
	return false
}

// A step whose sink holds its writes waits for room downstream, and the
// wait counts as its backpressure; the step's batch calls are counted by
// duration.
func TestBackpressureAndLatency(t *testing.T) {
	sink := &gateSink{release: make(chan struct{})}
	p := &Pipeline{
		Sources:    []Source{&countSource{n: 500, keys: 3}},
		Steps:      []Step{keyByStep("key", []string{"k"})},
		Sinks:      []Sink{sink},
		BatchSize:  10,
		QueueDepth: 1,
	}
	done := make(chan Summary)
	go func() {
		sum, err := p.Run(context.Background())
		if err != nil {
			t.Error(err)
		}
		done <- sum
	}()
	weirtest.PollUntil(t, time.Minute, "the step to wait for room downstream", blockedInSend)
	close(sink.release)
	sum := <-done
	if sum.Steps[0].Blocked <= 0 {
		t.Errorf("the step waited for the held sink, but its Blocked is %v", sum.Steps[0].Blocked)
	}
	if sum.Sinks[0].Blocked != 0 {
		t.Errorf("a sink waits for nothing downstream, but its Blocked is %v", sum.Sinks[0].Blocked)
	}
	lat := p.Stats().StepLatency[0]
	var calls int64
	for _, n := range lat {
		calls += n
	}
	if calls != 50 || lat.Quantile(0.5) <= 0 || lat.Quantile(0.99) < lat.Quantile(0.5) {
		t.Errorf("step latency: %d calls counted (want 50 batches), p50 %v p99 %v", calls, lat.Quantile(0.5), lat.Quantile(0.99))
	}
}

func TestLatencyQuantile(t *testing.T) {
	var l Latency
	if l.Quantile(0.5) != 0 {
		t.Errorf("empty: %v", l.Quantile(0.5))
	}
	l[10] = 98 // [512ns, 1024ns)
	l[20] = 2  // [~0.5ms, ~1ms)
	if got := l.Quantile(0.5); got != 1024 {
		t.Errorf("p50 = %v, want 1.024µs", got)
	}
	if got := l.Quantile(0.99); got != 1<<20 {
		t.Errorf("p99 = %v, want 1.048576ms", got)
	}
	if d := l.Sub(l); d != (Latency{}) {
		t.Errorf("l - l = %v", d)
	}
}

// lingerSource hands out n records {"i":i,"k":i%3} of partition 7, with
// event time i and offset i, then waits for the run to stop.
type lingerSource struct{ n int }

func (s *lingerSource) Name() string { return "linger" }
func (s *lingerSource) Run(ctx context.Context, out *Out) error {
	for i := range s.n {
		v := fmt.Sprintf(`{"i":%d,"k":%d}`, i, i%3)
		if err := out.Add(record.Record{Value: []byte(v), Timestamp: int64(i), Origin: record.Origin{Topic: "t", Partition: 7, Offset: int64(i)}}); err != nil {
			return err
		}
	}
	if err := out.Flush(); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// The event-time partitions are tracked on the watermark tick while they
// are asked for: each one's last offset and watermark.
func TestPartitions(t *testing.T) {
	p := &Pipeline{
		Sources:           []Source{&lingerSource{n: 100}},
		Sinks:             []Sink{&memSink{}},
		EventTime:         []*EventTime{{MaxOutOfOrderness: 10 * time.Millisecond}},
		WatermarkInterval: time.Millisecond,
	}
	if p.Partitions() != nil {
		t.Fatal("partitions before the run")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := p.Run(ctx)
		done <- err
	}()
	want := PartitionStats{Source: "linger", Topic: "t", Partition: 7, Offset: 99, Watermark: 89}
	weirtest.PollUntil(t, time.Minute, "partition 7 at offset 99", func() bool {
		ps := p.Partitions()
		return len(ps) == 1 && ps[0] == want
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
