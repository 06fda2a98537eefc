package scaleout_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/broker"
)

const (
	partitions = 12
	readings   = 30000
	rate       = 1500 // readings a second
	t0         = int64(1_700_000_000_000)
	windowMs   = 30_000
	threshold  = 30.0 // pipeline.yaml's
)

// devices are the sensor farm's: seed 000's three MAC addresses, more of
// their kind, and one that is not ASCII.
var devices = []string{"b8:27:eb:bf:9d:51", "00:0f:00:70:91:0a", "1c:bf:ce:15:ec:4d", "b8:27:eb:4a:10:02",
	"00:0f:00:12:aa:7e", "1c:bf:ce:99:01:b3", "b8:27:eb:00:00:07", "capteur-été-1"}

// output is one record of device.charge: its key (the device) and value.
type output struct{ key, value string }

// TestScaleOut runs pipeline.yaml once as a single instance, for the
// reference, which routes the key_by in process, and then, exactly once
// and at least once, as instances sharing one consumer group over the
// same readings produced under keys of their own (so every device's
// readings are spread over all 12 partitions) at a steady rate: three
// start, routing through the repartition topic; once all three read, one
// is killed (SIGKILL) and a fourth starts (the last third of the readings
// waits until it owns tasks); once it reads, one stops (SIGTERM), and
// then another, so that the last, alone while readings still flow,
// applies what the topic holds for it and goes on routing in process.
// Exactly once, the shared run's read_committed output must be the
// reference's record for record: for each device, the same sequence of
// window sums and alerts. At least once, every record of the reference
// must be there, and nothing else but repeats. The reference's sums must
// be the brute-force ones, and every instance must have read records.
func TestScaleOut(t *testing.T) {
	seed := weirtest.Seed(t)
	rs, sums := farm(rand.New(rand.NewPCG(seed, 1)))
	ref := reference(t, rs, len(sums))
	checkSums(t, ref, sums)
	for _, mode := range []string{"exactly_once", "at_least_once"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			got := shared(t, mode, rs, len(sums))
			if mode == "exactly_once" {
				compare(t, got, ref)
				return
			}
			covers(t, got, ref)
		})
	}
}

