package exactlyonce_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/broker"
)

const (
	sharedPartitions = 12
	sharedSensors    = 60
	sharedRecords    = 75000
	sharedRate       = 5000 // records per second
)

// TestSharedByTask runs pipeline-shared.yaml, whose window is keyed by the
// Kafka record key, as three instances in one consumer group on a
// 12-partition topic produced by key, each instance on its own "machine"
// (state directory and instance_id). While the readings flow, one
// instance is killed (SIGKILL); once the others have taken its tasks a
// fourth starts (the last third of the stream waits until it owns tasks,
// so that it has records to read), and then one stops cleanly. The group moves tasks at
// each step, and each instance given a task restores it from its
// changelog partition. At the end the two left own every task, and one
// answers /api/state for its own keys and names the other for the rest. Exactly once, a
// read_committed consumer must see every window once with the right sums;
// at least once, every window with the right sums, and nothing else but
// repeats. Every instance must have read records.
func TestSharedByTask(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"exactly_once", "at_least_once"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			sharedByTask(t, mode, "pipeline-shared.yaml", newSharedRig(t, 2, true))
		})
	}
}

// TestSharedRepartition is TestSharedByTask for pipeline-repartition.yaml,
// whose window follows a key_by on the sensor, over readings produced
// under keys of their own, so that a sensor's readings are spread over
// every input partition: each instance writes the readings of its input
// partitions to the repartition topic by sensor, and reads back those of
// its tasks, the repartition topic's partitions, with their event time
// from the watermarks every instance writes there.
func TestSharedRepartition(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"exactly_once", "at_least_once"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			sharedByTask(t, mode, "pipeline-repartition.yaml", newSharedRig(t, 5, false))
		})
	}
}

func sharedByTask(t *testing.T, mode, pipeline string, r *sharedRig) {
	b, rng, want := r.b, r.rng, r.want

	instances := map[string]*sharedInstance{}
	start := func(name string) *sharedInstance {
		in := r.start(t, name, "shared-", pipeline, "WEIR_CHECKPOINTS_DELIVERY="+mode)
		instances[name] = in
		return in
	}
	pause := func() { time.Sleep(time.Duration(800+rng.IntN(700)) * time.Millisecond) }

	a, bb, c := start("a"), start("b"), start("c")
	for _, in := range []*sharedInstance{a, bb, c} {
		in.waitRead(t, "reading before the kill")
	}
	// The kill comes once the group has settled, the instances owning
	// their shares of the tasks (the later two warm theirs up first): a
	// member killed during a rebalance is waited for until its session
	// times out, every other member waiting in the rebalance meanwhile,
	// which would only make the test slow.
	waitShared(t, "a, b and c to share every task", a, bb, c)
	if err := bb.p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-bb.p.Done
	// Once b's session times out, a and c own every task between them.
	waitOwnAll(t, "a and c to take b's tasks", a, c)
	d := start("d")
	joined := time.Now()
	weirtest.PollUntil(t, 60*time.Second, "the late instance to own tasks", func() bool { return len(weirtest.OwnedTasks(d.admin)) > 0 })
	// The tasks move to d only once its copies of them are warm
	// (KIP-441): it owns nothing until it has asked for them.
	if !d.p.Logged("warm-up copies are caught up with the changelog") {
		t.Errorf("the late instance was given tasks %v without warming them up", weirtest.OwnedTasks(d.admin))
	}
	t.Logf("the late instance owned tasks %.1f s after it started", time.Since(joined).Seconds())
	r.release()
	d.waitRead(t, "the late instance reading")
	pause()
	if err := a.p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-a.p.Done; err != nil {
		t.Errorf("instance a did not stop cleanly: %v", err)
	}

	got := consumeUntil(t, b.Addrs(), want, mode == "exactly_once", c.p.Done)
	// Once a's session is gone, c and d own every task between them.
	waitOwnAll(t, "c and d to own every task", c, d)
	checkStateQueries(t, c, d, want)
	for _, name := range []string{"c", "d"} {
		in := instances[name]
		in.waitRead(t, "reading by the end")
		if err := in.p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := <-in.p.Done; err != nil {
			t.Errorf("instance %s did not stop cleanly: %v", name, err)
		}
	}
	for _, name := range []string{"a", "b", "c", "d"} {
		t.Logf("instance %s read %d records", name, instances[name].read)
	}
	restored := 0
	for _, in := range instances {
		if in.p.Logged(`msg="tasks restored from the changelog"`) {
			restored++
		}
	}
	if restored == 0 {
		t.Errorf("no instance restored a task from the changelog, though tasks moved with their state")
	}
	dup := checkResults(t, got, want, mode == "exactly_once")
	t.Logf("%s: %d results, %d windows, %d duplicates", mode, len(got), len(want), dup)
}

