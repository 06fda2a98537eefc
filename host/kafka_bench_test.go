package host_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/host"
	"github.com/weir-stream/weir/host/broker"
)

// BenchmarkKafkaMap compares Kafka → identity Wasm map (Go guest) → Kafka
// in weir with a bare franz-go consume → produce loop, on the same
// in-process kfake broker in the same run. Both read b.N records of about
// 100 bytes from a 6-partition topic and write them to another. Reported:
// records/s, and CPU-seconds per record of the whole process (the broker
// included, the same for both):
//
//	go test -run='^$' -bench=KafkaMap -benchtime=200000x ./host/
func BenchmarkKafkaMap(b *testing.B) {
	kb, err := broker.Start(broker.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer kb.Close()
	brokers := kb.Addrs()
	run := 0
	// prepare fills a fresh input topic with n records and returns the
	// topic names for one measured run.
	prepare := func(b *testing.B, n int) (in, out string) {
		run++
		in, out = fmt.Sprintf("in%d", run), fmt.Sprintf("out%d", run)
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(in))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		createTopics(b, cl, 6, in, out)
		value := []byte(`{"device_id":"b8:27:eb:bf:9d:51","co":0.0064,"humidity":64.22,"motion":true,"temp":25.39}`)
		for i := range n {
			cl.Produce(context.Background(), &kgo.Record{Key: []byte(fmt.Sprint(i % 1000)), Value: value}, nil)
		}
		if err := cl.Flush(context.Background()); err != nil {
			b.Fatal(err)
		}
		return in, out
	}
	measure := func(b *testing.B, fn func()) {
		var ru0, ru1 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		b.ResetTimer()
		start := time.Now()
		fn()
		elapsed := time.Since(start)
		b.StopTimer()
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		cpu := time.Duration(ru1.Utime.Nano()-ru0.Utime.Nano()) + time.Duration(ru1.Stime.Nano()-ru0.Stime.Nano())
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
		b.ReportMetric(cpu.Seconds()/float64(b.N)*1e6, "cpu-µs/record")
	}

	b.Run("bare-franz-go", func(b *testing.B) {
		in, out := prepare(b, b.N)
		measure(b, func() { bareLoop(b, brokers, in, out, b.N) })
	})
	b.Run("weir-identity-map", func(b *testing.B) {
		in, out := prepare(b, b.N)
		path := writePipeline(b, fmt.Sprintf(`name: bench
kafka: {brokers: [%s]}
sources: [{name: in, type: kafka, topics: [%s], stop_at: latest, format: raw}]
operators: [{name: id, type: map, plugin: "{{root}}/plugins/identity"}]
sinks: [{name: out, type: kafka, topic: %s, format: raw}]
`, strings.Join(brokers, ","), in, out))
		ctx := context.Background()
		p, err := host.Load(ctx, path, host.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close(ctx)
		measure(b, func() {
			sum, err := p.Run(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if got := sum.Stages[len(sum.Stages)-1].Out; got != int64(b.N) {
				b.Fatalf("wrote %d of %d", got, b.N)
			}
		})
	})
}

// bareLoop is what a hand-written franz-go service does: poll with one
// client, produce each record to the output topic with another (a client
// per direction measured faster than one shared), commit nothing.
func bareLoop(b *testing.B, brokers []string, in, out string, n int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()
	var failed atomic.Value
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.Store(err)
		}
	}
	ctx := context.Background()
	for read := 0; read < n; {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			read++
			prod.Produce(ctx, &kgo.Record{Topic: out, Key: r.Key, Value: r.Value}, promise)
		})
	}
	if err := prod.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
}

func createTopics(b *testing.B, cl *kgo.Client, partitions int32, topics ...string) {
	b.Helper()
	resp, err := kadm.NewClient(cl).CreateTopics(context.Background(), partitions, 1, nil, topics...)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		b.Fatal(err)
	}
}