// shared runs the instances of TestScaleOut delivering mode, and returns
// the output once it holds a result for every one of windows.
func shared(t *testing.T, mode string, rs []*kgo.Record, windows int) []output {
	b := startBroker(t)
	release, stop := produce(t, b.Addrs(), rs, rate)
	defer stop()
	dir := t.TempDir()
	procs := map[string]*weirtest.Proc{}
	admin := map[string]string{}
	read := map[string]int64{}
	start := func(name string) {
		env := append(os.Environ(), "WEIR_KAFKA_BROKERS="+strings.Join(b.Addrs(), ","), "WEIR_CHECKPOINTS_DELIVERY="+mode,
			"WEIR_STATE_DIR="+filepath.Join(dir, "state-"+name), "WEIR_SOURCES_READINGS_INSTANCE_ID=scale-"+name)
		procs[name] = weirtest.Start(t, dir, name, env, "run", "--log-level", "debug", "--admin", "127.0.0.1:0", "pipeline.yaml")
		admin[name] = procs[name].AdminAddr(t)
	}
	waitRead := func(names ...string) {
		for _, n := range names {
			weirtest.PollUntil(t, 60*time.Second, "instance "+n+" to read", func() bool {
				read[n] = max(read[n], weirtest.SourceRecords(admin[n]))
				return read[n] > 0
			})
		}
	}
	start("a")
	start("b")
	start("c")
	waitRead("a", "b", "c")
	// Instances sharing the tasks send the key_by's records through the
	// repartition topic.
	for _, n := range []string{"a", "b", "c"} {
		weirtest.PollUntil(t, 60*time.Second, "instance "+n+" to route through the topic", func() bool { return weirtest.Repartition(admin[n]) == "topic" })
	}
	// The kill comes once each owns tasks: a member that joins warms up
	// copies of the tasks it is to take before the group moves them.
	for _, n := range []string{"a", "b", "c"} {
		weirtest.PollUntil(t, 60*time.Second, "instance "+n+" to own tasks", func() bool { return len(weirtest.OwnedTasks(admin[n])) > 0 })
	}
	if err := procs["b"].Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-procs["b"].Done
	start("d")
	weirtest.PollUntil(t, 60*time.Second, "instance d to own tasks", func() bool { return len(weirtest.OwnedTasks(admin["d"])) > 0 })
	release()
	waitRead("d")
	if err := procs["a"].Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-procs["a"].Done; err != nil {
		t.Errorf("instance a did not stop cleanly: %v", err)
	}
	// Alone while the readings still flow, d first applies what the
	// topic holds for it, its input paused, and then routes in process.
	waitRead("c")
	if err := procs["c"].Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-procs["c"].Done; err != nil {
		t.Errorf("instance c did not stop cleanly: %v", err)
	}
	got := consume(t, b.Addrs(), windows, mode == "exactly_once")
	weirtest.PollUntil(t, 60*time.Second, "instance d, alone, to route in process", func() bool { return weirtest.Repartition(admin["d"]) == "in_process" })
	t.Logf("instance d drained the repartition topic before routing in process: %t", procs["d"].Logged("it first applies what the repartition topic holds"))
	procs["d"].Cmd.Process.Signal(syscall.SIGTERM)
	if err := <-procs["d"].Done; err != nil {
		t.Errorf("instance d did not stop cleanly: %v", err)
	}
	waitRead("d")
	for _, n := range []string{"a", "b", "c", "d"} {
		log, _ := os.ReadFile(procs[n].Log)
		t.Logf("instance %s read %d records; its runs went on with the last run's keyed operators %d times", n, read[n],
			bytes.Count(log, []byte("the run goes on with the last run's keyed operators")))
	}
	return got
}

// farm returns the readings, in the order they are produced, and the
// brute-force charge per device and window ("device@start" → sum). Event
// time rises by 10 ms a reading, devices in random order; ampere-hours are
// quarters, whose sums are exact in any order. A last reading per
// partition, an hour later, closes every window.
func farm(rng *rand.Rand) ([]*kgo.Record, map[string]float64) { return farmOf(rng, readings) }

// farmOf is farm with n readings.
func farmOf(rng *rand.Rand, n int) ([]*kgo.Record, map[string]float64) {
	var rs []*kgo.Record
	sums := map[string]float64{}
	for i := range n {
		d := devices[rng.IntN(len(devices))]
		ts := t0 + int64(i)*10
		ah := float64(1+rng.IntN(7)) / 4
		v := fmt.Appendf(nil, `{"device_id":%q,"co":%.4f,"humidity":%.2f,"motion":%t,"temp":%.2f,"ampere_hour":%g,"ts":%d}`,
			d, 0.0011+rng.Float64()*0.006, 45+rng.Float64()*33, rng.IntN(2) == 0, 17+rng.Float64()*19, ah, ts)
		rs = append(rs, &kgo.Record{Topic: "sensor.readings", Key: fmt.Appendf(nil, "reading-%d", i), Value: v})
		sums[fmt.Sprintf("%s@%d", d, ts-ts%windowMs)] += ah
	}
	for p := range int32(partitions) {
		rs = append(rs, &kgo.Record{Topic: "sensor.readings", Partition: p, Value: fmt.Appendf(nil,
			`{"device_id":"closer","ampere_hour":0,"ts":%d}`, t0+int64(n)*10+3_600_000)})
	}
	return rs, sums
}

