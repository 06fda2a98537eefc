package exactlyonce_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/broker"
)

const (
	sensors    = 20
	partitions = 4
	records    = 20000
	rate       = 5000 // records per second while the pipeline is being killed
	kills      = 5
	t0         = int64(1_700_000_000_000)
)

// window is one result: a sensor's 1-second window.
type window struct {
	Sensor   string `json:"sensor"`
	Start    int64  `json:"window_start"`
	Total    int64  `json:"total"`
	Readings int64  `json:"readings"`
}

func (w window) id() string { return fmt.Sprintf("%s@%d", w.Sensor, w.Start) }

// TestCrashRecovery runs the pipeline under a steady stream of readings and
// SIGKILLs it at five random moments, restarting it each time; before one
// restart it also deletes the state directory, as if the pipeline moved to
// a new machine, so the state must be rebuilt from the changelog. Exactly
// once, the results a read_committed consumer sees must be the no-fault
// reference exactly: every window once, with the right sums. At least
// once, every window must be there with the right sums, and nothing else
// but repeats of them.
func TestCrashRecovery(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"exactly_once", "at_least_once"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			crashRecovery(t, mode)
		})
	}
}

func crashRecovery(t *testing.T, mode string) {
	bin := weirtest.Weir(t)
	b, err := broker.Start(broker.Options{Topics: fmt.Sprintf("readings:%d,sums:%d,readings.dead:1", partitions, partitions)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	rebuilt := 0 // the run that started without a state directory
	env := append(os.Environ(),
		"WEIR_KAFKA_BROKERS="+strings.Join(b.Addrs(), ","),
		"WEIR_STATE_DIR="+stateDir,
		"WEIR_CHECKPOINTS_DELIVERY="+mode,
	)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))

	want, stopProducing := produce(t, b.Addrs())
	defer stopProducing()

	runs := 0
	type proc struct {
		Cmd  *exec.Cmd
		Done chan error
	}
	start := func() proc {
		runs++
		cmd := exec.Command(bin, "run", "--log-level", "debug", "pipeline.yaml")
		cmd.Env = env
		logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("run-%d.log", runs)))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr, cmd.Stdout = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := proc{cmd, make(chan error, 1)}
		go func() { p.Done <- cmd.Wait(); logf.Close() }()
		return p
	}
	defer func() {
		if t.Failed() {
			for i := 1; i <= runs; i++ {
				b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("run-%d.log", i)))
				t.Logf("run %d:\n%s", i, lastLines(string(b), 40))
			}
		}
	}()

	p := start()
	for k := range kills {
		// Each run is killed once it has committed a checkpoint, at a
		// random moment after: on a loaded machine a run can take
		// longer to start than the pause before its kill, and runs
		// that never commit leave the changelog nothing to restore.
		log := filepath.Join(dir, fmt.Sprintf("run-%d.log", runs))
		weirtest.PollUntil(t, 60*time.Second, fmt.Sprintf("run %d to commit a checkpoint", runs), func() bool {
			b, _ := os.ReadFile(log)
			return strings.Contains(string(b), "msg=checkpoint ")
		})
		select {
		case err := <-p.Done:
			t.Fatalf("run %d ended by itself: %v", runs, err)
		case <-time.After(time.Duration(300+rng.IntN(700)) * time.Millisecond):
		}
		if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.Done
		if k == kills/2 {
			// Lose the machine's disk: the state must come back from
			// the changelog topic.
			if err := os.RemoveAll(stateDir); err != nil {
				t.Fatal(err)
			}
			rebuilt = runs + 1
		}
		p = start()
	}

	got := consumeUntil(t, b.Addrs(), want, mode == "exactly_once", p.Done)
	// At least once, the earlier runs may have written every result: the
	// last one must have started, its signal handler in place, before it
	// is asked to stop.
	last := filepath.Join(dir, fmt.Sprintf("run-%d.log", runs))
	weirtest.PollUntil(t, 30*time.Second, "the last run to start", func() bool {
		b, _ := os.ReadFile(last)
		return strings.Contains(string(b), `msg="pipeline started"`)
	})
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-p.Done; err != nil {
		t.Errorf("the last run did not stop cleanly: %v", err)
	}

	// The run that started without a state directory restores it from
	// the changelog, unless it was killed before it could; then the next
	// one does, from an empty directory. The replay logs what it read
	// before the store records it, and the restore's own line comes
	// after: a run killed between the two restored the state and says so
	// with the first.
	restored := false
	for r := rebuilt; r <= runs && !restored; r++ {
		log, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("run-%d.log", r)))
		for _, msg := range []string{`msg="state restored from the changelog"`, `msg="replayed the changelog"`} {
			if i := strings.Index(string(log), msg); i >= 0 && !restored {
				restored = true
				t.Logf("run %d: %s", r, strings.SplitN(string(log[i:]), "\n", 2)[0])
			}
		}
	}
	if !restored {
		t.Errorf("no run from run %d on, the first without a state directory, restored the state from the changelog", rebuilt)
	}
	checkChangelogTasks(t, b.Addrs())

	dup := checkResults(t, got, want, mode == "exactly_once")
	t.Logf("%s: %d results, %d windows, %d runs, %d duplicates", mode, len(got), len(want), runs, dup)
}

