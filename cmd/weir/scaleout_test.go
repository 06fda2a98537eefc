package main_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/broker"
)

// eosMapPipeline is mapPipeline, exactly once.
const eosMapPipeline = `name: keos
kafka: {brokers: [%s]}
state: {backend: badger, dir: state}
checkpoints: {interval: 100ms, delivery: exactly_once}
sources: [{name: in, type: kafka, topics: [in], group: keos}]
operators: [{name: id, type: map, plugin: "{{root}}/plugins/identity"}]
sinks: [{name: out, type: kafka, topic: out, key_field: k, linger: 1ms}]
dead_letter: {type: kafka, topic: dlq}
`

// produceRange writes records i in [from, to) as {"k":"key-<i%keys>",
// "seq":<i/keys+1>}, keyed by k, so that each key's seq rises across calls.
func produceRange(t *testing.T, brokers string, from, to, keys int) {
	t.Helper()
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "{\"k\":\"key-%d\",\"seq\":%d}\n", i%keys, i/keys+1)
	}
	if _, err := broker.Produce(context.Background(), broker.ProduceOptions{
		Client: broker.Client{Brokers: strings.Split(brokers, ",")}, Topic: "in", KeyField: "k",
	}, strings.NewReader(b.String()), "test"); err != nil {
		t.Fatal(err)
	}
}

// readCommitted reads every committed record of topic from the start,
// until none arrives for idle.
func readCommitted(t *testing.T, brokers, topic string, idle time.Duration) []*kgo.Record {
	t.Helper()
	return readTopic(t, brokers, topic, idle, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
}

// TestKafkaExactlyOnceScaleOut runs a stateless exactly-once pipeline
// (Kafka → Wasm map → Kafka) as two processes in one group while records
// keep coming: the second joins mid-stream and later leaves, so the group
// rebalances twice with transactions open. Each rebalance aborts the open
// transactions, whose records are processed again, by their partition's
// new owner or by the same process. A read_committed reader must see every
// input exactly once, each key's records in order, and both processes must
// have done part of the work.
func TestKafkaExactlyOnceScaleOut(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("two processes, 40k records")
	}
	const n, keys, step = 40_000, 100, 10_000
	brokers := startBroker(t, "in:6,out:6,dlq:1")
	dir := pipelineDir(t, fmt.Sprintf(eosMapPipeline, brokers), nil)
	start := func(name string) (*exec.Cmd, *strings.Builder) {
		cmd := exec.Command(weirtest.Weir(t), "run", "pipeline.yaml")
		cmd.Dir = dir
		cmd.Env = append(cmd.Environ(), "WEIR_STATE_DIR="+filepath.Join(dir, "state-"+name), "WEIR_SOURCES_IN_INSTANCE_ID="+name,
			// A static member keeps its partitions for its session after
			// it stops; the broker's minimum makes the test quicker.
			"WEIR_SOURCES_IN_SESSION_TIMEOUT=6s")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		return cmd, &stderr
	}
	committed := func() int { return len(readCommitted(t, brokers, "out", 100*time.Millisecond)) }
	waitCommitted := func(atLeast int, what string) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for committed() < atLeast {
			if time.Now().After(deadline) {
				t.Fatalf("%s: only %d records committed", what, committed())
			}
		}
	}

	produceRange(t, brokers, 0, step, keys)
	a, aLog := start("a")
	waitCommitted(step/4, "the first process alone")
	b, bLog := start("b") // joins while a has a transaction open
	produceRange(t, brokers, step, 2*step, keys)
	waitForMembers(t, brokers, "keos", 2)
	produceRange(t, brokers, 2*step, 3*step, keys)
	// Everything so far, not just the first two steps: the first process
	// may have read those before the group split the partitions, and the
	// second must have done its share before it is stopped.
	waitCommitted(3*step, "two processes")
	b.Process.Signal(syscall.SIGTERM) // leaves while a has a transaction open
	produceRange(t, brokers, 3*step, n, keys)
	if err := b.Wait(); err != nil {
		t.Fatalf("second process exited with %v:\n%s", err, bLog)
	}
	waitCommitted(n, "the first process alone again")
	a.Process.Signal(syscall.SIGTERM)
	if err := a.Wait(); err != nil {
		t.Fatalf("first process exited with %v:\n%s", err, aLog)
	}

	checkExactlyOnceInOrder(t, readCommitted(t, brokers, "out", time.Second), n, keys)
	aborted := 0
	for name, log := range map[string]string{"first": aLog.String(), "second": bLog.String()} {
		if strings.Contains(log, "summary.in.out=0 ") || !strings.Contains(log, "summary.in.out=") {
			t.Errorf("the %s process read nothing: the group did not split the partitions\n%s", name, log)
		}
		aborted += strings.Count(log, "the transaction was aborted; its records are processed again")
	}
	t.Logf("%d transactions aborted by the rebalances and done again", aborted)
}