// startBroker starts an embedded broker with the example's topics.
func startBroker(t testing.TB) *broker.Broker {
	t.Helper()
	b, err := broker.Start(broker.Options{Topics: fmt.Sprintf("sensor.readings:%d,device.charge:%d,readings.dead:1", partitions, partitions)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// reference runs one instance over all the readings, produced before it
// starts, and returns its output once it holds a result for every window
// (plus the alerts among them).
func reference(t *testing.T, rs []*kgo.Record, windows int) []output {
	t.Helper()
	b := startBroker(t)
	_, done := produce(t, b.Addrs(), rs, 0)
	done()
	dir := t.TempDir()
	env := append(os.Environ(), "WEIR_KAFKA_BROKERS="+strings.Join(b.Addrs(), ","), "WEIR_STATE_DIR="+filepath.Join(dir, "state"))
	p := weirtest.Start(t, dir, "reference", env, "run", "--admin", "127.0.0.1:0", "pipeline.yaml")
	addr := p.AdminAddr(t)
	// One instance owns every task: it routes the key_by in process.
	weirtest.PollUntil(t, 60*time.Second, "the reference to route in process", func() bool { return weirtest.Repartition(addr) == "in_process" })
	out := consume(t, b.Addrs(), windows, false)
	p.Cmd.Process.Signal(syscall.SIGTERM)
	if err := <-p.Done; err != nil {
		t.Fatalf("the reference run did not stop cleanly: %v", err)
	}
	return out
}

// produce writes rs to their topics, each keyed record where Kafka's
// partitioner puts it and the unkeyed (closing) ones to their partitions: at rate
// readings a second in the background, or (rate 0) all at once before it
// returns. With a rate it holds the last third back until release is
// called (or a minute has passed), so that an instance started late still
// finds records to read (weirtest.Pace). stop stops it.
func produce(t testing.TB, addrs []string, rs []*kgo.Record, rate int) (release, stop func()) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...),
		kgo.RecordPartitioner(kgo.BasicConsistentPartitioner(func(topic string) func(*kgo.Record, int) int {
			keyed := kgo.StickyKeyPartitioner(nil).ForTopic(topic)
			return func(r *kgo.Record, n int) int {
				if r.Key == nil {
					return int(r.Partition)
				}
				return keyed.Partition(r, n)
			}
		})))
	if err != nil {
		t.Fatal(err)
	}
	// Records are the client's until produced, and keep what it set on
	// them: each run produces copies.
	rs = slices.Clone(rs)
	for i, r := range rs {
		rs[i] = &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Partition: r.Partition}
	}
	if rate > 0 {
		return weirtest.Pace(t, cl, rs, rate)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}
	return func() {}, func() {}
}

// consume reads device.charge read_committed until it holds results for
// windows distinct windows and, with settle, two seconds more (so that repeats
// would show), and returns what it read in order.
func consume(t testing.TB, addrs []string, windows int, settle bool) []output {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics("device.charge"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []output
	seen := map[output]bool{} // the distinct window results: at least once, some come twice
	deadline, settled := time.Now().Add(120*time.Second), time.Time{}
	for settled.IsZero() || time.Now().Before(settled) {
		if time.Now().After(deadline) {
			t.Fatalf("results for %d of %d windows after 120s", len(seen), windows)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			o := output{string(r.Key), string(r.Value)}
			out = append(out, o)
			if bytes.Contains(r.Value, []byte(`"window_start"`)) {
				seen[o] = true
			}
		})
		if len(seen) >= windows && settled.IsZero() {
			if !settle {
				break
			}
			settled = time.Now().Add(2 * time.Second)
		}
	}
	return out
}

