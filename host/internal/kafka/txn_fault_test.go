package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/internal/engine"
)

// Fault tests of the exactly-once commit path. Each runs the connector
// (a Source with a transaction, a Sink producing through it) from topic in
// to topic out against kfake, makes the broker fail or hold one request of
// the commit (ControlKey), and then restarts the pipeline from its last
// commit, as a user would, and lets it finish. The contract: a
// read_committed reader of out sees every input record once.

// eosRecords is how many records the input holds.
const eosRecords = 3000

// eosRig is a kfake cluster holding the input, and the group and
// transactional id of the pipeline's instances.
type eosRig struct {
	t        *testing.T
	c        *kfake.Cluster
	cc       ClientConfig
	produced chan struct{} // closed once the whole input is in
}

func newEOSRig(t *testing.T) *eosRig {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "in"), kfake.SeedTopics(1, "out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	r := &eosRig{t: t, c: c, cc: ClientConfig{Brokers: c.ListenAddrs(), ClientID: "weir-test"}, produced: make(chan struct{})}
	// The input arrives as a steady stream, over a few seconds, so that
	// the run commits many transactions.
	cl := srcClient(t, r.cc)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(r.produced)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		const per = eosRecords / 50
		for first := 0; first < eosRecords; first += per {
			if err := cl.ProduceSync(ctx, srcJSONRecords("in", first, per)...).FirstErr(); err != nil {
				if ctx.Err() == nil {
					t.Errorf("producing the input: %v", err)
				}
				return
			}
			<-tick.C
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait(); cl.Close() })
	return r
}

// eosRun is one instance of the pipeline.
type eosRun struct {
	*srcRun
	commits, aborts atomic.Int64 // the checkpoints' transactions
}

