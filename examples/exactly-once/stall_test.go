package exactlyonce_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// TestSharedStall runs pipeline-shared.yaml exactly once as two
// instances and freezes one (SIGSTOP, as a paused VM or a long stall
// would) in the middle of a transaction, for longer than its session and
// transaction timeouts: the group gives its tasks to the other, and the
// brokers abort its transaction and move its transactional id to a new
// epoch. Resumed (SIGCONT), the instance finds its producer fenced and
// its tasks gone; it must join again (with a new producer, if the
// brokers refused one of its writes) rather than fail, take tasks back,
// and the read_committed output must still be every window once with the
// right sums.
func TestSharedStall(t *testing.T) {
	t.Parallel()
	r := newSharedRig(t, 7, true)
	b, want := r.b, r.want
	a, bb := r.start(t, "a", "stall-", "pipeline-shared.yaml"), r.start(t, "b", "stall-", "pipeline-shared.yaml")
	a.waitRead(t, "a reading")
	waitShared(t, "a and b to share every task", a, bb)
	// The last third of the stream flows from here, so that a has
	// records to write in the transaction it is frozen in, however long
	// the instances took to share the tasks.
	r.release()
	adm := kadm.NewClient(newClient(t, b.Addrs()))
	const txnID = "weir-sensor-sums-shared-stall-a"
	epoch := stopInTransaction(t, a, adm, txnID)
	weirtest.PollUntil(t, 60*time.Second, "b to own every task and the brokers to abort a's transaction", func() bool {
		d, ok := describeTxn(adm, txnID)
		return len(weirtest.OwnedTasks(bb.admin)) == sharedPartitions && ok && d.State != "Ongoing" && d.ProducerEpoch > epoch
	})
	if err := a.p.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	weirtest.PollUntil(t, 60*time.Second, "a to own tasks again", func() bool { return len(weirtest.OwnedTasks(a.admin)) > 0 })
	// Which the resumed instance meets first decides how it learns: a
	// write or commit the brokers refuse (fenced), or the group's
	// callback saying it lost its tasks (the transaction aborts).
	if a.p.Logged("the instance stalled past its session and transaction timeouts") {
		t.Log("a found its producer fenced, and joined again with a new one")
	} else {
		t.Log("a found its tasks gone before writing, and rolled back")
	}
	got := consumeUntil(t, b.Addrs(), want, true, a.p.Done)
	for name, in := range map[string]*sharedInstance{"a": a, "b": bb} {
		if err := in.p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := <-in.p.Done; err != nil {
			t.Errorf("instance %s did not stop cleanly: %v", name, err)
		}
	}
	checkResults(t, got, want, true)
}

// stopInTransaction freezes in (SIGSTOP) while its transaction txnID is
// open at the brokers, trying again after a short run if it caught the
// instance between two, and returns the transaction's producer epoch.
func stopInTransaction(t *testing.T, in *sharedInstance, adm *kadm.Client, txnID string) int16 {
	t.Helper()
	for range 50 {
		if err := in.p.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		if d, ok := describeTxn(adm, txnID); ok && d.State == "Ongoing" {
			return d.ProducerEpoch
		}
		if err := in.p.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		read := sourceRecords(in.admin)
		weirtest.PollUntil(t, 30*time.Second, "the instance to read on", func() bool { return sourceRecords(in.admin) > read })
	}
	t.Fatalf("never caught transaction %s open", txnID)
	return 0
}

// describeTxn describes the transaction txnID at the brokers.
func describeTxn(adm *kadm.Client, txnID string) (kadm.DescribedTransaction, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ds, err := adm.DescribeTransactions(ctx, txnID)
	if err != nil {
		return kadm.DescribedTransaction{}, false
	}
	d, ok := ds[txnID]
	return d, ok && d.Err == nil
}

// newClient returns a client of the brokers at addrs, closed with the test.
func newClient(t *testing.T, addrs []string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
