package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/internal/task"
	"github.com/weir-stream/weir/state"
)

// clChange is one generated state change.
type clChange struct {
	key     []byte
	value   []byte
	deleted bool
}

// clCheckpoints generates checkpoints of changes over many record keys
// (unicode, empty, long), each key at most once per checkpoint, as a
// store's Changes lists them, with deletions of keys written before.
func clCheckpoints(rng *rand.Rand, checkpoints, perCheckpoint int) [][]clChange {
	recordKeys := [][]byte{{}, []byte("ключ"), []byte("日本"), []byte("a\x00b"), make([]byte, 300)}
	for i := range 400 {
		recordKeys = append(recordKeys, fmt.Appendf(nil, "device-%d", i))
	}
	var out [][]clChange
	for c := range checkpoints {
		seen := map[string]bool{}
		var cp []clChange
		for range perCheckpoint {
			rk := recordKeys[rng.IntN(len(recordKeys))]
			k := state.Key(nil, []string{"sums", "seen"}[rng.IntN(2)], rk, fmt.Appendf(nil, "w%d", rng.IntN(3)))
			if seen[string(k)] {
				continue
			}
			seen[string(k)] = true
			if c > 0 && rng.IntN(5) == 0 {
				cp = append(cp, clChange{key: k, deleted: true})
				continue
			}
			cp = append(cp, clChange{key: k, value: fmt.Appendf(nil, `{"c":%d,"v":%d}`, c, rng.Int64())})
		}
		out = append(out, cp)
	}
	return out
}