// sharedRig is what a test of pipeline-shared.yaml runs against: a broker
// with the topics, a directory for the instances' state and logs, a
// seeded random source, and the readings streaming in (produceReadings) with
// their reference windows. The test's cleanup stops it.
type sharedRig struct {
	b    *broker.Broker
	dir  string
	rng  *rand.Rand
	want map[string]window
	// release lets the producer write the last third of the stream,
	// which it holds back until then (or a minute at most), so that an
	// instance started late still finds records to read.
	release func()
}

// newSharedRig starts a rig whose randomness is the time's seed and
// stream, producing the readings by sensor or, without byKey, each under
// a key of its own.
func newSharedRig(t *testing.T, stream uint64, byKey bool) *sharedRig {
	t.Helper()
	return newSharedRigAt(t, stream, byKey, sharedRate)
}

// newSharedRigAt is newSharedRig producing rate readings a second.
func newSharedRigAt(t *testing.T, stream uint64, byKey bool, rate int) *sharedRig {
	t.Helper()
	b, err := broker.Start(broker.Options{Topics: fmt.Sprintf("readings:%d,sums:%d,readings.dead:1", sharedPartitions, sharedPartitions)})
	if err != nil {
		t.Fatal(err)
	}
	r := &sharedRig{b: b, dir: t.TempDir(), rng: rand.New(rand.NewPCG(weirtest.Seed(t), stream))}
	want, release, stop := produceReadings(t, b.Addrs(), r.rng, byKey, rate)
	r.want, r.release = want, release
	t.Cleanup(func() { stop(); b.Close() })
	return r
}

// env is the environment of instance name: the rig's brokers, its own
// state directory and instance_id (prefix+name), and extra.
func (r *sharedRig) env(name, prefix string, extra ...string) []string {
	return append(append(os.Environ(),
		"WEIR_KAFKA_BROKERS="+strings.Join(r.b.Addrs(), ","),
		"WEIR_STATE_DIR="+filepath.Join(r.dir, "state-"+name),
		"WEIR_SOURCES_READINGS_INSTANCE_ID="+prefix+name,
	), extra...)
}

// start starts instance name of pipeline, with the environment r.env
// gives it, and waits for its admin server.
func (r *sharedRig) start(t *testing.T, name, prefix, pipeline string, extra ...string) *sharedInstance {
	t.Helper()
	in := &sharedInstance{p: startPipeline(t, r.dir, name, r.env(name, prefix, extra...), "--admin", "127.0.0.1:0", pipeline)}
	in.admin = in.p.AdminAddr(t)
	return in
}

// sharedInstance is one weir process of the shared pipeline, with its
// admin address and the most records its source was seen to have read.
type sharedInstance struct {
	p     *weirProc
	admin string
	read  int64
}

// waitRead polls the instance's metrics until its source has read records.
func (in *sharedInstance) waitRead(t *testing.T, what string) {
	t.Helper()
	weirtest.PollUntil(t, 60*time.Second, what, func() bool {
		if n := sourceRecords(in.admin); n > in.read {
			in.read = n
		}
		return in.read > 0
	})
}

