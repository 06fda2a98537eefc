package main_test

import (
	"bufio"
	"context"
	"encoding/json"
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

// startBroker starts an in-process broker (kfake over loopback TCP) with
// topics, for a test.
func startBroker(t *testing.T, topics string) string {
	t.Helper()
	b, err := broker.Start(broker.Options{Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return strings.Join(b.Addrs(), ",")
}

// produceKeyed writes n records {"k":"key-<i%keys>","seq":<per-key seq>}
// keyed by k.
func produceKeyed(t *testing.T, brokers, topic string, n, keys int) {
	t.Helper()
	var b strings.Builder
	seq := make([]int, keys)
	for i := range n {
		seq[i%keys]++
		fmt.Fprintf(&b, "{\"k\":\"key-%d\",\"seq\":%d}\n", i%keys, seq[i%keys])
	}
	got, err := broker.Produce(context.Background(), broker.ProduceOptions{
		Client: broker.Client{Brokers: strings.Split(brokers, ",")}, Topic: topic, KeyField: "k",
	}, strings.NewReader(b.String()), "test")
	if err != nil || got != int64(n) {
		t.Fatalf("produced %d of %d: %v", got, n, err)
	}
}

// readTopic reads every record of topic from the start, waiting until no
// record arrives for idle; opts add client options.
func readTopic(t *testing.T, brokers, topic string, idle time.Duration, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for {
		ctx, cancel := context.WithTimeout(context.Background(), idle)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r); n++ })
		if n == 0 {
			return out
		}
	}
}

// awaitFirstRecord waits, up to limit, until topic holds a record.
func awaitFirstRecord(t *testing.T, brokers, topic string, limit time.Duration) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for ctx.Err() == nil {
		if fs := cl.PollFetches(ctx); fs.NumRecords() > 0 {
			return
		}
	}
	t.Fatalf("no record in %s after %s", topic, limit)
}

type keyedRecord struct {
	K   string `json:"k"`
	Seq int    `json:"seq"`
}

// checkExactlyOnceInOrder requires every (k, seq) for n records over keys
// keys exactly once, and each key's records in sequence order.
func checkExactlyOnceInOrder(t *testing.T, recs []*kgo.Record, n, keys int) {
	t.Helper()
	last := map[string]int{}
	seen := map[keyedRecord]bool{}
	for _, r := range recs {
		var kr keyedRecord
		if err := json.Unmarshal(r.Value, &kr); err != nil {
			t.Fatalf("output %q: %v", r.Value, err)
		}
		if seen[kr] {
			t.Fatalf("%+v twice", kr)
		}
		seen[kr] = true
		if kr.Seq <= last[kr.K] {
			t.Fatalf("key %s: seq %d after %d", kr.K, kr.Seq, last[kr.K])
		}
		last[kr.K] = kr.Seq
		if string(r.Key) != kr.K {
			t.Fatalf("record %+v has key %q", kr, r.Key)
		}
	}
	if len(seen) != n || len(last) != keys {
		t.Fatalf("%d distinct records over %d keys, want %d over %d", len(seen), len(last), n, keys)
	}
}

const mapPipeline = `name: kmap
kafka: {brokers: [%s]}
engine: {parallelism: %d}
sources: [{name: in, type: kafka, topics: [in], group: kmap, stop_at: %s}]
operators: [{name: id, type: map, plugin: "{{root}}/plugins/identity"}]
sinks: [{name: out, type: kafka, topic: out, key_field: k, linger: 1ms}]
dead_letter: {type: kafka, topic: dlq}
`

// TestKafkaMapExactlyOnceNoFaults: 200k records on a 6-partition topic go
// through Kafka → Wasm map → Kafka with parallelism 2; with no faults every
// input appears exactly once in the output, in order per key.
func TestKafkaMapExactlyOnceNoFaults(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("200k records")
	}
	const n, keys = 200_000, 500
	brokers := startBroker(t, "in:6,out:6,dlq:1")
	produceKeyed(t, brokers, "in", n, keys)
	dir := pipelineDir(t, fmt.Sprintf(mapPipeline, brokers, 2, "latest"), nil)
	res := weirtest.Run(t, dir, "", "run", "pipeline.yaml")
	if res.Code != 0 {
		t.Fatalf("exit %d\n%s", res.Code, res.Stderr)
	}
	checkExactlyOnceInOrder(t, readTopic(t, brokers, "out", 2*time.Second), n, keys)
}