// start starts an instance of the pipeline, polling a few records at a
// time (so that a transaction holds a few dozen), run as the host runs an
// exactly-once pipeline without keyed state: it fences earlier instances
// and begins a transaction; every checkpoint commits it and begins the
// next. A transaction that ended aborted is not an error (the source is
// back at the group's offsets, so its records are read again into the
// next); any other failure of the commit fails the run.
func (r *eosRig) start() *eosRun {
	t := r.t
	t.Helper()
	src, err := NewSource(SourceConfig{Name: "in", Client: r.cc, Topics: []string{"in"}, Group: "eos", Logger: srcQuiet(),
		MaxPollRecords: 20, Txn: &TxnConfig{ID: "eos"}})
	if err != nil {
		t.Fatal(err)
	}
	txn := src.Txn()
	sink, err := NewSink(SinkConfig{Name: "out", Client: r.cc, Topic: "out", Txn: txn, Logger: snkQuiet()})
	if err != nil {
		src.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := txn.Fence(ctx); err != nil {
		src.Close()
		t.Fatal(err)
	}
	if err := txn.Begin(); err != nil {
		src.Close()
		t.Fatal(err)
	}
	run := &eosRun{}
	commit := func(ctx context.Context, _ *engine.Checkpoint) error {
		switch err := txn.Commit(ctx); {
		case errors.Is(err, ErrTxnAborted):
			run.aborts.Add(1)
		case err != nil:
			return err
		default:
			run.commits.Add(1)
		}
		return txn.Begin()
	}
	run.srcRun = srcStart(t, &engine.Pipeline{Sources: []engine.Source{src}, Sinks: []engine.Sink{sink}, BatchSize: 16,
		Checkpointing: &engine.Checkpointing{Interval: 5 * time.Millisecond, Commit: commit}})
	return run
}

// ended waits for the instance's Run to return by itself and returns its
// error.
func (run *eosRun) ended(t *testing.T, what string) error {
	t.Helper()
	select {
	case <-run.done:
		return run.err
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		return nil
	}
}

// caughtUp reports whether the group's committed offsets are the input's
// end offsets: a transaction committed the last record's offset.
func (r *eosRig) caughtUp() bool {
	select {
	case <-r.produced:
	default:
		return false
	}
	committed, ends := srcOffsets(r.t, r.cc, "eos", "in")
	return len(ends) == 2 && fmt.Sprint(committed) == fmt.Sprint(ends)
}

// finish restarts the pipeline from its last commit, runs it until it has
// committed the whole input, stops it, and checks that a read_committed
// reader of out sees every input record once.
func (r *eosRig) finish() {
	t := r.t
	t.Helper()
	run := r.start()
	weirtest.PollUntil(t, 60*time.Second, "the restarted pipeline to commit the whole input", r.caughtUp)
	if _, err := run.stop(t); err != nil {
		t.Fatalf("the restarted pipeline: %v", err)
	}
	r.checkOnce()
}

// eosEnd is the value of the marker checkOnce appends to out.
const eosEnd = `{"end":true}`

// checkOnce reads out read_committed from the start and fails the test
// unless it holds every input record once. It reads up to a marker it
// produces first, without a transaction: a read_committed reader sees the
// marker only once no transaction before it is open, so everything
// committed before it has been read by then.
func (r *eosRig) checkOnce() {
	t := r.t
	t.Helper()
	srcProduce(t, r.cc, &kgo.Record{Topic: "out", Value: []byte(eosEnd)})
	cl := srcClient(t, r.cc, kgo.ConsumeTopics("out"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seen := make(map[int]int)
	total := 0
read:
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("after %d records, a read_committed reader never reached the marker after the output: a transaction was left open", total)
		}
		for _, rec := range fs.Records() {
			if string(rec.Value) == eosEnd {
				break read
			}
			seen[srcValueID(t, rec.Value)]++
			total++
		}
	}
	var lost, dup []int
	for i := range eosRecords {
		switch n := seen[i]; {
		case n == 0:
			lost = append(lost, i)
		case n > 1:
			dup = append(dup, i)
		}
	}
	if len(lost) > 0 || len(dup) > 0 || total != eosRecords {
		t.Fatalf("the committed output holds %d records for %d inputs: %d lost %v, %d duplicated %v",
			total, eosRecords, len(lost), eosFirst(lost), len(dup), eosFirst(dup))
	}
}

// eosFirst returns the first few of ids, for a failure message.
func eosFirst(ids []int) []int { return ids[:min(len(ids), 10)] }

// faultNth hands the request of key after the first skip that match
// accepts (nil: every request) to fault, and lets every other through.
// fault returns what the control function returns; struck is closed once
// it has run.
func (r *eosRig) faultNth(key kmsg.Key, skip int, match func(kmsg.Request) bool, fault func(kmsg.Request) (kmsg.Response, error, bool)) (struck chan struct{}) {
	struck = make(chan struct{})
	seen := 0 // control functions run one at a time
	r.c.ControlKey(key.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if match != nil && !match(req) {
			return nil, nil, false
		}
		if seen++; seen <= skip {
			return nil, nil, false
		}
		r.c.DropControl()
		defer close(struck)
		return fault(req)
	})
	return struck
}

// eosRequest names the requests of a fault: those of key that match
// accepts (nil: all of them).
type eosRequest struct {
	name  string
	key   kmsg.Key
	match func(kmsg.Request) bool
}

// startHeld starts the pipeline on a new rig whose broker holds the
// request of rq after the first three (mid-run), and returns once it
// holds it; closing release lets the broker answer it as usual.
func startHeld(t *testing.T, rq eosRequest) (r *eosRig, run *eosRun, release chan struct{}) {
	t.Helper()
	r = newEOSRig(t)
	holding, release := make(chan struct{}), make(chan struct{})
	r.faultNth(rq.key, 3, rq.match, func(kmsg.Request) (kmsg.Response, error, bool) {
		close(holding)
		r.c.SleepControl(func() { <-release })
		return nil, nil, false
	})
	run = r.start()
	waitStruck(t, holding, "the broker to hold the run's request")
	return r, run, release
}