// sourceRecords scrapes the records the pipeline's source read from the
// metrics at admin; 0 if it cannot.
func sourceRecords(admin string) int64 {
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "weir_records_out_total{") && strings.Contains(line, `stage="source"`) {
			f := strings.Fields(line)
			n, _ := strconv.ParseFloat(f[len(f)-1], 64)
			return int64(n)
		}
	}
	return 0
}

// waitOwnAll waits until the instances own every task between them, as
// their /api/pipeline says.
func waitOwnAll(t *testing.T, what string, ins ...*sharedInstance) {
	t.Helper()
	weirtest.PollUntil(t, 60*time.Second, what, func() bool {
		owned := map[int32]bool{}
		for _, in := range ins {
			for _, p := range weirtest.OwnedTasks(in.admin) {
				owned[p] = true
			}
		}
		return len(owned) == sharedPartitions
	})
}

// waitShared waits until the instances own every task between them, as
// evenly as can be: the warm-ups are over, and no member will ask the
// group to rebalance.
func waitShared(t *testing.T, what string, ins ...*sharedInstance) {
	t.Helper()
	waitOwnAll(t, what, ins...)
	weirtest.PollUntil(t, 60*time.Second, what, func() bool {
		lo, hi := sharedPartitions, 0
		for _, in := range ins {
			n := len(weirtest.OwnedTasks(in.admin))
			lo, hi = min(lo, n), max(hi, n)
		}
		return hi <= lo+1
	})
}

// checkStateQueries asks c's /api/state for a sensor's windows: for a
// sensor of one of c's tasks it answers; for one of d's it answers 421,
// naming d's instance_id, as Kafka Streams' queryMetadataForKey would.
func checkStateQueries(t *testing.T, c, d *sharedInstance, want map[string]window) {
	t.Helper()
	mine := map[int32]bool{}
	for _, p := range weirtest.OwnedTasks(c.admin) {
		mine[p] = true
	}
	part := kgo.StickyKeyPartitioner(nil).ForTopic("readings")
	asked := map[bool]bool{}
	for _, w := range want {
		local := mine[int32(part.Partition(&kgo.Record{Key: []byte(w.Sensor)}, sharedPartitions))]
		if asked[local] {
			continue
		}
		asked[local] = true
		resp, err := http.Get("http://" + c.admin + "/api/state?operator=sums&key=" + url.QueryEscape(w.Sensor))
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Owner struct {
				InstanceID string `json:"instance_id"`
			} `json:"owner"`
		}
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		switch {
		case local && resp.StatusCode != http.StatusOK:
			t.Errorf("c's /api/state for %q, of one of its tasks: status %d", w.Sensor, resp.StatusCode)
		case !local && (resp.StatusCode != http.StatusMisdirectedRequest || body.Owner.InstanceID != "shared-d"):
			t.Errorf("c's /api/state for %q, of one of d's tasks: status %d, owner %q; want 421 naming shared-d", w.Sensor, resp.StatusCode, body.Owner.InstanceID)
		}
	}
}

