package main_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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
