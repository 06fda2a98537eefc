package checkpoint

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/kafka"
	"github.com/weir-stream/weir/state"
)

// BenchmarkChangelogRestore measures what a standby that kept no state
// (a new machine) pays to take over: replaying a changelog of 1M keys,
// written as 10 checkpoints of 100k into a changelog of 1 or 12
// partitions (tasks), from the embedded broker into an empty badger
// store, as Setup.Run does. A warm standby replays only
// what the active instance wrote since its last look, a second before.
func BenchmarkChangelogRestore(b *testing.B) {
	for _, parts := range []int32{1, 12} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) { benchRestore(b, parts) })
	}
}

// benchChangelog starts an embedded broker with an input topic of parts
// partitions and returns a changelog made for it, both closed when b
// ends.
func benchChangelog(b *testing.B, parts int32) (kafka.ClientConfig, *kafka.Changelog) {
	quiet := slog.New(slog.DiscardHandler)
	br, err := kafka.StartBroker(kafka.BrokerConfig{Topics: map[string]int32{"bench-in": parts}, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(br.Close)
	cc := kafka.ClientConfig{Brokers: br.Addrs()}
	cl, err := kafka.NewChangelog(cc, "bench-changelog", nil, quiet)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Close)
	if err := cl.EnsureTopic(context.Background(), []string{"bench-in"}); err != nil {
		b.Fatal(err)
	}
	return cc, cl
}

func benchRestore(b *testing.B, parts int32) {
	const keys, checkpoints = 1_000_000, 10
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	cc, cl := benchChangelog(b, parts)
	writeBenchChangelog(b, cl, keys, checkpoints)
	cl.Close()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		store, err := state.OpenBadger(state.BadgerOptions{Dir: b.TempDir(), Checkpointed: true, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		var meta Meta
		res, err := restorer{store: store, cs: store, cc: cc, topic: "bench-changelog", log: quiet}.replay(ctx, &meta)
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		b.StopTimer()
		if res.Changes != keys || res.Meta() == nil || len(res.Next) != int(parts) {
			b.Fatalf("replayed %d changes (marker %v) from %d partitions, want %d from %d", res.Changes, res.Meta() != nil, len(res.Next), keys, parts)
		}
		b.ReportMetric(took.Seconds(), "s/restore")
		b.ReportMetric(float64(keys)/took.Seconds(), "keys/s")
		store.Close()
		b.StartTimer()
	}
}

// writeBenchChangelog writes keys window sums to cl, as checkpoints
// checkpoints of as many keys each.
func writeBenchChangelog(b *testing.B, cl *kafka.Changelog, keys, checkpoints int) {
	value := []byte(`{"sum":12345.5,"count":42,"window_start":1700000000000}`)
	per := keys / checkpoints
	for c := range checkpoints {
		each := func(yield func(key, value []byte, deleted bool) error) error {
			for i := c * per; i < (c+1)*per; i++ {
				if err := yield(state.Key(nil, "sums", fmt.Appendf(nil, "sensor-%07d", i), []byte{'p'}), value, false); err != nil {
					return err
				}
			}
			return nil
		}
		if _, _, err := cl.Write(context.Background(), each, []byte(`{"epoch":1}`), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChangelogWrite measures what a checkpoint's changelog write
// costs, from the first change to the last marker acknowledged: 1,000
// changed keys a checkpoint, into a changelog of 1 or 12 partitions
// (tasks) on the embedded broker, with an idempotent producer (at least
// once). Twelve partitions add a marker each and spread the changes.
//
//	go test -run '^$' -bench ChangelogWrite -count 3 ./host/internal/checkpoint/
func BenchmarkChangelogWrite(b *testing.B) {
	for _, parts := range []int32{1, 12} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			ctx := context.Background()
			_, cl := benchChangelog(b, parts)
			value := []byte(`{"sum":12345.5,"count":42,"window_start":1700000000000}`)
			keys := make([][]byte, 1000)
			for i := range keys {
				keys[i] = state.Key(nil, "sums", fmt.Appendf(nil, "sensor-%07d", i), []byte{'p'})
			}
			each := func(yield func(key, value []byte, deleted bool) error) error {
				for _, k := range keys {
					if err := yield(k, value, false); err != nil {
						return err
					}
				}
				return nil
			}
			for b.Loop() {
				if _, _, err := cl.Write(ctx, each, []byte(`{"epoch":1}`), nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCatchUpPause measures what catching up with tasks given to a
// running instance costs its own tasks: the changelog of
// BenchmarkChangelogRestore (1M keys over 12 partitions) is replayed in
// the background into a badger store, as takeover does, while the run
// takes a checkpoint every 200 ms, each of which holds its own tasks
// paused. It reports the catching up's time, the checkpoints' longest and
// median pause, and the longest without a catching up beside them; with
// the replay written into the store's committed checkpoint
// (ApplyCommitted, as weir does), and into the run's epoch, which each
// checkpoint then flushes and lists.
//
//	go test -run '^$' -bench CatchUpPause -benchtime 1x -count 3 ./host/internal/checkpoint/
func BenchmarkCatchUpPause(b *testing.B) {
	const keys, checkpoints, parts = 1_000_000, 10, 12
	cc, cl := benchChangelog(b, parts)
	writeBenchChangelog(b, cl, keys, checkpoints)
	for _, into := range []string{"committed", "epoch"} {
		b.Run("into="+into, func(b *testing.B) { benchCatchUp(b, cc, cl, into == "epoch") })
	}
}

// epochStore hides state.Badger's ApplyCommitted, so that a catching up
// writes into the run's epoch.
type epochStore struct{ state.Store }

func benchCatchUp(b *testing.B, cc kafka.ClientConfig, cl *kafka.Changelog, epoch bool) {
	const keys, parts = 1_000_000, 12
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	for b.Loop() {
		b.StopTimer()
		store, err := state.OpenBadger(state.BadgerOptions{Dir: b.TempDir(), Checkpointed: true, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		tasks := kafka.NewTasks(false)
		tasks.SetCount(parts)
		tasks.Begin()
		ck := &Coordinator{Store: store, Changelog: cl, Tasks: tasks, Logger: quiet, offsets: make([]int64, parts)}
		r := restorer{store: store, cs: store, cc: cc, topic: "bench-changelog", log: quiet}
		if epoch {
			r.store = epochStore{store}
		}
		tk := newTakeover(ck, r, tasks)
		idle := benchPauses(b, ck, nil)
		b.StartTimer()
		start := time.Now()
		var took time.Duration
		busy := benchPauses(b, ck, func() {
			res, err := tk.pass(ctx, []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
			if err != nil || res.Changes != keys {
				b.Errorf("caught up with %d changes (%v), want %d", res.Changes, err, keys)
			}
			took = time.Since(start)
		})
		b.StopTimer()
		b.ReportMetric(took.Seconds(), "s/catch-up")
		b.ReportMetric(busy[len(busy)-1].Seconds()*1e3, "ms-max-pause")
		b.ReportMetric(busy[len(busy)/2].Seconds()*1e3, "ms-median-pause")
		b.ReportMetric(idle[len(idle)-1].Seconds()*1e3, "ms-max-pause-idle")
		store.Close()
		b.StartTimer()
	}
}

// benchPauses takes checkpoints of ck every 200 ms while work runs (or,
// with work nil, five of them), and returns their durations, sorted.
func benchPauses(b *testing.B, ck *Coordinator, work func()) []time.Duration {
	done := make(chan struct{})
	if work == nil {
		work = func() { time.Sleep(time.Second) }
	}
	go func() {
		defer close(done)
		work()
	}()
	var pauses []time.Duration
	for epoch := uint64(1); ; epoch++ {
		select {
		case <-done:
			slices.Sort(pauses)
			return pauses
		case <-time.After(200 * time.Millisecond):
		}
		start := time.Now()
		if err := ck.Commit(context.Background(), &engine.Checkpoint{Epoch: epoch}); err != nil {
			b.Fatal(err)
		}
		pauses = append(pauses, time.Since(start))
	}
}
