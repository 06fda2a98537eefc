package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/host"
	"github.com/weir-stream/weir/host/broker"
)

// TestProcessingTimeWindowOnOldKafkaRecords: on processing time (no
// event_time), a window assigns records by when it processes them, so a
// backlog written to Kafka long ago is counted, not dropped as late.
func TestProcessingTimeWindowOnOldKafkaRecords(t *testing.T) {
	b, err := broker.Start(broker.Options{Topics: "old:2"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 100 {
		recs = append(recs, &kgo.Record{Topic: "old", Key: []byte(fmt.Sprint(i % 4)), Value: []byte(fmt.Sprintf(`{"k":"k%d"}`, i%4)),
			Timestamp: time.Date(2020, 1, 1, 0, 0, i, 0, time.UTC)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	path := writePipeline(t, `name: proc-time
engine: {batch_size: 10}
kafka: {brokers: [`+b.Addrs()[0]+`]}
sources: [{name: in, type: kafka, topics: [old], stop_at: latest}]
operators:
  - {name: by-k, type: key_by, field: k}
  - {name: w, type: window, kind: tumbling, size: 1h, aggregates: [{func: count, as: n}]}
sinks: [{name: out, type: stdout}]
`)
	var out bytes.Buffer
	ctx := context.Background()
	p, err := host.Load(ctx, path, host.Options{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	sum, err := p.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var v struct{ N int }
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		total += v.N
	}
	if total != 100 || sum.DeadLetter != 0 {
		t.Fatalf("counted %d of 100 records, %d dead letters:\n%s", total, sum.DeadLetter, out.String())
	}
}