// dedupePipeline keeps, exactly once, the first record of each Kafka
// record key: keyed state on the record key, shared by task, with its
// changelog.
const dedupePipeline = `name: kdedupe
kafka: {brokers: [%s]}
state: {backend: badger, dir: state}
checkpoints: {interval: 100ms, delivery: exactly_once}
sources: [{name: in, type: kafka, topics: [in], group: kdedupe, instance_id: kdedupe-a, session_timeout: 6s}]
operators: [{name: first, type: dedupe}]
sinks: [{name: out, type: kafka, topic: out, linger: 1ms}]
dead_letter: {type: kafka, topic: dlq}
`

// TestRestoreBehindOpenTransaction: a transaction of another instance is
// left open on the changelog's partitions (an instance that died
// mid-checkpoint, whose transaction the brokers abort only at its
// timeout), and the pipeline then commits its dedupe state for a set of
// keys behind it. Restarted without its state directory (as an instance
// given the tasks without a copy of them), it must restore that state
// before it reads on from the group's offsets, which its commits moved
// past those keys' first records: it waits for the open transaction to
// end. Their repeats must then be dropped, and every key come out once.
func TestRestoreBehindOpenTransaction(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("two runs of a process")
	}
	const keys = 200
	brokers := startBroker(t, "in:2,out:2,dlq:1")
	dir := pipelineDir(t, fmt.Sprintf(dedupePipeline, brokers), nil)
	start := func() (*exec.Cmd, *weirtest.SyncBuffer) {
		cmd := exec.Command(weirtest.Weir(t), "run", "pipeline.yaml")
		cmd.Dir = dir
		var stderr weirtest.SyncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		return cmd, &stderr
	}
	produce := func(from, to int) {
		t.Helper()
		var b strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&b, "{\"k\":\"key-%d\"}\n", i)
		}
		if _, err := broker.Produce(context.Background(), broker.ProduceOptions{
			Client: broker.Client{Brokers: strings.Split(brokers, ",")}, Topic: "in", KeyField: "k",
		}, strings.NewReader(b.String()), "test"); err != nil {
			t.Fatal(err)
		}
	}
	waitOut := func(n int, what string) {
		t.Helper()
		weirtest.PollUntil(t, 90*time.Second, what, func() bool { return len(readCommitted(t, brokers, "out", 100*time.Millisecond)) >= n })
	}

	first, firstLog := start()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.TransactionalID("departed-instance"),
		kgo.TransactionTimeout(5*time.Minute), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	weirtest.PollUntil(t, 60*time.Second, "the changelog topic", func() bool {
		ds, err := adm.ListTopics(context.Background(), "kdedupe-changelog")
		return err == nil && len(ds["kdedupe-changelog"].Partitions) == 2
	})
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	id := []kgo.RecordHeader{{Key: "weir-checkpoint", Value: []byte("departed")}}
	for p := range int32(2) {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "kdedupe-changelog", Partition: p, Key: []byte("departed"), Value: []byte("v{}"), Headers: id}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, keys)
	waitOut(keys, "the first run's output")
	first.Process.Signal(syscall.SIGTERM)
	if err := first.Wait(); err != nil {
		t.Fatalf("the first run exited with %v:\n%s", err, firstLog)
	}
	if err := os.RemoveAll(filepath.Join(dir, "state")); err != nil {
		t.Fatal(err)
	}

	second, secondLog := start()
	weirtest.PollUntil(t, 60*time.Second, "the restore to wait for the open transaction, or to be done", func() bool {
		return strings.Contains(secondLog.String(), "waiting for the transactions open on the partitions to end") ||
			strings.Contains(secondLog.String(), `msg="tasks restored from the changelog"`)
	})
	if err := cl.EndTransaction(context.Background(), kgo.TryAbort); err != nil { // the brokers' abort at its timeout
		t.Fatal(err)
	}
	produce(0, 2*keys) // the repeats of the first keys, and as many new ones
	waitOut(2*keys, "the second run's output")
	second.Process.Signal(syscall.SIGTERM)
	if err := second.Wait(); err != nil {
		t.Fatalf("the second run exited with %v:\n%s", err, secondLog)
	}
	count := map[string]int{}
	for _, r := range readCommitted(t, brokers, "out", time.Second) {
		count[string(r.Key)]++
	}
	wrong := 0
	for i := range 2 * keys {
		if k := fmt.Sprintf("key-%d", i); count[k] != 1 {
			wrong++
			if wrong <= 5 {
				t.Errorf("%s came out %d times, want once", k, count[k])
			}
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d keys wrong: the restore missed the state committed behind the open transaction", wrong, 2*keys)
	}
}
