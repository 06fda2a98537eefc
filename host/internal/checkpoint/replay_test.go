package checkpoint

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/internal/kafka"
	"github.com/weir-stream/weir/state"
)

// TestReplayWaitsForEveryPartitionsMarker writes a checkpoint to a
// two-partition changelog by hand the way a read_committed reader can
// see an exactly-once commit arrive: partition 0's changes and marker
// first, partition 1's a moment later. Exactly once, the replay adopts
// the checkpoint only once partition 1 shows it too, so the state it
// records holds both partitions' changes; at least once, partition 0's
// marker stands for changes that were all acknowledged before it, and
// it adopts at once.
func TestReplayWaitsForEveryPartitionsMarker(t *testing.T) {
	for _, exactlyOnce := range []bool{true, false} {
		name := map[bool]string{true: "exactly once", false: "at least once"}[exactlyOnce]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			br, err := kafka.StartBroker(kafka.BrokerConfig{Topics: map[string]int32{"cl": 2}, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer br.Close()
			cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			write := func(part int32, key, value string) {
				t.Helper()
				r := &kgo.Record{Topic: "cl", Partition: part, Key: []byte(key), Value: []byte(value)}
				if key == kafka.ChangelogMarker {
					r.Headers = []kgo.RecordHeader{{Key: kafka.ChangelogTasksHeader, Value: []byte("2")}}
				}
				if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			k0, k1 := string(state.Key(nil, "op", []byte("a"), nil)), string(state.Key(nil, "op", []byte("b"), nil))
			write(0, k0, "v1")
			write(0, kafka.ChangelogMarker, `m{"epoch":1}`)

			store, err := state.OpenBadger(state.BadgerOptions{Dir: t.TempDir(), Checkpointed: true, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			var logs weirtest.SyncBuffer
			r := restorer{store: store, cs: store, cc: kafka.ClientConfig{Brokers: br.Addrs()}, topic: "cl",
				exactlyOnce: exactlyOnce, log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
			var meta Meta
			done := make(chan error, 1)
			go func() { _, err := r.replay(context.Background(), &meta); done <- err }()
			if exactlyOnce {
				weirtest.PollUntil(t, 10*time.Second, "the replay to wait for partition 1", func() bool {
					return strings.Contains(logs.String(), "waiting for the checkpoint's commit to reach every partition")
				})
				write(1, k1, "v1")
				write(1, kafka.ChangelogMarker, `m{"epoch":1}`)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if string(meta.Engine) != `{"epoch":1}` {
				t.Fatalf("adopted checkpoint %s, want epoch 1", meta.Engine)
			}
			committed, _ := store.Committed()
			var got Meta
			if err := json.Unmarshal(committed.Meta, &got); err != nil || string(got.Engine) != `{"epoch":1}` {
				t.Fatalf("the store records %s (%v)", committed.Meta, err)
			}
			want := map[string]bool{k0: true, k1: exactlyOnce}
			for k, present := range want {
				if _, ok, err := store.Get([]byte(k)); err != nil || ok != present {
					t.Errorf("key %q in the store: %v (%v), want %v", k, ok, err, present)
				}
			}
			if strings.Contains(logs.String(), "adopting it anyway") {
				t.Errorf("the replay gave up waiting:\n%s", logs.String())
			}
		})
	}
}