// checkSums checks the reference's window results against the
// brute-force sums, and that its alerts are the seed's: one for each
// window whose charge differs from its device's previous window's by
// more than the threshold, right before that window's result.
func checkSums(t *testing.T, out []output, sums map[string]float64) {
	t.Helper()
	type result struct {
		Device string  `json:"device_id"`
		Start  int64   `json:"window_start"`
		Value  float64 `json:"value"`
	}
	windows, alerts := 0, 0
	for _, seq := range byKey(out) {
		var last float64
		for i, v := range seq {
			var r result
			if err := json.Unmarshal([]byte(v), &r); err != nil {
				t.Fatalf("output %q: %v", v, err)
			}
			if r.Device == "" {
				continue // an alert: checked with the window after it
			}
			windows++
			if want := sums[fmt.Sprintf("%s@%d", r.Device, r.Start)]; r.Value != want {
				t.Errorf("window %s@%d: charge %v, want %v", r.Device, r.Start, r.Value, want)
			}
			jump := last != 0 && abs(last-r.Value) > threshold
			alerted := i > 0 && strings.Contains(seq[i-1], "Sensor offset alert!")
			if jump != alerted {
				t.Errorf("window %s@%d (charge %v after %v): alert %v, want %v", r.Device, r.Start, r.Value, last, alerted, jump)
			}
			if alerted {
				alerts++
			}
			last = r.Value
		}
	}
	if windows != len(sums) {
		t.Errorf("%d window results, want %d", windows, len(sums))
	}
	t.Logf("reference: %d windows, %d alerts", windows, alerts)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// byKey returns the values of out by record key (device), in order.
func byKey(out []output) map[string][]string {
	m := map[string][]string{}
	for _, o := range out {
		m[o.key] = append(m[o.key], o.value)
	}
	return m
}

// compare checks that got is the reference's output record for record:
// per device (record key), the same sequence of values.
func compare(t *testing.T, got, ref []output) {
	t.Helper()
	g, r := byKey(got), byKey(ref)
	for _, k := range slices.Sorted(maps.Keys(r)) {
		if !slices.Equal(g[k], r[k]) {
			t.Errorf("device %q: %d results, the reference %d; first difference at %d", k, len(g[k]), len(r[k]), firstDiff(g[k], r[k]))
		}
	}
	if len(got) != len(ref) {
		t.Errorf("%d results, the reference %d", len(got), len(ref))
	}
}

// covers checks an at-least-once output against the reference: every
// record of the reference is there, and every record there is one of the
// reference's (a repeat).
func covers(t *testing.T, got, ref []output) {
	t.Helper()
	in := func(out []output) map[output]bool {
		m := map[output]bool{}
		for _, o := range out {
			m[o] = true
		}
		return m
	}
	g, r := in(got), in(ref)
	for o := range r {
		if !g[o] {
			t.Errorf("missing %s %s", o.key, o.value)
		}
	}
	for o := range g {
		if !r[o] {
			t.Errorf("not in the reference: %s %s", o.key, o.value)
		}
	}
	t.Logf("at least once: %d results, the reference %d", len(got), len(ref))
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// BenchmarkScaleOut measures pipeline.yaml, exactly once, run as 1, 2 and
// 3 instances in one group over the same 600,000 readings produced
// beforehand without a key into 12 partitions: the records per
// CPU-second of all the instances together (user and system time, from
// the processes' own accounting; the embedded broker, in the test
// process, is not counted), and the wall time until the last window is
// out. Each iteration is a whole run: use -benchtime=1x.
//
//	go test ./examples/scale-out/ -run '^$' -bench 'ScaleOut$' -benchtime=1x -count=3
func BenchmarkScaleOut(b *testing.B) { benchInstances(b, scaleOutRun) }

// BenchmarkScaleOutShared is BenchmarkScaleOut with the instances
// started first: the readings are produced once each instance owns its
// share of the tasks, so that the figures are those of instances that
// share the work from the first record to the last, without the joins,
// warm-ups and replays of instances that start together. The wall time
// counts from the first reading produced.
//
//	go test ./examples/scale-out/ -run '^$' -bench ScaleOutShared -benchtime=1x -count=3
func BenchmarkScaleOutShared(b *testing.B) { benchInstances(b, scaleOutSharedRun) }

// benchInstances runs run, whole runs over 600,000 readings, for 1, 2
// and 3 instances.
func benchInstances(b *testing.B, run func(b *testing.B, instances, n int)) {
	const n = 600_000
	for _, instances := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("instances=%d", instances), func(b *testing.B) {
			for range b.N {
				run(b, instances, n)
			}
		})
	}
}

