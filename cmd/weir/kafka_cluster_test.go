package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// toKafka and fromKafka are shaped like examples/sensor-anomaly's
// to-kafka.yaml and from-kafka.yaml: an embedded block, and a file's
// lines through a topic and back to standard output.
const (
	toKafka = `name: to-kafka
kafka:
  embedded: {partitions: 1%s}
sources: [{name: lines, type: file, path: lines.json}]
sinks: [{name: topic, type: kafka, topic: readings, key_field: id}]
`
	fromKafka = `name: from-kafka
kafka:
  embedded: {partitions: 1%s}
sources: [{name: readings, type: kafka, topics: [readings], group: printer, stop_at: latest}]
sinks: [{name: console, type: stdout, format: raw}]
`
	kafkaLines = "{\"id\":\"a\",\"v\":1}\n{\"id\":\"b\",\"v\":2}\n{\"id\":\"a\",\"v\":3}\n"
)

// TestKafkaBrokersEnvOverridesEmbedded: $WEIR_KAFKA_BROKERS runs files
// with an embedded block against the cluster it names, as the README
// says: the block does not apply (a data_dir it names need not exist),
// the records are written to and read from that cluster, and weir says
// which cluster it uses and why.
func TestKafkaBrokersEnvOverridesEmbedded(t *testing.T) {
	tests := []struct {
		name     string
		embedded string // more fields of the embedded block
	}{
		{"partitions only", ""},
		{"a data_dir that does not exist", ", data_dir: gone/kafka"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			brokers := startBroker(t, "readings:1")
			t.Setenv("WEIR_KAFKA_BROKERS", brokers)
			dir := pipelineDir(t, fmt.Sprintf(toKafka, tc.embedded), map[string]string{
				"lines.json": kafkaLines, "from-kafka.yaml": fmt.Sprintf(fromKafka, tc.embedded),
			})
			res := weirtest.Run(t, dir, "", "run", "--sequential", "pipeline.yaml", "from-kafka.yaml")
			if res.Code != 0 {
				t.Fatalf("exit %d\n%s", res.Code, res.Stderr)
			}
			if res.Stdout != kafkaLines {
				t.Errorf("read back %q, want %q", res.Stdout, kafkaLines)
			}
			if recs := readTopic(t, brokers, "readings", 500*time.Millisecond); len(recs) != 3 {
				t.Errorf("the cluster's topic holds %d records, want 3", len(recs))
			}
			want := fmt.Sprintf("using brokers %s from $WEIR_KAFKA_BROKERS; the embedded broker settings are ignored", brokers)
			if n := strings.Count(res.Stderr, want); n != 2 {
				t.Errorf("%q logged %d times, want once per pipeline:\n%s", want, n, res.Stderr)
			}
		})
	}
}

// startWeirBroker runs weir broker with args and returns its address.
func startWeirBroker(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(weirtest.Weir(t), append([]string{"broker", "--listen", "127.0.0.1:0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("weir broker printed no address: %v", err)
	}
	return strings.TrimSpace(addr)
}

// TestBrokerAutoCreatesTopics: weir broker creates a topic the first time
// a producer uses it, as Kafka's auto.create.topics.enable, unless
// --auto-create-topics=false, as kcat users expect.
func TestBrokerAutoCreatesTopics(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		created bool
	}{
		{"by default", nil, true},
		{"turned off", []string{"--auto-create-topics=false"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := startWeirBroker(t, tc.args...)
			res := weirtest.Run(t, ".", kafkaLines, "produce", "--brokers", addr, "--topic", "fresh")
			if created := res.Code == 0; created != tc.created {
				t.Fatalf("weir produce to a new topic: exit %d, want created %v\n%s", res.Code, tc.created, res.Stderr)
			}
			if !tc.created {
				want := fmt.Sprintf(`topic "fresh" does not exist on brokers %s; create it, or enable auto-creation`, addr)
				if !strings.Contains(res.Stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, res.Stderr)
				}
				return
			}
			res = weirtest.Run(t, ".", "", "consume", "--brokers", addr, "--topic", "fresh", "--from-beginning", "--max", "3")
			if res.Code != 0 || res.Stdout != kafkaLines {
				t.Errorf("weir consume: exit %d, %q\n%s", res.Code, res.Stdout, res.Stderr)
			}
		})
	}
}

// sinkPipeline writes its input to the topic "out", with dead letters to
// the topic "dlq"; its source reads "in" in the group "writer".
const sinkPipeline = `name: writer
kafka: {brokers: [%s]}
sources: [{name: in, type: kafka, topics: [in], group: writer, stop_at: latest}]
sinks: [{name: out, type: kafka, topic: out}]
dead_letter: {type: kafka, topic: dlq}
`