// eosCommitting matches the EndTxn requests that commit.
func eosCommitting(req kmsg.Request) bool { return req.(*kmsg.EndTxnRequest).Commit }

// waitStruck waits for a fault to have struck.
func waitStruck(t *testing.T, struck chan struct{}, what string) {
	t.Helper()
	select {
	case <-struck:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestExactlyOnceTransactionAbort makes the broker fail one commit in the
// middle of the run, at each step where it can: a transaction the broker
// says to abort is aborted and its records are read again into the next,
// in the same run; a commit that fails otherwise stops the run with the
// error, and the restart (fencing the transaction the failure left open)
// reads again what it held. Either way nothing is lost or duplicated.
func TestExactlyOnceTransactionAbort(t *testing.T) {
	t.Parallel()
	abortable := func(req kmsg.Request) (kmsg.Response, error, bool) {
		switch req := req.(type) {
		case *kmsg.TxnOffsetCommitRequest:
			resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
			for _, rt := range req.Topics {
				st := kmsg.NewTxnOffsetCommitResponseTopic()
				st.Topic = rt.Topic
				for _, rp := range rt.Partitions {
					sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
					sp.Partition, sp.ErrorCode = rp.Partition, kerr.TransactionAbortable.Code
					st.Partitions = append(st.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
			}
			return resp, nil, true
		case *kmsg.EndTxnRequest:
			resp := req.ResponseKind().(*kmsg.EndTxnResponse)
			resp.ErrorCode = kerr.TransactionAbortable.Code
			return resp, nil, true
		}
		return nil, nil, false
	}
	for _, tc := range []struct {
		name  string
		key   kmsg.Key
		fault func(kmsg.Request) (kmsg.Response, error, bool)
		fails string // what the run fails with; "" when it recovers in process
	}{
		{name: "the offsets' commit is abortable", key: kmsg.TxnOffsetCommit, fault: abortable},
		{name: "the end is abortable", key: kmsg.EndTxn, fault: abortable},
		// The broker does not say whether it committed: the client
		// takes it for an abort, and must not let the open
		// transaction's records commit with the next.
		{name: "the end's outcome is unknown", key: kmsg.EndTxn, fault: func(req kmsg.Request) (kmsg.Response, error, bool) {
			resp := req.(*kmsg.EndTxnRequest).ResponseKind().(*kmsg.EndTxnResponse)
			resp.ErrorCode = kerr.UnknownServerError.Code
			return resp, nil, true
		}},
		{name: "the end fails", key: kmsg.EndTxn, fails: "INVALID_TXN_STATE", fault: func(req kmsg.Request) (kmsg.Response, error, bool) {
			resp := req.(*kmsg.EndTxnRequest).ResponseKind().(*kmsg.EndTxnResponse)
			resp.ErrorCode = kerr.InvalidTxnState.Code
			return resp, nil, true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newEOSRig(t)
			var match func(kmsg.Request) bool
			if tc.key == kmsg.EndTxn {
				match = eosCommitting // an abortable end is retried as an abort, which passes
			}
			struck := r.faultNth(tc.key, 3, match, tc.fault)
			run := r.start()
			waitStruck(t, struck, "the fault")
			if tc.fails != "" {
				err := run.ended(t, "the run to stop after the failed commit")
				if err == nil || !strings.Contains(err.Error(), "committing the transaction") || !strings.Contains(err.Error(), tc.fails) ||
					strings.Contains(err.Error(), "fenced") {
					t.Fatalf("the run ended with %v; want the failed commit, %s, and no word of fencing (no other producer took the id)", err, tc.fails)
				}
			} else {
				weirtest.PollUntil(t, 60*time.Second, "the run to commit the whole input after the abort", r.caughtUp)
				if _, err := run.stop(t); err != nil {
					t.Fatalf("the run, which should have recovered from the abort: %v", err)
				}
				if run.aborts.Load() == 0 || run.commits.Load() == 0 {
					t.Fatalf("%d transactions committed and %d aborted; want the fault to abort one and the others to commit",
						run.commits.Load(), run.aborts.Load())
				}
			}
			r.finish()
		})
	}
}

// TestExactlyOnceFencedProducer lets another producer initialise the
// pipeline's transactional id, as a second instance given the same id
// does, or one replacing this one, while the run is in a transaction: at
// its commit, or while it produces. The broker then refuses the run's
// epoch. The run must stop with an error that says it was fenced, writing
// nothing more, and the restart finish with every record once.
func TestExactlyOnceFencedProducer(t *testing.T) {
	t.Parallel()
	// The run's produce requests are the only transactional ones.
	transactional := func(req kmsg.Request) bool { return req.(*kmsg.ProduceRequest).TransactionID != nil }
	for _, tc := range []eosRequest{
		{name: "at the commit", key: kmsg.EndTxn, match: eosCommitting},
		{name: "while producing", key: kmsg.Produce, match: transactional},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The request waits while the other producer initialises
			// the id, then the broker answers it.
			r, run, fenced := startHeld(t, tc)
			other := &Txn{id: "eos", cl: srcClient(t, r.cc)}
			defer other.cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := other.Fence(ctx)
			cancel()
			close(fenced)
			if err != nil {
				t.Fatalf("the other producer: %v", err)
			}
			err = run.ended(t, "the fenced run to stop")
			if err == nil || !strings.Contains(err.Error(), `another producer with transactional id "eos" fenced this one`) {
				t.Fatalf("the fenced run ended with %v; want an error saying another producer with its transactional id fenced it", err)
			}
			t.Logf("the fenced run: %v", err)
			r.finish()
		})
	}
}

// TestExactlyOnceRebalanceDuringCommit lets another consumer join the
// pipeline's group while a commit is under way: the broker holds the
// commit's offsets (TxnOffsetCommit), or its end (EndTxn), until the
// group is rebalancing, then answers. The consumer takes partitions and
// leaves without committing anything. Whether the transaction commits
// (the offsets were in before the rebalance) or aborts (its records are
// read again into the next), the run goes on, and the output holds every
// record once.
func TestExactlyOnceRebalanceDuringCommit(t *testing.T) {
	t.Parallel()
	for _, tc := range []eosRequest{
		{name: "before the offsets", key: kmsg.TxnOffsetCommit},
		{name: "before the end", key: kmsg.EndTxn, match: eosCommitting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, run, rebalancing := startHeld(t, tc)

			assigned := make(chan struct{})
			var once sync.Once
			other := srcClient(t, r.cc, kgo.ConsumerGroup("eos"), kgo.ConsumeTopics("in"), kgo.DisableAutoCommit(),
				kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
					if len(parts) > 0 {
						once.Do(func() { close(assigned) })
					}
				}))
			admCl := srcClient(t, r.cc)
			defer admCl.Close()
			adm := kadm.NewClient(admCl)
			weirtest.PollUntil(t, 30*time.Second, "the group to rebalance for the other consumer", func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				described, err := adm.DescribeGroups(ctx, "eos")
				return err == nil && described["eos"].State == "PreparingRebalance"
			})
			close(rebalancing)
			waitStruck(t, assigned, "the other consumer to be assigned partitions")
			other.Close() // leaves the group
			weirtest.PollUntil(t, 60*time.Second, "the run to commit the whole input after the rebalance", r.caughtUp)
			if _, err := run.stop(t); err != nil {
				t.Fatalf("the run, which should have gone on after the rebalance: %v", err)
			}
			t.Logf("%d transactions committed, %d aborted", run.commits.Load(), run.aborts.Load())
			r.finish()
		})
	}
}

