package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// fileSinkKafkaYAML is fileSinkCrashYAML reading a Kafka topic, exactly
// once: keyed state, so the checkpoints go to a changelog topic too, and
// the file lengths with them.
const fileSinkKafkaYAML = `name: file-kafka
state: {backend: badger, dir: state}
checkpoints: {interval: 200ms, delivery: exactly_once}
sources:
  - name: readings
    type: kafka
    topics: [readings]
    instance_id: file-kafka-0
    event_time: {field: ts, format: epoch_ms}
operators:
  - {name: by-sensor, type: key_by, field: sensor}
  - name: sums
    type: window
    kind: tumbling
    size: 100ms
    key_field: sensor
    time_format: epoch_ms
    aggregates:
      - {func: sum, field: value, as: total}
      - {func: count, as: readings}
sinks:
  - {name: out, type: file, path: out.jsonl}
dead_letter: {type: file, path: dead.jsonl}
`

const fileSinkKafkaStrays = fileSinkCrashReadings / 10

// fileSinkKafkaMessages returns the messages of the readings topic: the
// readings of fileSinkCrashWant, by sensor over 4 partitions, after every
// tenth a stray {"n":…} without event time, and a last reading an hour
// later on every partition, which closes every window.
func fileSinkKafkaMessages() []*kgo.Record {
	var rs []*kgo.Record
	for i := range fileSinkCrashReadings {
		s := fmt.Sprint(i % 20)
		rs = append(rs, &kgo.Record{Partition: int32(i % 20 % 4), Key: []byte(s),
			Value: fmt.Appendf(nil, `{"sensor":%q,"value":%d,"ts":%d}`, s, i%97, fileSinkT0+int64(i))})
		if i%10 == 9 {
			rs = append(rs, &kgo.Record{Partition: int32(i / 10 % 4), Value: fmt.Appendf(nil, `{"n":%d}`, i/10)})
		}
	}
	for p := range int32(4) {
		rs = append(rs, &kgo.Record{Partition: p, Key: []byte("end"),
			Value: fmt.Appendf(nil, `{"sensor":"end","value":0,"ts":%d}`, fileSinkT0+fileSinkCrashReadings+3600_000)})
	}
	return rs
}

// fileSinkProduce writes the messages to the readings topic, 2500 a second,
// in the background, and returns a function that stops it.
func fileSinkProduce(t *testing.T, brokers string) func() {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic("readings"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cl.Close()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		rs := fileSinkKafkaMessages()
		for i := 0; i < len(rs); i += 25 {
			<-tick.C
			if err := cl.ProduceSync(ctx, rs[i:min(i+25, len(rs))]...).FirstErr(); err != nil {
				if ctx.Err() == nil {
					t.Errorf("producing: %v", err)
				}
				return
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// fileSinkStopWhenComplete waits for out.jsonl to hold rows rows and
// dead.jsonl every stray, and for run p to have started, then stops it
// with SIGTERM.
func fileSinkStopWhenComplete(t *testing.T, dir string, p *fileSinkProc, rows int) {
	t.Helper()
	if p == nil {
		return
	}
	weirtest.PollUntil(t, 2*time.Minute, "every window and dead letter in the files", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "dead.jsonl"))
		return fileSinkRows(dir) >= rows && strings.Count(string(b), "\n") >= fileSinkKafkaStrays && p.started()
	})
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-p.done; err != nil {
		t.Errorf("the last run did not stop cleanly: %v", err)
	}
}

// fileSinkStrayNumber names a dead letter of a stray by its number.
func fileSinkStrayNumber(dl fileSinkDeadLetter) (int, bool) {
	var v struct{ N *int }
	if json.Unmarshal([]byte(dl.Value), &v) != nil || v.N == nil || !strings.Contains(dl.Reason, "event time: field not found") {
		return 0, false
	}
	return *v.N, true
}

// TestFileOutputsSurviveKillsFromKafka SIGKILLs an exactly-once pipeline
// reading Kafka into a file sink and a dead-letter file five times, while
// the input is produced, and deletes its state directory after the third
// kill, so that the checkpoint, file lengths included, comes back from the
// changelog topic: the third run is killed only once a checkpoint is
// committed there (runs killed sooner would leave nothing to restore), and
// the fourth only once it has restored it.
// Once the files are complete, each window and each dead letter must be in
// them once.
func TestFileOutputsSurviveKillsFromKafka(t *testing.T) {
	t.Parallel()
	brokers := startBroker(t, "readings:4")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pipeline.yaml"), []byte(fileSinkKafkaYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "WEIR_KAFKA_BROKERS="+brokers)
	weirtest.Weir(t) // built before the input flows, so that the first run starts with it
	stop := fileSinkProduce(t, brokers)
	defer stop()
	want := fileSinkCrashWant()
	committed := changelogCommitted(t, brokers, "file-kafka-changelog")
	restored := func() bool {
		log, _ := os.ReadFile(filepath.Join(dir, "run-4.log"))
		return strings.Contains(string(log), `msg="state restored from the changelog"`)
	}
	ready := func(k int) bool {
		switch k {
		case 2: // the last run before the state is lost
			return committed()
		case 3: // the first after
			return restored()
		}
		return true
	}
	p := fileSinkKillRestart(t, dir, len(want), env, ready, func(k int) {
		if k == 2 {
			if err := os.RemoveAll(filepath.Join(dir, "state")); err != nil {
				t.Fatal(err)
			}
		}
	})
	fileSinkStopWhenComplete(t, dir, p, len(want))
	// The run after the state was lost resumed from the changelog.
	if !restored() {
		t.Error("run 4, the first without a state directory, did not restore the state from the changelog")
	}
	fileSinkCheckWindows(t, dir, want, true)
	fileSinkCheckStrays(t, dir, fileSinkKafkaStrays, fileSinkStrayNumber, true)
}

// changelogCommitted returns a function that reports whether the topic
// holds a committed record yet: a checkpoint's transaction committed.
func changelogCommitted(t *testing.T, brokers, topic string) func() bool {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	seen := false
	return func() bool {
		if !seen {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			seen = cl.PollFetches(ctx).NumRecords() > 0
			cancel()
		}
		return seen
	}
}
