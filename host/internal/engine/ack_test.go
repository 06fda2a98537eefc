package engine

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/weir-stream/weir/host/internal/record"
)

// partitionedSource emits n records spread over parts partitions of one
// topic and records what the engine acknowledges.
type partitionedSource struct {
	n, parts int
	mu       sync.Mutex
	acked    map[int32]int64 // partition → highest acknowledged offset
	acks     int
	closed   bool
}

func (s *partitionedSource) Name() string { return "kafka-like" }

func (s *partitionedSource) Run(ctx context.Context, out *Out) error {
	for i := range s.n {
		p := int32(i % s.parts)
		rec := record.Record{Value: []byte(`{}`), Origin: record.Origin{Topic: "t", Partition: p, Offset: int64(i / s.parts)}}
		if err := out.Add(rec); err != nil {
			return err
		}
	}
	return out.Flush()
}

func (s *partitionedSource) Ack(ps []Position) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.acks++
	for _, p := range ps {
		if p.Topic != "t" {
			panic("wrong topic " + p.Topic)
		}
		s.acked[p.Partition] = max(s.acked[p.Partition], p.Offset)
	}
}

func (s *partitionedSource) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// asyncSink acknowledges each batch later, from another goroutine, as a
// Kafka producer does; with fail set it reports an error instead.
type asyncSink struct {
	wg      sync.WaitGroup
	fail    bool
	written int
}

func (s *asyncSink) Name() string { return "async" }
func (s *asyncSink) Write(recs []record.Record, dead []record.DeadLetter, ack *Ack) ([]record.DeadLetter, error) {
	ack.Add(1)
	s.written += len(recs)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if s.fail {
			ack.Done(errors.New("broker said no"))
			return
		}
		ack.Done(nil)
	}()
	return dead, nil
}
func (s *asyncSink) Flush() error { return nil }
func (s *asyncSink) Close() error { s.wg.Wait(); return nil }

func TestAcknowledgements(t *testing.T) {
	src := &partitionedSource{n: 10_000, parts: 3, acked: map[int32]int64{}}
	sink := &asyncSink{}
	p := &Pipeline{
		Sources:    []Source{src},
		Sinks:      []Sink{sink},
		DeadLetter: NewDeadLetterWriter("discard", io.Discard, false),
		BatchSize:  100,
		QueueDepth: 2,
	}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sink.written != src.n {
		t.Fatalf("sink got %d records, want %d", sink.written, src.n)
	}
	want := map[int32]int64{0: 3333, 1: 3332, 2: 3332}
	for part, off := range want {
		if src.acked[part] != off {
			t.Errorf("partition %d acknowledged up to %d, want %d", part, src.acked[part], off)
		}
	}
	if src.acks != src.n/100 || !src.closed {
		t.Errorf("%d acks (want one per batch, %d), closed %v", src.acks, src.n/100, src.closed)
	}
}

// TestFailedAckStopsPipeline checks that a sink error stops the pipeline and
// that nothing is acknowledged to the source, so nothing would be committed.
func TestFailedAckStopsPipeline(t *testing.T) {
	src := &partitionedSource{n: 1000, parts: 2, acked: map[int32]int64{}}
	p := &Pipeline{
		Sources:    []Source{src},
		Sinks:      []Sink{&asyncSink{fail: true}},
		DeadLetter: NewDeadLetterWriter("discard", io.Discard, false),
		BatchSize:  100,
	}
	_, err := p.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "broker said no") {
		t.Fatalf("Run = %v", err)
	}
	if src.acks != 0 {
		t.Fatalf("%d batches acknowledged after a failed write", src.acks)
	}
	if !src.closed {
		t.Fatal("source not closed")
	}
}
