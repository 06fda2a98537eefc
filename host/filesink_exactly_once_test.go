package host_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/host"
	"github.com/weir-stream/weir/host/broker"
)

// TestExactlyOnceFilesFromKafkaWithoutState runs exactly-once pipelines
// that read Kafka and keep no keyed state, so their input resumes from the
// consumer group's offsets rather than the checkpoint: a file sink cannot
// be cut back to match and is refused, naming the sink; a dead-letter
// file is appended to, so a second run keeps the first run's dead letters.
func TestExactlyOnceFilesFromKafkaWithoutState(t *testing.T) {
	tests := []struct {
		name    string
		sink    string
		wantErr string
	}{
		{name: "file sink", sink: "{name: out, type: file, path: out.jsonl}",
			wantErr: `sinks[0] "out": exactly_once delivery to a file needs keyed state when the pipeline reads Kafka`},
		{name: "dead-letter file", sink: "{name: out, type: discard}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := fileSinkStatelessPipeline(t, tt.sink)
			dead := filepath.Join(filepath.Dir(path), "dead.jsonl")
			for run := 1; run <= 2; run++ {
				err := fileSinkRunOnce(t, path)
				switch {
				case tt.wantErr != "":
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
					}
					return
				case err != nil:
					t.Fatalf("run %d: %v", run, err)
				}
				if got, _ := os.ReadFile(dead); strings.Count(string(got), "\n") != 2 {
					t.Fatalf("after run %d, dead.jsonl holds:\n%s\nwant the 2 dead letters of the first run", run, got)
				}
			}
		})
	}
}

// fileSinkStatelessPipeline starts a broker whose topic "in" holds two
// records and two that are not JSON, and writes an exactly-once pipeline
// reading it to sink, with a dead-letter file, without keyed state.
func fileSinkStatelessPipeline(t *testing.T, sink string) string {
	t.Helper()
	b, err := broker.Start(broker.Options{Topics: "in:1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	fileSinkProduceLines(t, b.Addrs(), "in", `{"a":1}`, "not json", `{"a":2}`, "nor this")
	return writePipeline(t, fmt.Sprintf(`name: eo-stateless
kafka: {brokers: [%s]}
state: {backend: badger, dir: state}
checkpoints: {interval: 100ms, delivery: exactly_once}
sources: [{name: in, type: kafka, topics: [in], stop_at: latest}]
sinks: [%s]
dead_letter: {type: file, path: dead.jsonl}
`, b.Addrs()[0], sink))
}

// fileSinkProduceLines writes one record per value to topic.
func fileSinkProduceLines(t *testing.T, addrs []string, topic string, values ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Value: []byte(v)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// fileSinkRunOnce loads and runs the pipeline at path.
func fileSinkRunOnce(t *testing.T, path string) error {
	t.Helper()
	ctx := context.Background()
	p, err := host.Load(ctx, path, host.Options{})
	if err != nil {
		return err
	}
	defer p.Close(ctx)
	_, err = p.Run(ctx)
	return err
}