// scaleOutRun is one measured run of BenchmarkScaleOut.
func scaleOutRun(b *testing.B, instances, n int) {
	rs, sums := farmOf(rand.New(rand.NewPCG(1, 2)), n)
	br := benchBroker(b)
	_, done := produce(b, br.Addrs(), rs, 0)
	done()
	dir := b.TempDir()
	weirtest.Weir(b) // built before the clock starts
	b.ResetTimer()
	start := time.Now()
	procs := startInstances(b, br, dir, instances)
	consume(b, br.Addrs(), len(sums), false)
	reportRun(b, procs, n, time.Since(start))
}

// scaleOutSharedRun is one measured run of BenchmarkScaleOutShared.
func scaleOutSharedRun(b *testing.B, instances, n int) {
	rs, sums := farmOf(rand.New(rand.NewPCG(1, 2)), n)
	br := benchBroker(b)
	dir := b.TempDir()
	weirtest.Weir(b)
	b.ResetTimer()
	procs := startInstances(b, br, dir, instances)
	weirtest.PollUntil(b, 60*time.Second, "every instance to own tasks", func() bool {
		return slices.IndexFunc(procs, func(p *weirtest.Proc) bool { return !ownsTasks(p, instances) }) < 0
	})
	start := time.Now()
	_, done := produce(b, br.Addrs(), rs, 0)
	done()
	consume(b, br.Addrs(), len(sums), false)
	reportRun(b, procs, n, time.Since(start))
}

// benchBroker starts an embedded broker with the example's topics, closed
// when the benchmark ends.
func benchBroker(b *testing.B) *broker.Broker {
	br, err := broker.Start(broker.Options{Topics: fmt.Sprintf("sensor.readings:%d,device.charge:%d,readings.dead:1", partitions, partitions)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(br.Close)
	return br
}

// startInstances starts the example's pipeline as n instances in one
// group.
func startInstances(b *testing.B, br *broker.Broker, dir string, n int) []*weirtest.Proc {
	var procs []*weirtest.Proc
	for i := range n {
		name := fmt.Sprintf("i%d", i)
		env := append(os.Environ(), "WEIR_KAFKA_BROKERS="+strings.Join(br.Addrs(), ","),
			"WEIR_STATE_DIR="+filepath.Join(dir, "state-"+name), "WEIR_SOURCES_READINGS_INSTANCE_ID=bench-"+name)
		procs = append(procs, weirtest.Start(b, dir, name, env, "run", "pipeline.yaml"))
	}
	return procs
}

// ownsTasks reports whether an instance of n has said last that it runs
// with tasks: one alone, that it routes in process; one of several, that
// it goes through the repartition topic for some tasks.
func ownsTasks(p *weirtest.Proc, n int) bool {
	log, _ := os.ReadFile(p.Log)
	if n == 1 {
		return bytes.Contains(log, []byte("the key_by's records are routed in process"))
	}
	i := bytes.LastIndex(log, []byte("the key_by's records go through the repartition topic"))
	if i < 0 || bytes.Contains(log[i:], []byte("moved tasks")) || bytes.Contains(log[i:], []byte("gave this instance tasks")) {
		return false
	}
	line, _, _ := bytes.Cut(log[i:], []byte("\n"))
	return bytes.Contains(line, []byte(`tasks="[`)) && !bytes.Contains(line, []byte(`tasks="[]"`))
}

// reportRun stops the instances and reports the run's figures.
func reportRun(b *testing.B, procs []*weirtest.Proc, n int, wall time.Duration) {
	var cpu time.Duration
	for _, p := range procs {
		p.Cmd.Process.Signal(syscall.SIGTERM)
		<-p.Done
		cpu += p.Cmd.ProcessState.UserTime() + p.Cmd.ProcessState.SystemTime()
	}
	b.StopTimer()
	b.ReportMetric(float64(n)/cpu.Seconds(), "records/cpu-s")
	b.ReportMetric(wall.Seconds(), "wall-s")
	b.ReportMetric(cpu.Seconds(), "cpu-s")
}
