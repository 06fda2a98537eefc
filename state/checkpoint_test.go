package state

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

func openCheckpointed(t *testing.T, dir string, cache int64) *Badger {
	t.Helper()
	o := testBadgerOptions(dir, cache)
	o.Checkpointed = true
	b, err := OpenBadger(o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// snapshot returns every key and value of s.
func snapshot(t *testing.T, s Scanner) map[string]string {
	t.Helper()
	m := map[string]string{}
	if err := s.Scan(nil, func(k, v []byte) error {
		m[string(k)] = string(v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

func sameState(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d keys, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("key %q = %q, want %q", k, got[k], v)
		}
	}
}

// randomEpoch applies n random puts and deletes over keys k0..k(keys-1) to
// both s and the model.
func randomEpoch(t *testing.T, r *rand.Rand, s Store, model map[string]string, n, keys int) {
	t.Helper()
	for range n {
		k := fmt.Sprintf("k%04d", r.IntN(keys))
		var m Mutation
		if r.IntN(5) == 0 {
			m = del(k)
			delete(model, k)
		} else {
			v := fmt.Sprintf("%s-%d-%s", k, r.Uint32(), make([]byte, r.IntN(40)))
			m = set(k, v)
			model[k] = v
		}
		if err := s.Apply([]Mutation{m}); err != nil {
			t.Fatal(err)
		}
	}
}

func clone(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// A store reopened after a crash is exactly as of its last checkpoint,
// whatever was evicted to disk, flushed or half-checkpointed since.
func TestBadgerCheckpointRollsBackOnOpen(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cache int64
		after func(t *testing.T, b *Badger) // what happens after the last checkpoint, before the crash
	}{
		{"evictions", 2000, func(t *testing.T, b *Badger) {}},
		{"no-cache", -1, func(t *testing.T, b *Badger) {}},
		{"flushed", 0, func(t *testing.T, b *Badger) {
			if err := b.Flush(); err != nil { // a checkpoint that crashed before its record
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := rand.New(rand.NewPCG(1, 2))
			model := map[string]string{}
			var want map[string]string
			var wantMeta string
			for round := range 4 {
				b := openCheckpointed(t, dir, tc.cache)
				if cp, ok := b.Committed(); round > 0 && (!ok || string(cp.Meta) != wantMeta) {
					t.Fatalf("round %d: committed meta %q (found %v), want %q", round, cp.Meta, ok, wantMeta)
				}
				if round > 0 {
					sameState(t, snapshot(t, b), want)
					model = clone(want)
				}
				for epoch := range 3 {
					randomEpoch(t, r, b, model, 300, 200)
					wantMeta = fmt.Sprintf("round %d epoch %d", round, epoch)
					if err := b.Checkpoint([]byte(wantMeta)); err != nil {
						t.Fatal(err)
					}
					want = clone(model)
				}
				randomEpoch(t, r, b, model, 300, 200) // lost in the crash
				tc.after(t, b)
				if err := b.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// A prepared checkpoint found on open blocks the store until Resolve keeps
// it or rolls it back.
func TestBadgerPrepareResolve(t *testing.T) {
	for _, commit := range []bool{true, false} {
		t.Run(fmt.Sprintf("commit=%v", commit), func(t *testing.T) {
			dir := t.TempDir()
			b := openCheckpointed(t, dir, 1000)
			r := rand.New(rand.NewPCG(3, 4))
			model := map[string]string{}
			randomEpoch(t, r, b, model, 200, 100)
			if err := b.Checkpoint([]byte("one")); err != nil {
				t.Fatal(err)
			}
			first := clone(model)
			randomEpoch(t, r, b, model, 200, 100)
			if err := b.Prepare([]byte("two")); err != nil {
				t.Fatal(err)
			}
			second := clone(model)
			b.Close() // the crash: the Kafka transaction's fate is unknown

			b = openCheckpointed(t, dir, 1000)
			defer b.Close()
			cp, ok := b.Prepared()
			if !ok || string(cp.Meta) != "two" {
				t.Fatalf("prepared = %q, %v; want two", cp.Meta, ok)
			}
			if _, _, err := b.Get([]byte("k0001")); !errors.Is(err, ErrUnresolved) {
				t.Fatalf("Get before Resolve: %v, want ErrUnresolved", err)
			}
			if err := b.Resolve(commit); err != nil {
				t.Fatal(err)
			}
			want, meta := first, "one"
			if commit {
				want, meta = second, "two"
			}
			sameState(t, snapshot(t, b), want)
			if cp, _ := b.Committed(); string(cp.Meta) != meta {
				t.Fatalf("committed meta %q, want %q", cp.Meta, meta)
			}
			if _, ok := b.Prepared(); ok {
				t.Fatal("still prepared after Resolve")
			}
		})
	}
}

// Commit is refused without Prepare, and after state was applied since.
func TestBadgerCommitNeedsPrepare(t *testing.T) {
	b := openCheckpointed(t, t.TempDir(), 0)
	defer b.Close()
	if err := b.Commit(nil); err == nil {
		t.Fatal("Commit without Prepare succeeded")
	}
	if err := b.Prepare([]byte("m")); err != nil {
		t.Fatal(err)
	}
	if err := b.Apply([]Mutation{set("a", "1")}); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(nil); err == nil {
		t.Fatal("Commit after Apply succeeded")
	}
}

// A store without Checkpointed keeps what a run wrote when it closes, even
// if an earlier run checkpointed it.
func TestBadgerCloseCommitsWithoutCheckpoints(t *testing.T) {
	dir := t.TempDir()
	b := openCheckpointed(t, dir, 0)
	if err := b.Apply([]Mutation{set("a", "1")}); err != nil {
		t.Fatal(err)
	}
	if err := b.Checkpoint([]byte("m")); err != nil {
		t.Fatal(err)
	}
	b.Close()

	o := testBadgerOptions(dir, 0)
	b2, err := OpenBadger(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := b2.Apply([]Mutation{set("b", "2"), del("a")}); err != nil {
		t.Fatal(err)
	}
	b2.Close()

	b3 := openCheckpointed(t, dir, 0)
	defer b3.Close()
	sameState(t, snapshot(t, b3), map[string]string{"b": "2"})
	if cp, ok := b3.Committed(); !ok || len(cp.Meta) != 0 {
		t.Fatalf("committed meta %q, %v; want empty", cp.Meta, ok)
	}
}

// Changes lists what the prepared epoch wrote, deletions included, once
// per key, whatever was evicted or overwritten meanwhile.
func TestBadgerChanges(t *testing.T) {
	for _, cache := range []int64{0, 300, -1} {
		t.Run(fmt.Sprintf("cache=%d", cache), func(t *testing.T) {
			b := openCheckpointed(t, t.TempDir(), cache)
			defer b.Close()
			r := rand.New(rand.NewPCG(5, 6))
			model := map[string]string{}
			randomEpoch(t, r, b, model, 300, 60)
			if err := b.Checkpoint([]byte("one")); err != nil {
				t.Fatal(err)
			}
			before := clone(model)
			randomEpoch(t, r, b, model, 100, 60)
			if err := b.Changes(func([]byte, []byte, bool) error { return nil }); err == nil && cache >= 0 {
				// With a cache, unflushed writes make Changes refuse.
				t.Fatal("Changes before Prepare succeeded")
			}
			if err := b.Prepare([]byte("two")); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			var order []string
			if err := b.Changes(func(k, v []byte, deleted bool) error {
				order = append(order, string(k))
				if deleted {
					got[string(k)] = "<deleted>"
				} else {
					got[string(k)] = string(v)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			for k := range union(before, model) {
				if before[k] == model[k] {
					continue
				}
				if v, ok := model[k]; ok {
					want[k] = v
				} else {
					want[k] = "<deleted>"
				}
			}
			// A key rewritten with its old value, or created and deleted,
			// may also be listed, with its current value.
			for k, v := range got {
				if _, ok := want[k]; !ok {
					if mv, live := model[k]; (live && mv != v) || (!live && v != "<deleted>") {
						t.Fatalf("extra change %q = %q, current %q", k, v, mv)
					}
					want[k] = v
				}
			}
			sameState(t, got, want)
			if !slices.IsSorted(order) || len(order) != len(got) {
				t.Fatalf("keys not once each in order: %v", order)
			}
			if err := b.Commit(nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func union(a, b map[string]string) map[string]bool {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}

// TestBadgerRollback rolls back, without closing, what was applied after
// the last checkpoint: in the cache, evicted to badger, flushed, or in a
// prepared checkpoint. The store then goes on, and reopens as of its next
// checkpoint.
func TestBadgerRollback(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cache int64
		after func(t *testing.T, b *Badger)
	}{
		{"cached", 1 << 20, func(t *testing.T, b *Badger) {}},
		{"evictions", 2000, func(t *testing.T, b *Badger) {}},
		{"no-cache", -1, func(t *testing.T, b *Badger) {}},
		{"prepared", 2000, func(t *testing.T, b *Badger) {
			if err := b.Prepare([]byte("never committed")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := rand.New(rand.NewPCG(3, 4))
			b := openCheckpointed(t, dir, tc.cache)
			model := map[string]string{}
			randomEpoch(t, r, b, model, 300, 200)
			if err := b.Rollback(); err != nil {
				t.Fatalf("Rollback before the first checkpoint: %v", err)
			}
			sameState(t, snapshot(t, b), map[string]string{}) // to the store as opened
			model = map[string]string{}
			randomEpoch(t, r, b, model, 300, 200)
			if err := b.Checkpoint([]byte("one")); err != nil {
				t.Fatal(err)
			}
			want := clone(model)
			for range 2 {
				randomEpoch(t, r, b, model, 300, 200)
				tc.after(t, b)
				if err := b.Rollback(); err != nil {
					t.Fatal(err)
				}
				sameState(t, snapshot(t, b), want)
				if cp, ok := b.Committed(); !ok || string(cp.Meta) != "one" {
					t.Fatalf("committed %q %v after the rollback", cp.Meta, ok)
				}
				model = clone(want)
			}
			randomEpoch(t, r, b, model, 300, 200)
			if err := b.Checkpoint([]byte("two")); err != nil {
				t.Fatal(err)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			b = openCheckpointed(t, dir, tc.cache)
			defer b.Close()
			sameState(t, snapshot(t, b), model)
		})
	}
}

// TestBadgerCrashBeforeFirstCheckpoint: writes evicted to badger before a
// checkpointed store's first checkpoint do not survive a crash; what the
// store held when first opened with checkpoints (a run without them left
// it) does.
func TestBadgerCrashBeforeFirstCheckpoint(t *testing.T) {
	dir := t.TempDir()
	before := testBadgerOptions(dir, 2000) // a run without checkpoints
	b, err := OpenBadger(before)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	kept := map[string]string{}
	randomEpoch(t, r, b, kept, 100, 50)
	if err := b.Close(); err != nil { // flushes: kept without checkpoints
		t.Fatal(err)
	}
	b = openCheckpointed(t, dir, 2000)
	lost := clone(kept)
	randomEpoch(t, r, b, lost, 600, 400) // far beyond the cache: evictions reach badger
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openCheckpointed(t, dir, 2000)
	defer b.Close()
	sameState(t, snapshot(t, b), kept)
	if err := (&Badger{}).Rollback(); err == nil {
		t.Error("Rollback of a store without a checkpoint succeeded")
	}
}

// TestApplyCommitted checks writes into the last committed checkpoint
// against a model, over generated rounds: the run's own keys follow
// Apply, checkpoints and rollbacks; the keys written by ApplyCommitted
// (sets, deletes and rewrites, within one checkpoint and across them)
// keep their last value through rollbacks, reopens and badger's
// compaction, never appear in Changes, and once a later epoch writes
// one with Apply, a rollback of that epoch brings the committed value
// back.
func TestApplyCommitted(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	dir := t.TempDir()
	b := openCheckpointed(t, dir, 2048) // a small cache: own keys are evicted too
	defer func() { b.Close() }()
	committed := map[string]string{} // the state as of the last checkpoint
	model := map[string]string{}     // the state now
	set := func(m map[string]string, muts []Mutation) {
		for _, mu := range muts {
			if mu.Delete {
				delete(m, string(mu.Key))
			} else {
				m[string(mu.Key)] = string(mu.Value)
			}
		}
	}
	batch := func(prefix string, n int) []Mutation {
		var muts []Mutation
		for range n {
			k := fmt.Sprintf("%s-%03d", prefix, rng.IntN(200))
			if rng.IntN(5) == 0 {
				muts = append(muts, Mutation{Key: []byte(k), Delete: true})
			} else {
				muts = append(muts, Mutation{Key: []byte(k), Value: fmt.Appendf(nil, "v%d", rng.Uint32())})
			}
		}
		return muts
	}
	for round := range 300 {
		switch op := rng.IntN(10); {
		case op < 3:
			muts := batch("own", 1+rng.IntN(20))
			if err := b.Apply(muts); err != nil {
				t.Fatal(err)
			}
			set(model, muts)
		case op < 6:
			muts := batch("caught", 1+rng.IntN(50))
			if err := b.ApplyCommitted(muts); err != nil {
				t.Fatal(err)
			}
			set(model, muts)
			set(committed, muts)
		case op < 7 && round > 150:
			// A later owner writes caught-up keys in its own epoch.
			muts := batch("caught", 1+rng.IntN(10))
			if err := b.Apply(muts); err != nil {
				t.Fatal(err)
			}
			set(model, muts)
		case op < 8:
			if err := b.Prepare(nil); err != nil {
				t.Fatal(err)
			}
			if rng.IntN(2) == 0 {
				muts := batch("caught", 1+rng.IntN(20))
				if err := b.ApplyCommitted(muts); err != nil {
					t.Fatal(err)
				}
				set(model, muts)
				set(committed, muts)
			}
			if err := b.Changes(func(k, _ []byte, _ bool) error {
				if string(k[:6]) == "caught" && round <= 150 {
					return fmt.Errorf("Changes listed %q, written by ApplyCommitted", k)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if err := b.Commit(nil); err != nil {
				t.Fatal(err)
			}
			committed = maps.Clone(model)
		case op < 9:
			if err := b.Rollback(); err != nil && !errors.Is(err, ErrNoCheckpoint) {
				t.Fatal(err)
			} else if err == nil {
				model = maps.Clone(committed)
			}
		default:
			if err := b.db.Flatten(1); err != nil {
				t.Fatal(err)
			}
			b.Close()
			b = openCheckpointed(t, dir, 2048)
			model = maps.Clone(committed) // a reopen rolls back to the last checkpoint
		}
		got := snapshot(t, b)
		if !maps.Equal(got, model) {
			for k, v := range model {
				if got[k] != v {
					t.Fatalf("round %d: %s = %q, want %q", round, k, got[k], v)
				}
			}
			t.Fatalf("round %d: %d keys, want %d", round, len(got), len(model))
		}
	}
}
