package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/kafka"
	"github.com/weir-stream/weir/state"
)

// calls records, in order, what a commit did to the fakes.
type calls []string

func (c *calls) add(format string, args ...any) { *c = append(*c, fmt.Sprintf(format, args...)) }

// fakeStore is a state.Checkpointer holding two changes since its last
// checkpoint.
type fakeStore struct {
	log       *calls
	committed []byte
}

func (s *fakeStore) Checkpoint(meta []byte) error {
	s.log.add("store.checkpoint")
	s.committed = meta
	return nil
}
func (s *fakeStore) Prepare([]byte) error { s.log.add("store.prepare"); return nil }
func (s *fakeStore) Commit(meta []byte) error {
	s.log.add("store.commit")
	s.committed = meta
	return nil
}
func (s *fakeStore) Committed() (state.Checkpoint, bool) {
	return state.Checkpoint{Meta: s.committed}, s.committed != nil
}
func (s *fakeStore) TakeWritten() state.Written { return state.Written{Writes: 3, Bytes: 10} }
func (s *fakeStore) Changes(fn func(key, value []byte, deleted bool) error) error {
	if err := fn([]byte("a"), []byte("1"), false); err != nil {
		return err
	}
	return fn([]byte("b"), nil, true)
}

// fakeChangelog writes nothing and ends at offsets 42 and 7.
type fakeChangelog struct{ log *calls }

func (c fakeChangelog) Write(_ context.Context, each func(yield func(key, value []byte, deleted bool) error) error, _ []byte, _ []int32) ([]int64, int, error) {
	n := 0
	err := each(func([]byte, []byte, bool) error { n++; return nil })
	c.log.add("changelog.write %d", n)
	return []int64{42, 7}, 0, err
}

// fakeTxn fails its commit with commitErr.
type fakeTxn struct {
	log       *calls
	commitErr error
}

func (t fakeTxn) Begin() error                 { t.log.add("txn.begin"); return nil }
func (t fakeTxn) Commit(context.Context) error { t.log.add("txn.commit"); return t.commitErr }

func TestCommitOrder(t *testing.T) {
	other := errors.New("broker unreachable")
	cases := []struct {
		name      string
		changelog bool
		txn       bool
		commitErr error
		want      []string
		wantErr   error
		wantNext  []int64 // changelog offsets the store's checkpoint records
	}{
		{name: "store alone", want: []string{"sync false", "store.checkpoint"}},
		{name: "exactly once without keyed state", txn: true,
			want: []string{"sync true", "txn.commit", "store.checkpoint", "txn.begin"}},
		{name: "exactly once without keyed state, rebalance aborted the transaction", txn: true, commitErr: kafka.ErrTxnAborted,
			want: []string{"sync true", "txn.commit", "txn.begin"}},
		{name: "exactly once without keyed state, commit fails", txn: true, commitErr: other,
			want: []string{"sync true", "txn.commit"}, wantErr: other},
		{name: "changelog, at least once", changelog: true,
			want: []string{"sync false", "store.prepare", "changelog.write 2", "store.commit"}, wantNext: []int64{42, 7}},
		{name: "changelog, exactly once", changelog: true, txn: true,
			want: []string{"sync true", "store.prepare", "changelog.write 2", "txn.commit", "store.commit", "txn.begin"}, wantNext: []int64{42, 7}},
		{name: "changelog, exactly once, rebalance aborted the transaction", changelog: true, txn: true, commitErr: kafka.ErrTxnAborted,
			want: []string{"sync true", "store.prepare", "changelog.write 2", "txn.commit"}, wantErr: kafka.ErrTxnAborted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var log calls
			store := &fakeStore{log: &log}
			var stats []CommitStats
			ck := &Coordinator{Store: store, ExactFiles: tc.txn, Logger: slog.New(slog.DiscardHandler),
				SyncOutputs: func(_ *engine.Checkpoint, exact bool) error { log.add("sync %v", exact); return nil },
				OnCommit:    func(s CommitStats) { stats = append(stats, s) }}
			if tc.changelog {
				ck.Changelog = fakeChangelog{log: &log}
			}
			if tc.txn {
				ck.Txn = fakeTxn{log: &log, commitErr: tc.commitErr}
			}
			err := ck.Commit(context.Background(), &engine.Checkpoint{Epoch: 7})
			if !errors.Is(err, tc.wantErr) || (err != nil) != (tc.wantErr != nil) {
				t.Fatalf("Commit error = %v, want %v", err, tc.wantErr)
			}
			if !slices.Equal(log, tc.want) {
				t.Fatalf("Commit did\n  %q\nwant\n  %q", log, tc.want)
			}
			wantStats := []CommitStats{{Epoch: 7, State: state.Written{Writes: 3, Bytes: 10}}}
			if tc.changelog {
				wantStats[0].ChangelogRecords = 2
			}
			switch {
			case err != nil:
				wantStats = nil
			case tc.commitErr != nil:
				wantStats[0].Aborted = true
			}
			if !slices.Equal(stats, wantStats) {
				t.Errorf("OnCommit told %+v, want %+v", stats, wantStats)
			}
			if store.committed == nil {
				return
			}
			var meta Meta
			if err := json.Unmarshal(store.committed, &meta); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(meta.Offsets(), tc.wantNext) {
				t.Errorf("checkpoint records changelog offsets %v, want %v", meta.Offsets(), tc.wantNext)
			}
			cp, err := engine.UnmarshalCheckpoint(meta.Engine)
			if err != nil || cp.Epoch != 7 {
				t.Errorf("checkpoint records engine checkpoint %+v (%v), want epoch 7", cp, err)
			}
		})
	}
}

// TestMetaOffsets reads the changelog offsets of checkpoints as stores
// recorded them before and after changelogs had a partition per task.
func TestMetaOffsets(t *testing.T) {
	for _, tc := range []struct {
		name, meta string
		want       []int64
	}{
		{"no changelog", `{"engine":{}}`, nil},
		{"one partition, as recorded before tasks", `{"engine":{},"changelog_next":7}`, []int64{7}},
		{"a partition per task", `{"engine":{},"changelog_offsets":[3,0,9]}`, []int64{3, 0, 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Meta
			if err := json.Unmarshal([]byte(tc.meta), &m); err != nil {
				t.Fatal(err)
			}
			if got := m.Offsets(); !slices.Equal(got, tc.want) {
				t.Errorf("Offsets() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMetaCheckTasks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		meta    Meta
		parts   int
		wantErr bool
	}{
		{"no checkpoint yet", Meta{}, 12, false},
		{"same partitions", Meta{ChangelogOffsets: []int64{1, 2, 3}}, 3, false},
		{"one partition, as recorded before tasks", Meta{ChangelogNext: 9}, 1, false},
		{"partitions added", Meta{ChangelogOffsets: []int64{1, 2}}, 4, true},
		{"partitions added to a one-partition changelog", Meta{ChangelogNext: 9}, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.meta.checkTasks(tc.parts, "p-changelog")
			if (err != nil) != tc.wantErr {
				t.Fatalf("checkTasks(%d) = %v, want an error: %v", tc.parts, err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "cannot change") {
				t.Errorf("the error does not say what to do: %v", err)
			}
		})
	}
}