// eosSourceInTxn makes an exactly-once source reading topic "in" from its
// start in group id, with transactional id id, closed with the test, and
// begins a transaction as a run does (no checkpoint to restore: the
// group's offsets stand). The context ends with the test, or in 30 s.
func eosSourceInTxn(t *testing.T, cc ClientConfig, id string) (*Source, *Txn, context.Context) {
	t.Helper()
	src, err := NewSource(SourceConfig{Name: "in", Client: cc, Topics: []string{"in"}, Group: id, Logger: srcQuiet(),
		MaxPollRecords: 50, Start: StartEarliest, Txn: &TxnConfig{ID: id}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	txn := src.Txn()
	if err := txn.Fence(ctx); err != nil {
		t.Fatal(err)
	}
	if err := txn.Begin(); err != nil {
		t.Fatal(err)
	}
	src.restoreDone()
	return src, txn, ctx
}

// TestExactlyOncePutBack polls records through an exactly-once source's
// client, hands out only the first few (as a run stopped mid-poll does),
// moves the client back to the rest (putBack) and commits the
// transaction: the group's committed offset must be the first record not
// handed out, not the end of the poll, which the transaction would
// commit otherwise.
func TestExactlyOncePutBack(t *testing.T) {
	t.Parallel()
	cc := snkCluster(t, map[string]int32{"in": 1})
	srcProduce(t, cc, srcJSONRecords("in", 0, 50)...)
	src, txn, ctx := eosSourceInTxn(t, cc, "putback")
	var polled []*kgo.Record
	for len(polled) < 20 && ctx.Err() == nil {
		fs := src.cl.PollRecords(ctx, 50)
		polled = append(polled, fs.Records()...)
		if len(polled) < 20 {
			src.cl.AllowRebalance()
		}
	}
	const handed = 7
	var rest kgo.Fetches
	rest = append(rest, kgo.Fetch{Topics: []kgo.FetchTopic{{Topic: "in", Partitions: []kgo.FetchPartition{{Partition: 0, Records: polled[handed:]}}}}})
	(&sourceRun{s: src}).putBack(rest.RecordIter())
	src.cl.AllowRebalance()
	if err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	committed, _ := srcOffsets(t, cc, "putback", "in")
	if want := polled[handed].Offset; committed[0] != want {
		t.Errorf("the transaction committed offset %d after %d records were polled and %d handed out; want %d", committed[0], len(polled), handed, want)
	}
}

// TestExactlyOnceAbortFenced: the brokers refuse the abort of a run's
// transaction because they fenced its producer (a stalled instance's,
// whose transaction they aborted at its timeout; the broker's answer is
// made with kfake's request hook): Abort's error says so (ErrFenced),
// which the pipeline takes as an instance that stalled out of its group,
// and an abort refused for another reason does not.
func TestExactlyOnceAbortFenced(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		code   int16
		fenced bool
	}{
		{"fenced", kerr.ProducerFenced.Code, true},
		{"an old epoch", kerr.InvalidProducerEpoch.Code, true},
		{"another refusal", kerr.TransactionalIDAuthorizationFailed.Code, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in"), kfake.SeedTopics(1, "out"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			cc := ClientConfig{Brokers: c.ListenAddrs()}
			srcProduce(t, cc, srcJSONRecords("in", 0, 5)...)
			src, txn, ctx := eosSourceInTxn(t, cc, "abortfenced")
			for n := 0; n == 0 && ctx.Err() == nil; {
				n = len(src.cl.PollRecords(ctx, 5).Records())
			}
			src.cl.AllowRebalance()
			if err := src.cl.ProduceSync(ctx, &kgo.Record{Topic: "out", Value: []byte("x")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			c.ControlKey(kmsg.EndTxn.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
				r := req.(*kmsg.EndTxnRequest)
				if r.Commit {
					return nil, nil, false
				}
				resp := r.ResponseKind().(*kmsg.EndTxnResponse)
				resp.ErrorCode = tc.code
				return resp, nil, true
			})
			err = txn.Abort(ctx)
			if err == nil || errors.Is(err, ErrFenced) != tc.fenced {
				t.Fatalf("the abort answered %s: %v; want an error, fenced: %t", kerr.ErrorForCode(tc.code), err, tc.fenced)
			}
		})
	}
}