// produceReadings writes keyedReadings at a steady rate in the
// background, holding the last third back until release is called (or a
// minute has passed), and returns the reference windows, release and a
// function that stops it.
func produceReadings(t *testing.T, addrs []string, rng *rand.Rand, byKey bool, rate int) (want map[string]window, release, stop func()) {
	rs, want := keyedReadings(rng, sharedRecords)
	if !byKey {
		for i, r := range rs[:sharedRecords] {
			r.Key = fmt.Appendf(nil, "reading-%d", i)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic("readings"))
	if err != nil {
		t.Fatal(err)
	}
	release, stop = weirtest.Pace(t, cl, rs, rate)
	return want, release, stop
}

// keyedReadings returns n readings keyed by sensor, for Kafka's default
// partitioner to place, and the reference windows they make. Event time
// rises by 5 ms a reading, with sensors in random order; a last reading
// on every partition, an hour later and under a key of that partition,
// closes every window.
func keyedReadings(rng *rand.Rand, n int) ([]*kgo.Record, map[string]window) {
	want := map[string]window{}
	var rs []*kgo.Record
	for i := range n {
		s := fmt.Sprintf("sensor-%02d-é", rng.IntN(sharedSensors))
		ts := t0 + int64(i)*5
		v := int64(rng.IntN(1000) - 300)
		rs = append(rs, &kgo.Record{Key: []byte(s), Value: fmt.Appendf(nil, `{"sensor":%q,"value":%d,"ts":%d}`, s, v, ts)})
		w := window{Sensor: s, Start: ts - ts%1000}
		w = want[w.id()].add(w, v)
		want[w.id()] = w
	}
	for _, key := range keyPerPartition(sharedPartitions) {
		rs = append(rs, &kgo.Record{Key: []byte(key), Value: fmt.Appendf(nil, `{"sensor":%q,"value":0,"ts":%d}`, key, t0+int64(n)*5+3600_000)})
	}
	return rs, want
}

// keyPerPartition returns, for each of n partitions, a key that Kafka's
// default partitioner places there.
func keyPerPartition(n int) []string {
	part := kgo.StickyKeyPartitioner(nil).ForTopic("readings")
	keys := make([]string, n)
	for i, found := 0, 0; found < n; i++ {
		k := "end-" + strconv.Itoa(i)
		if p := part.Partition(&kgo.Record{Key: []byte(k)}, n); keys[p] == "" {
			keys[p] = k
			found++
		}
	}
	return keys
}

// TestSharedCrashRecovery is the crash test against three instances of
// pipeline-shared.yaml: under the stream, it SIGKILLs a random instance at
// five random moments and restarts it (same instance_id and state
// directory, so it takes its tasks back at once), deleting the state
// directory before one restart, so that instance restores its tasks from
// their changelog partitions. Exactly once, the read_committed output must
// be the reference exactly; at least once, every window with the right
// sum, and nothing else but repeats.
func TestSharedCrashRecovery(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"exactly_once", "at_least_once"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			sharedCrashRecovery(t, mode, "pipeline-shared.yaml", newSharedRig(t, 3, true))
		})
	}
}

// TestSharedRepartitionCrashRecovery is the crash test against three
// instances of pipeline-repartition.yaml, over readings produced under
// keys of their own: a killed instance's input partitions and tasks both
// move, and at least once the repartition topic's repeats, which the
// upstream rollbacks write, are applied once.
func TestSharedRepartitionCrashRecovery(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"exactly_once", "at_least_once"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			sharedCrashRecovery(t, mode, "pipeline-repartition.yaml", newSharedRig(t, 6, false))
		})
	}
}

func sharedCrashRecovery(t *testing.T, mode, pipeline string, r *sharedRig) {
	r.release() // the whole stream: no instance starts late
	b, dir, rng, want := r.b, r.dir, r.rng, r.want
	runs := map[string]int{}
	start := func(name string) *weirProc {
		runs[name]++
		env := r.env(name, "crash-", "WEIR_CHECKPOINTS_DELIVERY="+mode)
		return startPipeline(t, dir, fmt.Sprintf("%s-%d", name, runs[name]), env, pipeline)
	}
	names := []string{"a", "b", "c"}
	procs := map[string]*weirProc{}
	for _, n := range names {
		procs[n] = start(n)
	}
	const kills = 5
	for k := range kills {
		time.Sleep(time.Duration(500+rng.IntN(1000)) * time.Millisecond)
		n := names[rng.IntN(len(names))]
		if err := procs[n].Cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-procs[n].Done
		if k == kills/2 {
			if err := os.RemoveAll(filepath.Join(dir, "state-"+n)); err != nil {
				t.Fatal(err)
			}
			t.Logf("kill %d: %s, and its state directory", k+1, n)
		} else {
			t.Logf("kill %d: %s", k+1, n)
		}
		procs[n] = start(n)
	}
	got := consumeUntil(t, b.Addrs(), want, mode == "exactly_once", procs["a"].Done)
	for _, n := range names {
		if err := procs[n].Cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := <-procs[n].Done; err != nil {
			t.Errorf("instance %s did not stop cleanly: %v", n, err)
		}
	}
	dup := checkResults(t, got, want, mode == "exactly_once")
	t.Logf("%s: %d results, %d windows, %d duplicates", mode, len(got), len(want), dup)
}