// TestKafkaSinkTopicMissing: against a cluster that does not create topics
// on first use, weir validate reports a missing sink topic, naming the
// sink, the topic and the brokers, and so does a run, at start, before its
// source joins its group (so before any record is read); against weir
// broker, which creates them, validate creates nothing and the run
// creates the topics and writes its records.
func TestKafkaSinkTopicMissing(t *testing.T) {
	tests := []struct {
		name    string
		brokers func(t *testing.T) string
		wantErr []string
	}{
		{"auto-creation off", func(t *testing.T) string { return startBroker(t, "in:1,dlq:1") },
			[]string{`sink "out": topic "out" does not exist on brokers %s; create it, or enable auto-creation`}},
		{"auto-creation off, dead letters too", func(t *testing.T) string { return startBroker(t, "in:1") },
			[]string{`sink "out": topic "out" does not exist`, `dead_letter: topic "dlq" does not exist`}},
		{"weir broker", func(t *testing.T) string { return startWeirBroker(t, "--topics", "in:1") }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			brokers := tc.brokers(t)
			produceKeyed(t, brokers, "in", 10, 2)
			dir := pipelineDir(t, fmt.Sprintf(sinkPipeline, brokers), nil)
			checkMissing(t, weirtest.Run(t, dir, "", "validate", "pipeline.yaml"), brokers, tc.wantErr)
			res := weirtest.Run(t, dir, "", "run", "pipeline.yaml")
			if tc.wantErr == nil {
				if res.Code != 0 || len(readTopic(t, brokers, "out", 500*time.Millisecond)) != 10 {
					t.Fatalf("exit %d, want the 10 records in out\n%s", res.Code, res.Stderr)
				}
				return
			}
			checkMissing(t, res, brokers, tc.wantErr)
			if groupExists(t, brokers, "writer") {
				t.Error("the source joined its group before the check failed the run")
			}
		})
	}
}

// checkMissing requires a run or validation to exit 3 with the errors in
// want (%s for the brokers), or to succeed when want is nil.
func checkMissing(t *testing.T, res weirtest.Result, brokers string, want []string) {
	t.Helper()
	if want == nil {
		if res.Code != 0 {
			t.Fatalf("exit %d\n%s", res.Code, res.Stderr)
		}
		return
	}
	if res.Code != 3 {
		t.Errorf("exit %d, want 3 (config)\n%s", res.Code, res.Stderr)
	}
	for _, w := range want {
		if w = strings.ReplaceAll(w, "%s", brokers); !strings.Contains(res.Stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, res.Stderr)
		}
	}
}

// groupExists reports whether the cluster knows the consumer group.
func groupExists(t *testing.T, brokers, group string) bool {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	groups, err := kadm.NewClient(cl).ListGroups(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, ok := groups[group]
	return ok
}

// earlierRun joins group on topic as a static member and closes without
// leaving, as the members of a run that was killed: the group keeps them
// until their session times out.
func earlierRun(t *testing.T, brokers, group, topic string, session time.Duration) {
	t.Helper()
	assigned := make(chan struct{}, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.InstanceID("earlier-run"), kgo.SessionTimeout(session),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			select {
			case assigned <- struct{}{}:
			default:
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close() // a static member does not leave when it closes
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go cl.PollFetches(ctx)
	select {
	case <-assigned:
	case <-ctx.Done():
		t.Fatal("the earlier run's member got no partitions")
	}
}

// TestKafkaWaitForEarlierMembersIsLogged: a run whose group is held by a
// member of an earlier run that did not leave says what it waits for, and
// why, while it waits, instead of sitting silent, and reports its consumer
// lag as unknown (null in /api/pipeline, absent from /metrics) rather than
// 0; it reads everything once the member's session times out.
func TestKafkaWaitForEarlierMembersIsLogged(t *testing.T) {
	t.Parallel()
	brokers := startBroker(t, "readings:2")
	produceKeyed(t, brokers, "readings", 20, 4)
	// The session outlasts weir's start by far, so that the wait is seen.
	earlierRun(t, brokers, "printer", "readings", 10*time.Second)
	yaml := strings.Replace(fmt.Sprintf(fromKafka, ""), "kafka:\n  embedded: {partitions: 1}", "kafka: {brokers: ["+brokers+"]}", 1)
	yaml = strings.Replace(yaml, "stop_at: latest}", "stop_at: latest, session_timeout: 10s}", 1)
	dir := pipelineDir(t, yaml, nil)
	a := startAdminRun(t, dir, "pipeline.yaml")
	want := "waiting for the consumer group printer: 1 member holds its partitions; a member from an earlier run that stopped without leaving the group holds them until its session times out (session_timeout 10s); set instance_id for static membership so a restart takes its partitions back at once"
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stderr:\n%s", a.log())
		}
	})
	weirtest.PollUntil(t, 30*time.Second, "the wait to be logged", func() bool { return strings.Contains(a.log(), want) })
	var info []struct{ Stats map[string]json.RawMessage }
	if _, body := a.get("/api/pipeline"); json.Unmarshal([]byte(body), &info) != nil || len(info) != 1 || string(info[0].Stats["consumer_lag"]) != "null" {
		t.Errorf("/api/pipeline while waiting: %s", body)
	}
	if _, body := a.get("/metrics"); strings.Contains(body, "weir_consumer_lag_records") {
		t.Errorf("/metrics has a consumer lag while waiting")
	}
	if err := a.cmd.Wait(); err != nil {
		t.Fatalf("weir run: %v\n%s", err, a.log())
	}
	for _, w := range []string{`members="earlier-run (`, "the consumer group assigned partitions; reading", "summary.readings.out=20"} {
		if !strings.Contains(a.log(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, a.log())
		}
	}
}
