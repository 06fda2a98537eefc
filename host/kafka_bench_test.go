package host_test

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
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
	k := &kafkaBench{brokers: kb.Addrs()}
	b.Run("bare-franz-go", k.bare)
	b.Run("weir-identity-map", func(b *testing.B) { k.weir(b, "{{root}}/plugins/identity", "") })
}

// BenchmarkKafkaUppercase compares Kafka → a Go map upper-casing one JSON
// field → Kafka, as a raw plugin (plugins/conformance/go/uppercase, which
// reads and writes the JSON in Wasm) and as a typed one (typed_uppercase:
// the host reads the field and writes the plugin's answer; uppercase_batch
// is the same as a Go batch function), with the bare
// franz-go loop, which copies records without reading them. The broker is
// a weir broker process of its own, so that the CPU reported is the
// pipeline's (or the loop's) alone:
//
//	go test -run='^$' -bench=KafkaUppercase -benchtime=200000x -count=6 ./host/
func BenchmarkKafkaUppercase(b *testing.B) {
	k := &kafkaBench{brokers: []string{startBrokerProcess(b)}}
	const cfg = `{field: device_id}`
	b.Run("bare-franz-go", k.bare)
	b.Run("weir-raw-go", func(b *testing.B) { k.weir(b, "{{root}}/plugins/conformance/go/uppercase", cfg) })
	b.Run("weir-typed-go", func(b *testing.B) { k.weir(b, "{{root}}/plugins/conformance/go/typed_uppercase", cfg) })
	b.Run("weir-typed-go-batch", func(b *testing.B) { k.weir(b, "{{root}}/guest-sdk/go/testdata/uppercase_batch", cfg) })
}

// kafkaBench runs the measured sides of the Kafka benchmarks against one
// broker. It is used by one benchmark goroutine at a time.
type kafkaBench struct {
	brokers []string
	run     int
}

// prepare fills a fresh input topic with n records and returns the topic
// names for one measured run.
func (k *kafkaBench) prepare(b *testing.B, n int) (in, out string) {
	k.run++
	in, out = fmt.Sprintf("in%d", k.run), fmt.Sprintf("out%d", k.run)
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.brokers...), kgo.DefaultProduceTopic(in))
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

// measure times fn, reporting records/s and the process's CPU per record.
func measure(b *testing.B, fn func()) {
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

func (k *kafkaBench) bare(b *testing.B) {
	in, out := k.prepare(b, b.N)
	measure(b, func() { bareLoop(b, k.brokers, in, out, b.N) })
}

// weir runs the pipeline Kafka → map plugin (with config, YAML) → Kafka.
func (k *kafkaBench) weir(b *testing.B, plugin, config string) {
	in, out := k.prepare(b, b.N)
	if config == "" {
		config = "{}"
	}
	path := writePipeline(b, fmt.Sprintf(`name: bench
kafka: {brokers: [%s]}
sources: [{name: in, type: kafka, topics: [%s], stop_at: latest, format: raw}]
operators: [{name: m, type: map, plugin: "%s", config: %s}]
sinks: [{name: out, type: kafka, topic: %s, format: raw}]
`, strings.Join(k.brokers, ","), in, plugin, config, out))
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
}

// startBrokerProcess runs weir broker, built from this checkout, and
// returns its address.
func startBrokerProcess(b *testing.B) string {
	cmd := exec.Command(weirtest.Weir(b), "broker", "--listen", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("weir broker printed no address: %v", err)
	}
	return strings.TrimSpace(addr)
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