// TestSharedStandbyReplica runs pipeline-shared.yaml as two instances with
// standby_replicas: 1, exactly once, under the stream: each keeps a warm
// copy of the other's tasks. Once both have read for a while, it SIGKILLs
// one; when its session times out the survivor is given its tasks and
// replays only the changelog's tail for them: fewer changes than a
// quarter of what the changelog holds (a cold restore of half the tasks
// replays about half). The output stays exactly the reference.
func TestSharedStandbyReplica(t *testing.T) {
	t.Parallel()
	r := newSharedRig(t, 4, true)
	r.release()
	b, want := r.b, r.want
	start := func(name string) *sharedInstance {
		return r.start(t, name, "standby-", "pipeline-shared.yaml", "WEIR_CHECKPOINTS_STANDBY_REPLICAS=1")
	}
	a, bb := start("a"), start("b")
	for _, in := range []*sharedInstance{a, bb} {
		in.waitRead(t, "both instances reading")
	}
	weirtest.PollUntil(t, 60*time.Second, "a's standby copies to be warmed", func() bool {
		return a.p.Logged(`msg="standby tasks: applied their changelog partitions"`)
	})
	time.Sleep(2 * time.Second) // a few more standby passes under the stream
	restoresBefore := strings.Count(readLog(a.p), `msg="tasks restored from the changelog"`)
	if err := bb.p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-bb.p.Done
	killed := time.Now()
	var line string
	weirtest.PollUntil(t, 60*time.Second, "a to be given b's tasks and restore them", func() bool {
		lines := strings.Split(readLog(a.p), "\n")
		n := 0
		for _, l := range lines {
			if strings.Contains(l, `msg="tasks restored from the changelog"`) {
				if n++; n > restoresBefore && strings.Contains(l, fmt.Sprintf("tasks=%q", allTasks(sharedPartitions))) {
					line = l
				}
			}
		}
		return line != ""
	})
	t.Logf("%.1f s after the kill: %s", time.Since(killed).Seconds(), line[strings.Index(line, "msg="):])
	got := consumeUntil(t, b.Addrs(), want, true, a.p.Done)
	checkTail(t, b.Addrs(), "sensor-sums-shared-changelog", line)
	stopCleanly(t, "a", a.p)
	checkResults(t, got, want, true)
}

// checkTail fails the test when the restore logged in line replayed a
// quarter or more of the changes the changelog holds: taking over from a
// current copy replays only the changelog's tail.
func checkTail(t *testing.T, addrs []string, changelog, line string) {
	t.Helper()
	replayed := logInt(t, line, "changes")
	total := changelogChangesOf(t, addrs, changelog)
	t.Logf("the takeover replayed %d changes; the changelog holds %d", replayed, total)
	if replayed*4 >= total {
		t.Errorf("the takeover replayed %d of the changelog's %d changes: more than its tail", replayed, total)
	}
}

// stopCleanly stops instance name with SIGTERM and fails the test unless
// it exits cleanly.
func stopCleanly(t *testing.T, name string, p *weirProc) {
	t.Helper()
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-p.Done; err != nil {
		t.Errorf("instance %s did not stop cleanly: %v", name, err)
	}
}

// readLog returns what p logged so far.
func readLog(p *weirProc) string {
	b, _ := os.ReadFile(p.Log)
	return string(b)
}

// allTasks is how a log line lists every task of n: "[0 1 … n-1]".
func allTasks(n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// logInt returns the integer attribute key of a log line.
func logInt(t *testing.T, line, key string) int {
	t.Helper()
	_, rest, ok := strings.Cut(line, " "+key+"=")
	if !ok {
		t.Fatalf("no %s in %q", key, line)
	}
	v, _, _ := strings.Cut(rest, " ")
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s in %q: %v", key, line, err)
	}
	return n
}
