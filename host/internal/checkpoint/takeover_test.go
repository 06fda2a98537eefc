package checkpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/kafka"
	"github.com/weir-stream/weir/state"
)

// TestTakeoverRecordsCatchUp catches up, as a run given tasks does, with
// a generated changelog of four tasks (sets, deletes and rewrites of
// unicode keys over several checkpoints): the store then holds each
// key's last value, and the run's next checkpoint records where each
// task's partition was caught up to and its last marker. More
// checkpoints are written after; the next run's restore, from what that
// checkpoint recorded, replays only them and ends with the reference
// state.
func TestTakeoverRecordsCatchUp(t *testing.T) {
	const parts = 4
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	br, err := kafka.StartBroker(kafka.BrokerConfig{Topics: map[string]int32{"in": parts}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	cc := kafka.ClientConfig{Brokers: br.Addrs()}
	cl, err := kafka.NewChangelog(cc, "cu-changelog", nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.EnsureTopic(ctx, []string{"in"}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(weirtest.Seed(t), 3))
	ref := map[string]string{}
	epoch := uint64(0)
	// checkpoints writes n checkpoints of generated changes to the
	// changelog, as another instance owning every task would, and
	// returns how many changes they hold.
	checkpoints := func(n int) int {
		changes := 0
		for range n {
			epoch++
			batch := map[string]*string{}
			for range 50 + rng.IntN(200) {
				k := string(state.Key(nil, "sums", fmt.Appendf(nil, "sensor-%d-é", rng.IntN(300)), nil))
				if _, ok := ref[k]; ok && rng.IntN(4) == 0 {
					batch[k] = nil
					continue
				}
				v := fmt.Sprintf(`{"sum":%d}`, rng.Int64())
				batch[k] = &v
			}
			each := func(yield func(key, value []byte, deleted bool) error) error {
				for _, k := range slices.Sorted(maps.Keys(batch)) {
					v := batch[k]
					if v == nil {
						delete(ref, k)
					} else {
						ref[k] = *v
					}
					if err := yield([]byte(k), []byte(ref[k]), v == nil); err != nil {
						return err
					}
				}
				return nil
			}
			m, _ := (&engine.Checkpoint{Epoch: epoch}).Marshal()
			if _, _, err := cl.Write(ctx, each, m, nil); err != nil {
				t.Fatal(err)
			}
			changes += len(batch)
		}
		return changes
	}
	checkpoints(6)

	store, err := state.OpenBadger(state.BadgerOptions{Dir: t.TempDir(), Checkpointed: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	tasks := kafka.NewTasks(false)
	tasks.SetCount(parts)
	tasks.Begin()
	ck := &Coordinator{Store: store, Changelog: cl, Tasks: tasks, Logger: quiet, offsets: make([]int64, parts)}
	r := restorer{store: store, cs: store, cc: cc, topic: "cu-changelog", log: quiet}
	res, err := newTakeover(ck, r, tasks).pass(ctx, []int32{0, 1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := ck.Commit(ctx, &engine.Checkpoint{Epoch: 100}); err != nil {
		t.Fatal(err)
	}
	sameAs(t, store, ref, "after catching up")
	committed, _ := store.Committed()
	var meta Meta
	if err := json.Unmarshal(committed.Meta, &meta); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(meta.ChangelogOffsets, res.Next) {
		t.Errorf("the checkpoint after catching up records offsets %v, want where it got, %v", meta.ChangelogOffsets, res.Next)
	}
	for p := range int32(parts) {
		if cp, err := engine.UnmarshalCheckpoint(meta.TaskMarkers[p]); err != nil || cp.Epoch != epoch {
			t.Errorf("task %d's marker %s (%v), want the last written, epoch %d", p, meta.TaskMarkers[p], err, epoch)
		}
	}

	tail := checkpoints(2)
	got, err := r.replayTasks(ctx, &meta, []int32{0, 1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if got.Changes != tail {
		t.Errorf("the next run's restore replayed %d changes, want the %d written after the catching up", got.Changes, tail)
	}
	sameAs(t, store, ref, "after the next run's restore")
}

// sameAs fails the test unless store holds exactly ref's keys and values.
func sameAs(t *testing.T, store *state.Badger, ref map[string]string, when string) {
	t.Helper()
	n := 0
	if err := store.Scan(nil, func(k, v []byte) error {
		n++
		if want, ok := ref[string(k)]; !ok || want != string(v) {
			t.Errorf("%s: %q = %q, want %q (present %v)", when, k, v, want, ok)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != len(ref) {
		t.Errorf("%s: %d keys, want %d", when, n, len(ref))
	}
}
