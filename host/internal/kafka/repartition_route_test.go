package kafka

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/internal/engine"
)

// TestInProcessUnread checks what keeps a run owning every task from
// routing in process: the data records of the repartition topic after
// where the run would resume each partition (the group's offsets, or
// at least once the restored checkpoint's), not its watermark records,
// transaction markers or records of a transaction that aborted, once
// the transactions open on the topic have ended (records committed
// behind one count); and
// upstream tables that applied an input partition past the group's
// offset, which no count of records can resolve.
func TestInProcessUnread(t *testing.T) {
	br, err := StartBroker(BrokerConfig{Topics: map[string]int32{"in": 3, "rp": 3}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	ctx := context.Background()
	cc := ClientConfig{Brokers: br.Addrs()}
	check := func(exactly bool, snap map[string]map[string]int64) Unread {
		t.Helper()
		b, _ := json.Marshal(snap)
		un, err := InProcessUnread(ctx, InProcessCheck{Client: cc, Group: "g", Topic: "rp", Inputs: NewInputs(map[string]int32{"in": 3}), Partitions: 3, ExactlyOnce: exactly, Snapshot: b})
		if err != nil {
			t.Fatal(err)
		}
		return un
	}
	if un := check(false, nil); un.Why != "" || un.Records != nil {
		t.Fatalf("an empty topic: %+v, want nothing in the way", un)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addrs()...), kgo.DefaultProduceTopic("rp"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	wm := []kgo.RecordHeader{{Key: RepartitionWatermarkHeader, Value: []byte(`{}`)}}
	if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("a")}, &kgo.Record{Partition: 0, Value: []byte("b")},
		&kgo.Record{Partition: 0, Headers: wm}, &kgo.Record{Partition: 1, Headers: wm}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	txn := func(id string, commit bool, recs ...*kgo.Record) *kgo.Client {
		t.Helper()
		tc, err := kgo.NewClient(kgo.SeedBrokers(br.Addrs()...), kgo.DefaultProduceTopic("rp"), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID(id))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tc.Close)
		if err := tc.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := tc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if commit {
			if err := tc.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
		}
		return tc
	}
	txn("committed", true, &kgo.Record{Partition: 2, Value: []byte("c")}, &kgo.Record{Partition: 2, Value: []byte("d")}, &kgo.Record{Partition: 2, Value: []byte("e")})
	open := txn("open", false, &kgo.Record{Partition: 1, Value: []byte("not yet")})
	txn("behind", true, &kgo.Record{Partition: 1, Value: []byte("behind")})

	// The check waits for the open transaction to end: it aborts (its
	// writer gave its input up, or died), and the record committed
	// behind it is in the way.
	var logs weirtest.SyncBuffer
	type result struct {
		un  Unread
		err error
	}
	done := make(chan result, 1)
	go func() {
		un, err := InProcessUnread(ctx, InProcessCheck{Client: cc, Group: "g", Topic: "rp", Inputs: NewInputs(map[string]int32{"in": 3}), Partitions: 3,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		done <- result{un, err}
	}()
	r, returned := awaitOpenTxnWait(t, "the check", &logs, done)
	if returned {
		t.Fatalf("the check returned while a transaction was open before a committed record: %+v (error %v), "+
			"which leaves that record in the topic for a run routing in process", r.un, r.err)
	}
	if err := open.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	if r = <-done; r.err != nil {
		t.Fatal(r.err)
	}
	if !maps.Equal(r.un.Records, map[int32]int{0: 2, 1: 1, 2: 3}) || r.un.Why == "" {
		t.Errorf("no offsets committed: %+v, want 2 records of partition 0, the one committed behind the aborted transaction in partition 1, and 3 of partition 2", r.un)
	}
	adm := kadm.NewClient(cl)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "rp", Partition: 1, At: 4, LeaderEpoch: -1}) // past the aborted and the committed transactions
	offs.Add(kadm.Offset{Topic: "rp", Partition: 0, At: 2, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: "in", Partition: 1, At: 5, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "g", offs); err != nil {
		t.Fatal(err)
	}
	if un := check(true, nil); !maps.Equal(un.Records, map[int32]int{2: 3}) {
		t.Errorf("partition 0 read up to its watermark record: %+v, want only partition 2's 3 records", un)
	}
	past := map[string]map[string]int64{"rp": {"2": 99}}
	if un := check(false, past); un.Why != "" || un.Records != nil {
		t.Errorf("at least once, partition 2 restored past its end: %+v, want nothing in the way", un)
	}
	if un := check(true, past); !maps.Equal(un.Records, map[int32]int{2: 3}) {
		t.Errorf("exactly once, where the checkpoint says the group's offsets stand: %+v, want partition 2's 3 records", un)
	}
	ahead := map[string]map[string]int64{"rp": {"2": 99, "0": 2, "0:of": 3, "0:1.o": 5, "0:1.i": 0, "2:of": 3, "2:1.o": 7}}
	if un := check(false, ahead); un.Why == "" || un.Records != nil || !maps.Equal(un.Ahead, map[int32]int64{1: 7}) {
		t.Errorf("input partition 1 applied at and past the group's offset: %+v, want a reason, no records to drain and partition 1 ahead up to 7", un)
	}
	ahead["rp"]["0:1.o"], ahead["rp"]["2:1.o"] = 4, 3
	if un := check(false, ahead); un.Why != "" || un.Ahead != nil {
		t.Errorf("input partition 1 applied before the group's offset: %+v, want nothing in the way", un)
	}
	ahead["rp"]["1:2.o"] = 0 // input partition 2 has no offset in the group
	if un := check(false, ahead); un.Why == "" || !maps.Equal(un.Ahead, map[int32]int64{2: 0}) {
		t.Errorf("an input partition applied that the group has no offset for: %+v, want a reason and partition 2 ahead up to 0", un)
	}
}

// TestNoteCaughtUp: a run catching up with the repartition topic's
// tables (Route.CatchUp) is told so at the first checkpoint whose offsets
// of every partition ahead are past the offsets applied, and only once.
func TestNoteCaughtUp(t *testing.T) {
	s := &Source{topics: []string{"in", "rp"}, repartition: "rp", log: slog.New(slog.DiscardHandler), parts: map[srcTP]*srcPart{}}
	at := func(p int32, off int64) {
		s.parts[srcTP{"in", p}] = &srcPart{owned: true, commit: kgo.EpochOffset{Offset: off}}
	}
	calls := 0
	s.catchUp, s.caughtUp = map[int32]int64{0: 10, 2: 4}, func() { calls++ }
	for _, step := range []struct {
		name  string
		set   func()
		calls int
	}{
		{"nothing read yet", func() {}, 0},
		{"partition 0 at the offset applied", func() { at(0, 10); at(2, 9) }, 0},
		{"partition 0 past it, partition 2 not owned", func() { at(0, 11); s.parts[srcTP{"in", 2}].owned = false }, 0},
		{"both past", func() { at(2, 5) }, 1},
		{"a later checkpoint", func() { at(0, 20) }, 1},
	} {
		step.set()
		s.noteCaughtUp()
		if calls != step.calls {
			t.Fatalf("%s: CaughtUp called %d times, want %d", step.name, calls, step.calls)
		}
	}
}

// TestSnapshotCoversTables checks that a partition of a repartition topic
// whose upstream tables a run routing in process kept counts as
// checkpointed, as one with an offset does.
func TestSnapshotCoversTables(t *testing.T) {
	snap, _ := json.Marshal(map[string]map[string]int64{"rp": {"0": 7, "1:of": 3, "1:0.o": 4}, "in": {"2": 9}})
	for _, tc := range []struct {
		topic string
		p     int32
		want  bool
	}{{"rp", 0, true}, {"rp", 1, true}, {"rp", 2, false}, {"in", 2, true}, {"in", 1, false}, {"", 1, true}, {"", 3, false}} {
		if got := SnapshotCovers(snap, tc.topic, tc.p); got != tc.want {
			t.Errorf("SnapshotCovers(%q, %d) = %t, want %t", tc.topic, tc.p, got, tc.want)
		}
	}
}

// TestHoldsAll checks when a run owns every task and input partition.
func TestHoldsAll(t *testing.T) {
	for _, tc := range []struct {
		name          string
		owned, inputs []int32
		want          bool
	}{
		{name: "all", owned: []int32{0, 1, 2}, inputs: []int32{0, 1}, want: true},
		{name: "a task missing", owned: []int32{0, 2}, inputs: []int32{0, 1}},
		{name: "an input missing", owned: []int32{0, 1, 2}, inputs: []int32{1}},
		{name: "none", owned: nil, inputs: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := NewTasks(false)
			ts.moveTo(tc.owned, tc.inputs)
			ts.Begin()
			if got := ts.HoldsAll(3, 2); got != tc.want {
				t.Errorf("HoldsAll = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestUpstreamWatermark: an input partition's watermark from the
// repartition topic's tables, for a run routing in process, is the least
// any partition's table holds for it, or none when none does.
func TestUpstreamWatermark(t *testing.T) {
	s := &Source{upstream: map[int32]*upstreamTimes{
		0: {of: 3, wm: map[int32]int64{0: 500, 1: 70}},
		1: {of: 3, wm: map[int32]int64{0: 400}},
		2: {of: 3},
	}}
	for _, tc := range []struct {
		input int32
		want  int64
	}{{0, 400}, {1, 70}, {2, engine.NoWatermark}} {
		if got := s.upstreamWatermark(tc.input); got != tc.want {
			t.Errorf("input partition %d: %d, want %d", tc.input, got, tc.want)
		}
	}
}