// checkChangelogTasks requires the changelog to have a partition per
// input partition (a task each), every one holding state changes besides
// its checkpoint markers: the sensors' keys spread over the tasks.
func checkChangelogTasks(t *testing.T, addrs []string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	const topic = "sensor-sums-changelog"
	ends, err := adm.ListCommittedOffsets(context.Background(), topic)
	if err != nil || ends.Error() != nil {
		t.Fatalf("listing the changelog's ends: %v %v", err, ends.Error())
	}
	if n := len(ends[topic]); n != partitions {
		t.Fatalf("the changelog has %d partitions, want one per input partition (%d)", n, partitions)
	}
	if changes := changelogRecords(t, addrs, topic, ends); slices.Contains(changes, 0) {
		t.Errorf("state changes per changelog partition: %v; every task should hold some of the %d sensors", changes, sensors)
	}
}

// changelogChanges counts the state changes (not the markers) the
// changelog holds, read committed.
func changelogChanges(t *testing.T, addrs []string) int {
	return changelogChangesOf(t, addrs, "sensor-sums-changelog")
}

// changelogChangesOf counts the state changes (not the markers) changelog
// topic holds, read committed.
func changelogChangesOf(t *testing.T, addrs []string, topic string) int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(context.Background(), topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range changelogRecords(t, addrs, topic, ends) {
		n += c
	}
	return n
}

// changelogRecords reads the changelog, read committed, up to ends, and
// counts its state changes (not its markers) per partition.
func changelogRecords(t *testing.T, addrs []string, topic string, ends kadm.ListedOffsets) []int {
	t.Helper()
	cons, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	changes := make([]int, len(ends[topic]))
	next := make([]int64, len(ends[topic]))
	done := func() bool {
		for p := range next {
			if o, _ := ends.Lookup(topic, int32(p)); next[p] < o.Offset {
				return false
			}
		}
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for !done() {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading the changelog: read to %v of %v", next, ends)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() && !strings.Contains(string(r.Key), "weir-checkpoint") {
				changes[r.Partition]++
			}
		})
	}
	return changes
}