// TestKafkaSIGTERMRestartLosesNothing stops a running Kafka pipeline with
// SIGTERM mid-stream, restarts it in the same group, and checks that every
// input reached the output; duplicates are allowed (at-least-once) but
// bounded by what was in flight.
func TestKafkaSIGTERMRestartLosesNothing(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("200k records")
	}
	const n, keys = 200_000, 100
	brokers := startBroker(t, "in:6,out:6,dlq:1")
	produceKeyed(t, brokers, "in", n, keys)
	dir := pipelineDir(t, fmt.Sprintf(mapPipeline, brokers, 2, "never"), nil)

	cmd := exec.Command(weirtest.Weir(t), "run", "pipeline.yaml")
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	go func() { bufio.NewReader(stderr).WriteTo(os.Stderr) }()
	// Signal as soon as the first records reach the output. One client
	// watches for them: a fresh one per look, with a short wait, may
	// never connect in time on a loaded machine.
	awaitFirstRecord(t, brokers, "out", 3*time.Minute)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("weir exited with %v after SIGTERM", err)
	}
	before := len(readTopic(t, brokers, "out", 500*time.Millisecond))

	// The restart reads from the committed offsets to the end.
	os.WriteFile(filepath.Join(dir, "pipeline.yaml"), []byte(strings.ReplaceAll(
		fmt.Sprintf(mapPipeline, brokers, 2, "latest"), "{{root}}", weirtest.Root(t))), 0o644)
	res := weirtest.Run(t, dir, "", "run", "pipeline.yaml")
	if res.Code != 0 {
		t.Fatalf("restart exit %d\n%s", res.Code, res.Stderr)
	}
	out := readTopic(t, brokers, "out", 2*time.Second)
	seen := map[keyedRecord]int{}
	for _, r := range out {
		var kr keyedRecord
		if err := json.Unmarshal(r.Value, &kr); err != nil {
			t.Fatal(err)
		}
		seen[kr]++
	}
	if len(seen) != n {
		t.Fatalf("%d of %d inputs reached the output", len(seen), n)
	}
	dups := len(out) - n
	t.Logf("first run wrote %d records before SIGTERM; %d duplicates after the restart", before, dups)
	if dups != 0 {
		t.Errorf("a drained SIGTERM committed everything it wrote, yet %d records were written twice", dups)
	}
}

// TestKafkaPoisonRecordsToDeadLetterTopic sends a record that is not JSON
// and one a plugin rejects; both land on the dead-letter topic with headers
// that give the reason, and the exit summary counts them.
func TestKafkaPoisonRecordsToDeadLetterTopic(t *testing.T) {
	t.Parallel()
	brokers := startBroker(t, "in:1,out:1,dlq:1")
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, v := range []string{`"fine"`, `not json`, `"bad"`, `"also fine"`} {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "in", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	dir := pipelineDir(t, fmt.Sprintf(`name: poison
kafka: {brokers: [%s]}
sources: [{name: in, type: kafka, topics: [in], stop_at: latest}]
operators: [{name: check, type: map, plugin: "{{root}}/plugins/conformance/go/fail_on", config: {bad: '"bad"'}}]
sinks: [{name: out, type: kafka, topic: out}]
dead_letter: {type: kafka, topic: dlq}
`, brokers), nil)
	res := weirtest.Run(t, dir, "", "run", "pipeline.yaml")
	if res.Code != 0 {
		t.Fatalf("exit %d\n%s", res.Code, res.Stderr)
	}
	if out := readTopic(t, brokers, "out", time.Second); len(out) != 2 {
		t.Fatalf("%d records in the output, want the 2 good ones", len(out))
	}
	dlq := readTopic(t, brokers, "dlq", time.Second)
	if len(dlq) != 2 {
		t.Fatalf("%d dead letters, want 2", len(dlq))
	}
	want := []struct{ value, stage, reason, offset string }{
		{`not json`, "in", "not JSON", "1"},
		{`"bad"`, "check", `bad input: "bad"`, "2"},
	}
	for i, w := range want {
		r := dlq[i]
		h := map[string]string{}
		for _, kv := range r.Headers {
			h[kv.Key] = string(kv.Value)
		}
		if string(r.Value) != w.value || h["weir.stage"] != w.stage || !strings.Contains(h["weir.error"], w.reason) ||
			h["weir.source.topic"] != "in" || h["weir.source.partition"] != "0" || h["weir.source.offset"] != w.offset {
			t.Errorf("dead letter %d = %q with headers %v", i, r.Value, h)
		}
	}
	if !strings.Contains(res.Stderr, "dead_letters=2") {
		t.Errorf("the exit summary does not count the dead letters:\n%s", res.Stderr)
	}
}

// TestKafkaTwoProcessesShareAGroup runs two weir processes in one consumer
// group. They split the partitions; when one stops, the group rebalances and
// the other takes over, and together they output every record at least once.
func TestKafkaTwoProcessesShareAGroup(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("two processes, 100k records")
	}
	const n, keys = 100_000, 100
	brokers := startBroker(t, "in:6,out:6,dlq:1")
	dir := pipelineDir(t, fmt.Sprintf(mapPipeline, brokers, 1, "never"), nil)
	start := func() (*exec.Cmd, *strings.Builder) {
		cmd := exec.Command(weirtest.Weir(t), "run", "pipeline.yaml")
		cmd.Dir = dir
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		return cmd, &stderr
	}
	a, aLog := start()
	b, bLog := start()
	waitForMembers(t, brokers, "kmap", 2)
	produceKeyed(t, brokers, "in", n/2, keys)
	distinct := func() int {
		seen := map[keyedRecord]bool{}
		for _, r := range readTopic(t, brokers, "out", time.Second) {
			var kr keyedRecord
			json.Unmarshal(r.Value, &kr)
			seen[kr] = true
		}
		return len(seen)
	}
	waitDistinct := func(want int) {
		deadline := time.Now().Add(90 * time.Second)
		for distinct() < want {
			if time.Now().After(deadline) {
				t.Fatalf("only %d of %d records in the output\nA:\n%s\nB:\n%s", distinct(), want, aLog, bLog)
			}
		}
	}
	waitDistinct(n / 2)
	a.Process.Signal(syscall.SIGTERM)
	if err := a.Wait(); err != nil {
		t.Fatalf("first process exited with %v:\n%s", err, aLog)
	}
	// The second half is produced after the first process left: the other
	// must now own every partition.
	var more strings.Builder
	seq := make([]int, keys)
	for i := range n / 2 {
		seq[i%keys]++
	}
	for i := range n / 2 {
		seq[i%keys]++
		fmt.Fprintf(&more, "{\"k\":\"key-%d\",\"seq\":%d}\n", i%keys, seq[i%keys])
	}
	if _, err := broker.Produce(context.Background(), broker.ProduceOptions{
		Client: broker.Client{Brokers: strings.Split(brokers, ",")}, Topic: "in", KeyField: "k",
	}, strings.NewReader(more.String()), "test"); err != nil {
		t.Fatal(err)
	}
	waitDistinct(n)
	b.Process.Signal(syscall.SIGTERM)
	if err := b.Wait(); err != nil {
		t.Fatalf("second process exited with %v:\n%s", err, bLog)
	}
	for name, log := range map[string]string{"first": aLog.String(), "second": bLog.String()} {
		if strings.Contains(log, "summary.in.out=0 ") {
			t.Errorf("the %s process read nothing: the group did not split the partitions\n%s", name, log)
		}
	}
}

