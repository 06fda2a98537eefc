package engine

import (
	"context"
	"testing"

	"github.com/weir-stream/weir/host/internal/record"
)

// Out.Add copies a record into its batch, headers included, without
// allocating per record once the batch's memory has grown to its size.
func TestOutAddAllocatesNothingPerRecord(t *testing.T) {
	const batchSize = 64
	pool := newPool(1, batchSize)
	ch := make(chan *batch, 1)
	o := &Out{ctx: context.Background(), pool: pool, ch: ch, name: "src", batchSize: batchSize}
	rec := record.Record{
		Key:     []byte("k"),
		Value:   []byte(`{"a":1}`),
		Headers: []record.Header{{Key: "h1", Value: []byte("v1")}, {Key: "h2", Value: []byte("v2")}},
		Origin:  record.Origin{Topic: "t", Partition: 3},
	}
	var got *batch
	fill := func() {
		for i := range batchSize {
			rec.Origin.Offset = int64(i)
			if err := o.Add(rec); err != nil {
				t.Fatal(err)
			}
		}
		got = <-ch // Add flushed the full batch
		pool.put(got)
	}
	fill() // the first batch grows the batch's memory
	if n := testing.AllocsPerRun(20, fill); n != 0 {
		t.Errorf("a batch of %d records with headers allocates %v times, want 0", batchSize, n)
	}
}

// The headers Out.Add copies belong to the batch and hold the values they
// were given, each record its own.
func TestOutAddCopiesHeaders(t *testing.T) {
	pool := newPool(1, 8)
	ch := make(chan *batch, 1)
	o := &Out{ctx: context.Background(), pool: pool, ch: ch, name: "src", batchSize: 8}
	val := []byte("v0")
	hs := []record.Header{{Key: "h", Value: val}}
	for i := range 3 {
		val[1] = byte('0' + i)
		if err := o.Add(record.Record{Value: []byte("x"), Headers: hs, Origin: record.Origin{Partition: -1}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Flush(); err != nil {
		t.Fatal(err)
	}
	b := <-ch
	for i, r := range b.records {
		if len(r.Headers) != 1 || r.Headers[0].Key != "h" || string(r.Headers[0].Value) != "v"+string(rune('0'+i)) {
			t.Errorf("record %d headers = %q, want h=v%d", i, r.Headers, i)
		}
		if &r.Headers[0] == &hs[0] {
			t.Errorf("record %d shares the caller's header slice", i)
		}
	}
}

// BenchmarkOutAdd measures handing a record with headers to a batch.
func BenchmarkOutAdd(b *testing.B) {
	const batchSize = 512
	pool := newPool(1, batchSize)
	ch := make(chan *batch, 1)
	o := &Out{ctx: context.Background(), pool: pool, ch: ch, name: "src", batchSize: batchSize}
	rec := record.Record{Value: []byte(`{"a":1}`), Headers: []record.Header{{Key: "h", Value: []byte("v")}}, Origin: record.Origin{Partition: -1}}
	b.ReportAllocs()
	for b.Loop() {
		if err := o.Add(rec); err != nil {
			b.Fatal(err)
		}
		select {
		case full := <-ch:
			pool.put(full)
		default:
		}
	}
}