// checkResults requires a result for every window of want, each equal to
// the reference, and, exactly once, no window twice; it returns the
// number of repeated results.
func checkResults(t *testing.T, got []window, want map[string]window, exactlyOnce bool) (dup int) {
	t.Helper()
	seen := map[string]int{}
	for _, w := range got {
		ref, ok := want[w.id()]
		switch {
		case !ok:
			t.Errorf("unexpected result %+v", w)
		case w != ref:
			t.Errorf("result %+v, want %+v", w, ref)
		}
		seen[w.id()]++
	}
	var missing []string
	for id := range want {
		switch n := seen[id]; {
		case n == 0:
			missing = append(missing, id)
		case n > 1:
			dup += n - 1
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		t.Errorf("%d of %d windows missing, such as %v", len(missing), len(want), missing[:min(len(missing), 8)])
	}
	if exactlyOnce && dup > 0 {
		t.Errorf("%d duplicate results", dup)
	}
	return dup
}

// produce writes the readings at a steady rate in the background and
// returns the reference results, and a function that stops it. Readings go
// round the partitions by sensor; event time rises by 5 ms a reading. A
// last reading on every partition, an hour later, closes every window.
func produce(t *testing.T, addrs []string) (map[string]window, func()) {
	return produceGated(t, addrs, nil)
}

// produceGated is produce, holding the second half of the stream back
// until gate is closed (when gate is not nil), so that a test can make
// something happen while records still flow.
func produceGated(t *testing.T, addrs []string, gate <-chan struct{}) (map[string]window, func()) {
	want := map[string]window{}
	type reading struct {
		part int32
		key  string
		val  []byte
	}
	var rs []reading
	for i := range records {
		s := fmt.Sprintf("s%02d", i%sensors)
		ts := t0 + int64(i)*5
		v := int64(i % 97)
		rs = append(rs, reading{int32(i % sensors % partitions), s, fmt.Appendf(nil, `{"sensor":%q,"value":%d,"ts":%d}`, s, v, ts)})
		w := window{Sensor: s, Start: ts - ts%1000}
		w = want[w.id()].add(w, v)
		want[w.id()] = w
	}
	for p := range int32(partitions) {
		rs = append(rs, reading{p, "end", fmt.Appendf(nil, `{"sensor":"end","value":0,"ts":%d}`, t0+int64(records)*5+3600_000)})
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic("readings"))
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
		per := rate / 100
		for i := 0; i < len(rs); i += per {
			if gate != nil && i >= len(rs)/2 {
				select {
				case <-gate:
					gate = nil
				case <-ctx.Done():
					return
				}
			}
			<-tick.C
			var batch []*kgo.Record
			for _, r := range rs[i:min(i+per, len(rs))] {
				batch = append(batch, &kgo.Record{Partition: r.part, Key: []byte(r.key), Value: r.val})
			}
			if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
				if ctx.Err() == nil {
					t.Errorf("producing: %v", err)
				}
				return
			}
		}
	}()
	return want, func() { cancel(); wg.Wait() }
}

func (w window) add(k window, v int64) window {
	k.Total, k.Readings = w.Total+v, w.Readings+1
	return k
}

// consumeUntil reads the results, read_committed, until there are results
// for n distinct windows; exactly once, it then reads on for a while to
// catch any more. It fails when no new window has come for 90 s.
func consumeUntil(t testing.TB, addrs []string, want map[string]window, settle bool, exited chan error) []window {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics("sums"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []window
	distinct := map[string]bool{}
	n := len(want)
	deadline := time.Now().Add(90 * time.Second)
	var settleUntil time.Time
	for {
		now := time.Now()
		if !settleUntil.IsZero() && now.After(settleUntil) {
			return got
		}
		if now.After(deadline) {
			t.Fatalf("results for %d of %d windows, and none new for 90s; none for %v", len(distinct), n, missing(want, distinct, 10))
		}
		select {
		case err := <-exited:
			t.Fatalf("the pipeline ended by itself (%v) with results for %d of %d windows", err, len(distinct), n)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		before := len(distinct)
		fs.EachRecord(func(r *kgo.Record) {
			var w window
			if err := json.Unmarshal(r.Value, &w); err != nil {
				t.Fatalf("result %s: %v", r.Value, err)
			}
			got = append(got, w)
			distinct[w.id()] = true
		})
		if len(distinct) > before {
			// Fail only when the results stop coming: on a loaded
			// machine, moves of tasks and failovers hold some tasks'
			// results back, which come after them.
			deadline = time.Now().Add(90 * time.Second)
		}
		if len(distinct) >= n && settleUntil.IsZero() {
			if !settle {
				return got
			}
			settleUntil = time.Now().Add(2 * time.Second)
		}
	}
}

// missing returns up to n of want's windows that seen lacks.
func missing(want map[string]window, seen map[string]bool, n int) []window {
	var out []window
	for id, w := range want {
		if !seen[id] && len(out) < n {
			out = append(out, w)
		}
	}
	return out
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