// waitForMembers waits until group has members members, each with some
// partitions assigned.
func waitForMembers(t *testing.T, brokers, group string, members int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	weirtest.PollUntil(t, 60*time.Second, fmt.Sprintf("group %s to have %d members with partitions", group, members), func() bool {
		described, err := adm.DescribeGroups(context.Background(), group)
		if err != nil {
			return false
		}
		g := described[group]
		assigned := 0
		for _, m := range g.Members {
			if ca, ok := m.Assigned.AsConsumer(); ok && len(ca.Topics) > 0 {
				assigned++
			}
		}
		return g.State == "Stable" && assigned == members
	})
}

// TestConsoleTools drives weir broker, weir produce and weir consume as a
// user would: records produced with a key field come back with their keys.
func TestConsoleTools(t *testing.T) {
	broker := exec.Command(weirtest.Weir(t), "broker", "--listen", "127.0.0.1:0", "--topics", "events:2")
	stdout, err := broker.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := broker.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		broker.Process.Signal(syscall.SIGTERM)
		if err := broker.Wait(); err != nil {
			t.Errorf("weir broker exited with %v after SIGTERM", err)
		}
	}()
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("weir broker printed no address: %v", err)
	}
	addr = strings.TrimSpace(addr)
	in := "{\"user\":\"ann\",\"n\":1}\n{\"user\":\"bob\",\"n\":2}\n{\"user\":\"ann\",\"n\":3}\n"
	res := weirtest.Run(t, ".", in, "produce", "--brokers", addr, "--topic", "events", "--key-field", "user")
	if res.Code != 0 {
		t.Fatalf("weir produce: exit %d\n%s", res.Code, res.Stderr)
	}
	res = weirtest.Run(t, ".", "", "consume", "--brokers", addr, "--topic", "events", "--from-beginning", "--max", "3", "--meta")
	if res.Code != 0 {
		t.Fatalf("weir consume: exit %d\n%s", res.Code, res.Stderr)
	}
	byUser := map[string][]int{}
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		var env struct {
			Key   string
			Value struct{ N int }
		}
		if err := json.Unmarshal([]byte(line), &env); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		byUser[env.Key] = append(byUser[env.Key], env.Value.N)
	}
	if fmt.Sprint(byUser["ann"]) != "[1 3]" || fmt.Sprint(byUser["bob"]) != "[2]" {
		t.Fatalf("consumed %v", byUser)
	}
	res = weirtest.Run(t, ".", "", "consume", "--topic", "events")
	if res.Code != 2 || !strings.Contains(res.Stderr, "--brokers is required") {
		t.Fatalf("consume without --brokers: exit %d, %s", res.Code, res.Stderr)
	}
}