// clWrite writes one checkpoint's changes with meta.
func clWrite(t *testing.T, cl *Changelog, changes []clChange, meta string) []int64 {
	t.Helper()
	next, _, err := cl.Write(context.Background(), func(yield func(key, value []byte, deleted bool) error) error {
		for _, c := range changes {
			if err := yield(c.key, c.value, c.deleted); err != nil {
				return err
			}
		}
		return nil
	}, []byte(meta), nil)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

// clReplay replays the changelog from from into a map.
func clReplay(t *testing.T, cc ClientConfig, topic string, from []int64, into map[string]string) ReplayResult {
	t.Helper()
	var last ReplayProgress
	calls := 0
	res, err := Replay(context.Background(), cc, topic, from, nil, func(k, v []byte, deleted bool) error {
		if deleted {
			delete(into, string(k))
		} else {
			into[string(k)] = string(v)
		}
		return nil
	}, func(p ReplayProgress) {
		calls++
		if r, _ := p.Totals(); len(last.Tasks) > 0 {
			if r0, _ := last.Totals(); r < r0 {
				t.Errorf("progress went back: %d offsets replayed after %d", r, r0)
			}
		}
		last = p
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Next == nil {
		if calls != 0 {
			t.Errorf("a missing changelog reported progress %d times", calls)
		}
		return res
	}
	// The last report: nothing left, and every partition's offsets from
	// where it started to its end (at least to where the next replay
	// resumes, which is before a write that has not reached its marker).
	if calls == 0 || len(last.Tasks) != len(res.Next) {
		t.Fatalf("progress reported %d times, last with %d tasks, for %d partitions", calls, len(last.Tasks), len(res.Next))
	}
	for p, tp := range last.Tasks {
		start := int64(0)
		if p < len(from) {
			start = from[p]
		}
		if tp.Left != 0 || tp.Replayed < res.Next[p]-start {
			t.Errorf("task %d: last progress %+v, want at least %d replayed and none left", p, tp, res.Next[p]-start)
		}
	}
	if last.ETA() != 0 {
		t.Errorf("ETA %v with nothing left", last.ETA())
	}
	return res
}

// TestChangelogTasks writes generated checkpoints to a changelog made for
// an input of 5 partitions and checks that it has one partition per task,
// that every change is in its record key's task's partition and every
// partition ends each checkpoint with its marker, and that a replay, from
// the start or from a checkpoint's offsets, rebuilds exactly the state a
// brute-force fold of the changes gives.
func TestChangelogTasks(t *testing.T) {
	t.Parallel()
	const parts = 5
	cc := snkCluster(t, map[string]int32{"in": parts, "other": 2})
	ctx := context.Background()
	cl, err := NewChangelog(cc, "p-changelog", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.EnsureTopic(ctx, []string{"other", "in", "not-there"}); err != nil {
		t.Fatal(err)
	}
	if cl.Partitions() != parts {
		t.Fatalf("the changelog has %d partitions, want %d (the largest input's)", cl.Partitions(), parts)
	}
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	cps := clCheckpoints(rand.New(rand.NewPCG(seed, 3)), 4, 600)
	want, atSecond := map[string]string{}, map[string]string{}
	var nexts [][]int64
	for i, cp := range cps {
		nexts = append(nexts, clWrite(t, cl, cp, fmt.Sprintf(`{"epoch":%d}`, i+1)))
		for _, c := range cp {
			if c.deleted {
				delete(want, string(c.key))
			} else {
				want[string(c.key)] = string(c.value)
			}
		}
		if i == 1 {
			maps.Copy(atSecond, want)
		}
	}
	clCheckPlacement(t, cc, "p-changelog", parts, len(cps))

	got := map[string]string{}
	res := clReplay(t, cc, "p-changelog", nil, got)
	if !maps.Equal(got, want) {
		t.Errorf("a replay from the start rebuilt %d keys, the changes fold to %d", len(got), len(want))
	}
	if string(res.Meta()) != `{"epoch":4}` || !slices.Equal(res.Next, nexts[3]) {
		t.Errorf("replay ended at marker %s, offsets %v; want epoch 4 at %v", res.Meta(), res.Next, nexts[3])
	}
	// From the second checkpoint's offsets, onto its state.
	res = clReplay(t, cc, "p-changelog", nexts[1], atSecond)
	if !maps.Equal(atSecond, want) {
		t.Errorf("a replay from the second checkpoint rebuilt %d keys, want %d", len(atSecond), len(want))
	}
	if n := len(cps[2]) + len(cps[3]); res.Changes != n {
		t.Errorf("a replay from the second checkpoint applied %d changes, want %d", res.Changes, n)
	}
	// Nothing new: nothing applied, the offsets stay.
	res = clReplay(t, cc, "p-changelog", nexts[3], map[string]string{})
	if res.Changes != 0 || res.Meta() != nil || !slices.Equal(res.Next, nexts[3]) {
		t.Errorf("a replay at the end applied %d changes, marker %s, offsets %v", res.Changes, res.Meta(), res.Next)
	}
}

// clCheckPlacement reads the changelog raw: every change in its task's
// partition, and each of the checkpoints ending with a marker in every
// partition.
func clCheckPlacement(t *testing.T, cc ClientConfig, topic string, parts, checkpoints int) {
	t.Helper()
	adm := kadm.NewClient(clClient(t, cc))
	td, err := adm.ListTopics(context.Background(), topic)
	if err != nil || len(td[topic].Partitions) != parts {
		t.Fatalf("changelog topic: %v, %d partitions, want %d", err, len(td[topic].Partitions), parts)
	}
	markers := make([]int, parts)
	for _, r := range snkConsume(t, cc, topic, int(snkEndOffsets(t, cc, topic))) {
		if string(r.Key) == ChangelogMarker {
			markers[r.Partition]++
			continue
		}
		_, rk, _, ok := state.SplitKey(r.Key)
		if !ok {
			t.Fatalf("partition %d, offset %d: not a state key: %q", r.Partition, r.Offset, r.Key)
		}
		if p := int32(task.Of(rk, parts)); r.Partition != p {
			t.Errorf("record key %q is in partition %d, its task is %d", rk, r.Partition, p)
		}
	}
	for p, n := range markers {
		if n != checkpoints {
			t.Errorf("partition %d has %d markers, want one per checkpoint (%d)", p, n, checkpoints)
		}
	}
}

// TestChangelogOnePartitionKept: a changelog made with one partition (as
// every changelog was before tasks) keeps it, with every key in it, and a
// replay rebuilds its state; a missing changelog replays as empty.
func TestChangelogOnePartitionKept(t *testing.T) {
	t.Parallel()
	cc := snkCluster(t, map[string]int32{"in": 6, "old-changelog": 1})
	res := clReplay(t, cc, "never-made", nil, map[string]string{})
	if res.Changes != 0 || res.Meta() != nil {
		t.Errorf("a missing changelog replayed %d changes, marker %s", res.Changes, res.Meta())
	}
	cl, err := NewChangelog(cc, "old-changelog", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.EnsureTopic(context.Background(), []string{"in"}); err != nil {
		t.Fatal(err)
	}
	if cl.Partitions() != 1 {
		t.Fatalf("an existing one-partition changelog now has %d tasks", cl.Partitions())
	}
	cps := clCheckpoints(rand.New(rand.NewPCG(7, 7)), 2, 300)
	want := map[string]string{}
	for i, cp := range cps {
		clWrite(t, cl, cp, fmt.Sprintf(`{"epoch":%d}`, i+1))
		for _, c := range cp {
			if c.deleted {
				delete(want, string(c.key))
			} else {
				want[string(c.key)] = string(c.value)
			}
		}
	}
	clCheckPlacement(t, cc, "old-changelog", 1, 2)
	got := map[string]string{}
	if res := clReplay(t, cc, "old-changelog", []int64{0}, got); !maps.Equal(got, want) || string(res.Meta()) != `{"epoch":2}` {
		t.Errorf("replay rebuilt %d keys (want %d), marker %s", len(got), len(want), res.Meta())
	}
}

// clClient returns a plain client of cc, closed with the test.
func clClient(t *testing.T, cc ClientConfig) *kgo.Client {
	t.Helper()
	opts, err := cc.Opts()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestReplayProgressETA(t *testing.T) {
	for _, tc := range []struct {
		name     string
		p        ReplayProgress
		replayed int64
		left     int64
		eta      time.Duration
	}{
		{"nothing read yet", ReplayProgress{Tasks: []TaskProgress{{0, 50}}, Elapsed: time.Second}, 0, 50, 0},
		{"a quarter in 2 s", ReplayProgress{Tasks: []TaskProgress{{10, 30}, {0, 10}}, Elapsed: 2 * time.Second}, 10, 40, 8 * time.Second},
		{"done", ReplayProgress{Tasks: []TaskProgress{{7, 0}, {3, 0}}, Elapsed: time.Second}, 10, 0, 0},
		{"no tasks", ReplayProgress{}, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, l := tc.p.Totals()
			if r != tc.replayed || l != tc.left || tc.p.ETA() != tc.eta {
				t.Errorf("Totals() = %d, %d, ETA() = %v; want %d, %d, %v", r, l, tc.p.ETA(), tc.replayed, tc.left, tc.eta)
			}
		})
	}
}

// TestChangelogPartitionsChanged: once a changelog's partitions grow, its
// keys' old changes are in partitions their tasks no longer name, so a
// replay fails, saying what to do, instead of restoring a wrong state.
func TestChangelogPartitionsChanged(t *testing.T) {
	t.Parallel()
	cc := snkCluster(t, map[string]int32{"in": 2})
	cl, err := NewChangelog(cc, "grown", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	if err := cl.EnsureTopic(ctx, []string{"in"}); err != nil {
		t.Fatal(err)
	}
	clWrite(t, cl, clCheckpoints(rand.New(rand.NewPCG(1, 1)), 1, 50)[0], `{"epoch":1}`)
	clReplay(t, cc, "grown", nil, map[string]string{})
	if _, err := kadm.NewClient(clClient(t, cc)).CreatePartitions(ctx, 1, "grown"); err != nil {
		t.Fatal(err)
	}
	_, err = Replay(ctx, cc, "grown", nil, nil, func([]byte, []byte, bool) error { return nil }, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "written when the changelog had 2 partitions, and it has 3 now") {
		t.Fatalf("replaying a changelog whose partitions grew: %v", err)
	}
}

// TestChangelogWaitsForItsInput: a changelog whose input topics do not
// exist yet is not made with a partition count that could never change;
// it waits, saying so, until an input exists, and takes its partitions.
// Stopped while waiting, it says what it waited for.
func TestChangelogWaitsForItsInput(t *testing.T) {
	t.Parallel()
	cc := snkCluster(t, map[string]int32{"unrelated": 1})
	var logs weirtest.SyncBuffer
	cl, err := NewChangelog(cc, "late-changelog", nil, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	done := make(chan error, 1)
	go func() { done <- cl.EnsureTopic(context.Background(), []string{"late"}) }()
	weirtest.PollUntil(t, 10*time.Second, "the wait for the input to be logged", func() bool {
		return strings.Contains(logs.String(), "waiting for an input topic to exist")
	})
	if _, err := kadm.NewClient(clClient(t, cc)).CreateTopic(context.Background(), 3, -1, nil, "late"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if cl.Partitions() != 3 {
		t.Errorf("the changelog has %d partitions, want the late input's 3", cl.Partitions())
	}

	ctx, cancel := context.WithCancel(context.Background())
	var otherLogs weirtest.SyncBuffer
	other, err := NewChangelog(cc, "never-changelog", nil, slog.New(slog.NewTextHandler(&otherLogs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	go func() { done <- other.EnsureTopic(ctx, []string{"never"}) }()
	weirtest.PollUntil(t, 10*time.Second, "the second wait to be logged", func() bool {
		return strings.Contains(otherLogs.String(), "waiting for an input topic to exist")
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "[never]") {
		t.Errorf("stopped while waiting: %v", err)
	}
}

// TestChangelogOwnedTasks writes checkpoints as an instance owning some
// of the tasks: only their changes and markers reach the changelog, the
// other partitions' offsets come back as -1 and their changes are
// counted as skipped, and a replay of the owned tasks alone rebuilds
// exactly their keys.
func TestChangelogOwnedTasks(t *testing.T) {
	t.Parallel()
	const parts = 4
	cc := snkCluster(t, map[string]int32{"in": parts})
	ctx := context.Background()
	cl, err := NewChangelog(cc, "owned-changelog", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.EnsureTopic(ctx, []string{"in"}); err != nil {
		t.Fatal(err)
	}
	owned := []int32{1, 3}
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	want := map[string]string{}
	for i, cp := range clCheckpoints(rand.New(rand.NewPCG(seed, 4)), 3, 500) {
		foreign := 0
		next, skipped, err := cl.Write(ctx, func(yield func(key, value []byte, deleted bool) error) error {
			for _, c := range cp {
				if !slices.Contains(owned, cl.partition(c.key)) {
					foreign++
				} else if c.deleted {
					delete(want, string(c.key))
				} else {
					want[string(c.key)] = string(c.value)
				}
				if err := yield(c.key, c.value, c.deleted); err != nil {
					return err
				}
			}
			return nil
		}, fmt.Appendf(nil, `{"epoch":%d}`, i+1), owned)
		if err != nil {
			t.Fatal(err)
		}
		if skipped != foreign {
			t.Errorf("checkpoint %d: %d changes skipped, want the %d of tasks not owned", i+1, skipped, foreign)
		}
		for p, n := range next {
			if mine := slices.Contains(owned, int32(p)); mine != (n >= 0) {
				t.Errorf("checkpoint %d: partition %d's offset %d; owned %v", i+1, p, n, mine)
			}
		}
	}
	got := map[string]string{}
	res, err := Replay(ctx, cc, "owned-changelog", nil, owned, func(k, v []byte, deleted bool) error {
		if deleted {
			delete(got, string(k))
		} else {
			got[string(k)] = string(v)
		}
		return nil
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Errorf("a replay of the owned tasks rebuilt %d keys, want %d", len(got), len(want))
	}
	for p, m := range res.Markers {
		if mine := slices.Contains(owned, int32(p)); mine != (string(m) == `{"epoch":3}`) {
			t.Errorf("partition %d's last marker %q; owned %v", p, m, mine)
		}
	}
}

// TestChangelogDropsUnfinishedWrites writes a checkpoint, then the changes
// of one that never reaches its markers (its instance died mid-write, at
// least once), then another checkpoint: a replay applies only the
// completed checkpoints' changes, and one that ends in the unfinished
// changes resumes before them, so the state is never ahead of the
// checkpoint it adopts.
func TestChangelogDropsUnfinishedWrites(t *testing.T) {
	t.Parallel()
	const parts = 3
	cc := snkCluster(t, map[string]int32{"in": parts})
	ctx := context.Background()
	cl, err := NewChangelog(cc, "torn-changelog", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.EnsureTopic(ctx, []string{"in"}); err != nil {
		t.Fatal(err)
	}
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	cps := clCheckpoints(rand.New(rand.NewPCG(seed, 6)), 3, 300)
	fold := func(into map[string]string, cp []clChange) {
		for _, c := range cp {
			if c.deleted {
				delete(into, string(c.key))
			} else {
				into[string(c.key)] = string(c.value)
			}
		}
	}
	first := clWrite(t, cl, cps[0], `{"epoch":1}`)
	// The torn write: changes under a write id of their own, no marker.
	raw := srcClient(t, cc, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer raw.Close()
	torn := []kgo.RecordHeader{{Key: ChangelogCheckpointHeader, Value: []byte("torn-id!")}}
	for _, c := range cps[1] {
		r := &kgo.Record{Topic: "torn-changelog", Partition: cl.partition(c.key), Key: c.key, Headers: torn}
		if !c.deleted {
			r.Value = append([]byte{'v'}, c.value...)
		}
		if err := raw.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{}
	fold(want, cps[0])
	got := map[string]string{}
	res := clReplay(t, cc, "torn-changelog", nil, got)
	if !maps.Equal(got, want) {
		t.Errorf("a replay ending in a torn write rebuilt %d keys, want the first checkpoint's %d", len(got), len(want))
	}
	if !slices.Equal(res.Next, first) {
		t.Errorf("a replay ending in a torn write resumes at %v, want after the first checkpoint's markers %v", res.Next, first)
	}
	// The next owner's checkpoint follows the torn write.
	clWrite(t, cl, cps[2], `{"epoch":2}`)
	fold(want, cps[2])
	for _, from := range [][]int64{nil, res.Next} {
		again := maps.Clone(got)
		if from == nil {
			again = map[string]string{}
		}
		clReplay(t, cc, "torn-changelog", from, again)
		if !maps.Equal(again, want) {
			t.Errorf("a replay from %v past the torn write rebuilt %d keys, want %d (the completed checkpoints')", from, len(again), len(want))
		}
	}
}

// TestReplayForSlices replays a changelog of many checkpoints with a
// budget too small for one fetch: each call stops after a fetch once
// every partition has passed a marker, reports how far behind it is, and
// the next goes on from there, until a call finds nothing behind; the
// state so rebuilt, slice by slice, is what one whole replay rebuilds.
func TestReplayForSlices(t *testing.T) {
	t.Parallel()
	const parts = 4
	cc := snkCluster(t, map[string]int32{"in": parts})
	cl, err := NewChangelog(cc, "sliced-changelog", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.EnsureTopic(context.Background(), []string{"in"}); err != nil {
		t.Fatal(err)
	}
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	// Values of 2 KB, so that a partition holds more than a fetch
	// returns (1 MB a partition).
	const checkpoints = 40
	big := bytes.Repeat([]byte("é"), 1024)
	for i, cp := range clCheckpoints(rand.New(rand.NewPCG(seed, 9)), checkpoints, 100) {
		for j := range cp {
			if !cp[j].deleted {
				cp[j].value = append(cp[j].value, big...)
			}
		}
		clWrite(t, cl, cp, fmt.Sprintf(`{"epoch":%d}`, i+1))
	}
	want := map[string]string{}
	clReplay(t, cc, "sliced-changelog", nil, want)
	got := map[string]string{}
	var from []int64
	n := 1
	for ; n <= checkpoints; n++ {
		res, err := ReplayFor(context.Background(), cc, "sliced-changelog", from, nil, func(k, v []byte, deleted bool) error {
			if deleted {
				delete(got, string(k))
			} else {
				got[string(k)] = string(v)
			}
			return nil
		}, nil, nil, time.Nanosecond)
		if err != nil {
			t.Fatal(err)
		}
		from = res.Next
		if !slicesContainPositive(res.Behind) {
			break
		}
	}
	if n > checkpoints {
		t.Errorf("the replay took %d slices for %d checkpoints", n, checkpoints)
	}
	t.Logf("%d slices (as many as the client's fetches)", n)
	if !maps.Equal(got, want) {
		t.Errorf("sliced replays rebuilt %d keys, a whole replay %d", len(got), len(want))
	}
}

// slicesContainPositive reports whether any of ns is above zero.
func slicesContainPositive(ns []int64) bool {
	for _, n := range ns {
		if n > 0 {
			return true
		}
	}
	return false
}

// TestSealedSome checks when a replay out of budget may stop: once every
// partition it reads has passed a marker or reached its end, so that a
// checkpoint's write larger than a budget's reading still goes through.
func TestSealedSome(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		from, next, sealed, end []int64
		want                    bool
	}{
		{name: "nothing read", from: []int64{0, 0}, next: []int64{0, 0}, sealed: []int64{0, 0}, end: []int64{5, 5}},
		{name: "one partition past a marker", from: []int64{0, 0}, next: []int64{3, 2}, sealed: []int64{3, 0}, end: []int64{5, 5}},
		{name: "both past a marker", from: []int64{0, 0}, next: []int64{3, 2}, sealed: []int64{3, 1}, end: []int64{5, 5}, want: true},
		{name: "one at its end, one past a marker", from: []int64{0, 2}, next: []int64{4, 5}, sealed: []int64{2, 2}, end: []int64{9, 5}, want: true},
		{name: "a partition not read", from: []int64{0, 5}, next: []int64{1, 5}, sealed: []int64{1, 5}, end: []int64{5, 5}, want: true},
		{name: "a large write not yet through", from: []int64{4, 0}, next: []int64{900, 10}, sealed: []int64{4, 10}, end: []int64{1000, 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp := &replayRun{from: tc.from, next: tc.next, sealed: tc.sealed, end: tc.end}
			if got := rp.sealedSome(); got != tc.want {
				t.Errorf("sealedSome() = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestReplayWaitsForOpenTransactions: a task's changelog partition holds
// a checkpoint of its first owner, then the records of a second owner's
// transaction left open (an instance killed mid-checkpoint, whose
// transaction the brokers abort only at its timeout), then a checkpoint
// that a third owner committed after them. The restore of the task by its
// next owner must rebuild the third owner's checkpoint, which the group's
// offsets already include: it waits for the open transaction to end
// instead of stopping at the last stable offset, before the committed
// checkpoint. A standby's pass, which must not wait for the owner's
// transactions, reads what is stable and returns.
func TestReplayWaitsForOpenTransactions(t *testing.T) {
	t.Parallel()
	const topic = "handed-changelog"
	cc := snkCluster(t, map[string]int32{"in": 2})
	ctx := context.Background()
	cl, err := NewChangelog(cc, topic, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.EnsureTopic(ctx, []string{"in"}); err != nil {
		t.Fatal(err)
	}
	const task = 1
	// checkpoint writes one change and the marker to the task's
	// partition in a transaction of owner's, which it commits or leaves
	// open.
	checkpoint := func(owner, key, value, meta string, commit bool) *kgo.Client {
		tx := srcClient(t, cc, kgo.TransactionalID(owner), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		t.Cleanup(tx.Close)
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		id := []kgo.RecordHeader{{Key: ChangelogCheckpointHeader, Value: []byte(owner)}}
		tasks := []kgo.RecordHeader{{Key: ChangelogTasksHeader, Value: []byte("2")}, id[0]}
		if err := tx.ProduceSync(ctx,
			&kgo.Record{Topic: topic, Partition: task, Key: []byte(key), Value: []byte("v" + value), Headers: id},
			&kgo.Record{Topic: topic, Partition: task, Key: []byte(ChangelogMarker), Value: []byte("m" + meta), Headers: tasks},
		).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if commit {
			if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
		}
		return tx
	}
	checkpoint("first-owner", "a", "1", `{"epoch":1}`, true)
	killed := checkpoint("killed-owner", "b", "2", `{"epoch":2}`, false)
	checkpoint("third-owner", "c", "3", `{"epoch":3}`, true)

	replay := func(ctx context.Context, budget time.Duration, log *slog.Logger) (map[string]string, ReplayResult, error) {
		got := map[string]string{}
		res, err := ReplayFor(ctx, cc, topic, nil, []int32{task}, func(k, v []byte, deleted bool) error {
			got[string(k)] = string(v)
			return nil
		}, nil, log, budget)
		return got, res, err
	}
	standbyCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	got, _, err := replay(standbyCtx, time.Second, nil)
	cancel()
	if err != nil {
		t.Fatalf("a standby's pass over a partition with an open transaction: %v", err)
	}
	if want := map[string]string{"a": "1"}; !maps.Equal(got, want) {
		t.Errorf("a standby's pass rebuilt %v, want what is stable, %v", got, want)
	}

	var logs weirtest.SyncBuffer
	type result struct {
		got map[string]string
		res ReplayResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, res, err := replay(ctx, 0, slog.New(slog.NewTextHandler(&logs, nil)))
		done <- result{got, res, err}
	}()
	r, returned := awaitOpenTxnWait(t, "the restore", &logs, done)
	if returned {
		t.Fatalf("the restore returned while a transaction was open before a committed checkpoint: it rebuilt %v (error %v) and the marker %q, "+
			"not the third owner's checkpoint", r.got, r.err, r.res.Markers[task])
	}
	if err := killed.EndTransaction(ctx, kgo.TryAbort); err != nil { // the brokers' abort at its timeout
		t.Fatal(err)
	}
	r = <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if want := map[string]string{"a": "1", "c": "3"}; !maps.Equal(r.got, want) {
		t.Errorf("the restore rebuilt %v, want %v", r.got, want)
	}
	if m := string(r.res.Markers[task]); m != `{"epoch":3}` {
		t.Errorf("the restore's last marker is %q, want the third owner's", m)
	}
}

// awaitOpenTxnWait polls until call (named what) logs that it waits for
// the transactions open on its partitions to end, or returns its result
// on done: it returns that result, and whether call returned instead of
// waiting.
func awaitOpenTxnWait[R any](t *testing.T, what string, logs *weirtest.SyncBuffer, done <-chan R) (r R, returned bool) {
	t.Helper()
	weirtest.PollUntil(t, 30*time.Second, what+" to wait for the open transaction, or to return", func() bool {
		select {
		case r = <-done:
			returned = true
			return true
		default:
			return strings.Contains(logs.String(), "waiting for the transactions open on the partitions to end")
		}
	})
	return r, returned
}

// TestTopicPartitionsNow checks that a topic another client made a
// moment after this one found it missing shows at once, for the changelog
// and repartition topics that instances starting together race to make:
// kadm's ListTopics answers from the client's metadata cache for 5 s.
func TestTopicPartitionsNow(t *testing.T) {
	cc := snkCluster(t, map[string]int32{"in": 6})
	opts, err := cc.Opts()
	if err != nil {
		t.Fatal(err)
	}
	mine, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()
	other, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := context.Background()
	steps := []struct {
		name   string
		create string // made by the other client before the step
		topics []string
		most   int
		found  bool
	}{
		{name: "input only", topics: []string{"in", "made-later"}, most: 6, found: true},
		{name: "missing", topics: []string{"made-later"}, most: 1},
		{name: "made by another client", create: "made-later", topics: []string{"made-later"}, most: 9, found: true},
	}
	for _, st := range steps {
		if st.create != "" {
			if _, err := kadm.NewClient(other).CreateTopic(ctx, 9, -1, nil, st.create); err != nil {
				t.Fatal(err)
			}
		}
		most, found, err := maxPartitions(ctx, mine, st.topics)
		if err != nil || most != st.most || found != st.found {
			t.Errorf("%s: maxPartitions = %d, %v, %v; want %d, %v", st.name, most, found, err, st.most, st.found)
		}
	}
	if n, err := topicPartitions(ctx, mine, "made-later"); err != nil || n != 9 {
		t.Errorf("topicPartitions = %d, %v; want 9", n, err)
	}
}
