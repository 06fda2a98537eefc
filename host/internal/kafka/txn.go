package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnConfig makes a Source exactly-once: it consumes and produces through
// one transactional client, whose transactions also commit the group's
// offsets (franz-go's GroupTransactSession).
type TxnConfig struct {
	// ID is the transactional id. It must be stable across restarts of the
	// same pipeline, so that a restarted instance fences its predecessor,
	// and unique between pipelines.
	ID string
	// Compression, Linger and BatchMaxBytes configure the producer, as in
	// SinkConfig; acks are always all.
	Compression   string
	Linger        time.Duration
	BatchMaxBytes int32
	// Timeout is the transaction timeout: the broker aborts a transaction
	// open longer. Zero means 60s; it must exceed the checkpoint interval.
	Timeout time.Duration
}

// Txn is the Kafka transaction of an exactly-once run. The Source that
// made it consumes through its client; Kafka sinks, the Kafka dead-letter
// output and the changelog produce through it (their configs' Txn), and
// each checkpoint commits everything, with the consumed offsets, in one
// transaction. Begin and Commit are called by the checkpoint, one at a
// time; the Source closes the client.
type Txn struct {
	open    bool // a transaction is begun and not ended (Begin, Commit and Abort are called by one goroutine at a time)
	id      string
	timeout time.Duration // TxnConfig.Timeout, or a minute
	sess    *kgo.GroupTransactSession
	cl      *kgo.Client
	manual  *manualTopics // topics cl writes to named partitions (changelogs)
	log     *slog.Logger
}

// ErrTxnAborted is returned by Commit when the transaction was aborted
// instead, because the group rebalanced during it: the run must restart
// from its last checkpoint.
var ErrTxnAborted = errors.New("kafka: the transaction was aborted (the consumer group rebalanced)")

// ErrFenced marks the error of a commit or write that the brokers
// refused because they hold the transactional id for a newer producer:
// another instance with the same id fenced this one, or the brokers
// aborted a transaction left open past its timeout and moved the id to a
// new epoch. The client cannot produce transactionally again; when the
// group also took the instance's tasks meanwhile (the instance stalled),
// the pipeline makes a new one and goes on from its last checkpoint.
var ErrFenced = errors.New("kafka: the brokers fenced this transactional producer")

// fencedError is an error that says the brokers fenced the producer
// (ErrFenced), with its explanation.
type fencedError struct{ error }

func (fencedError) Is(target error) bool { return target == ErrFenced }
func (e fencedError) Unwrap() error      { return e.error }

// Begin begins the next transaction.
func (t *Txn) Begin() error {
	if err := t.sess.Begin(); err != nil {
		return fmt.Errorf("kafka: beginning a transaction: %w", err)
	}
	t.open = true
	return nil
}

// Open reports whether a transaction is begun and not ended.
func (t *Txn) Open() bool { return t.open }

// Abort aborts the open transaction, if any, and puts the source's
// partitions back to the group's offsets, which the last committed
// transaction wrote: for a run that is rolled back in process. An abort
// the brokers refuse because they fenced the producer says so
// (ErrFenced).
func (t *Txn) Abort(ctx context.Context) error {
	t.open = false
	if _, err := t.sess.End(ctx, kgo.TryAbort); err != nil {
		return fmt.Errorf("kafka: aborting the transaction: %w", t.explain(err))
	}
	return nil
}

// ID returns the transactional id.
func (t *Txn) ID() string { return t.id }

// Commit flushes what was produced and commits it, with the offsets of
// everything the source polled, in one transaction. The caller makes sure
// everything polled was processed and produced.
func (t *Txn) Commit(ctx context.Context) error {
	id, epoch, idErr := t.cl.ProducerID(ctx) // loaded by the transaction's first write
	t.open = false
	committed, err := t.sess.End(ctx, kgo.TryCommit)
	switch {
	case err != nil && txnFenced(err):
		return fmt.Errorf("kafka: committing the transaction: %w", t.fencedErr(err))
	case err != nil && idErr == nil && t.ended(ctx, id, epoch, err):
		return fencedError{fmt.Errorf("kafka: committing the transaction: the brokers aborted it and moved transactional id %q to a newer epoch: "+
			"another producer with transactional id %[1]q fenced this one (%s), or the transaction was open longer than its timeout: %w", t.id, txnSameID, err)}
	case err != nil:
		return fmt.Errorf("kafka: committing the transaction: %w", err)
	case !committed:
		return ErrTxnAborted
	}
	return nil
}

// txnSameID says which instances share a transactional id.
const txnSameID = "an instance that replaced this one, or one running beside it with the same id: give each instance its own instance_id"

// txnFenced reports whether err says that the brokers fenced this
// producer: another one initialised its transactional id.
func txnFenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch)
}

// fencedErr explains err, which says that another producer fenced this
// one (txnFenced).
func (t *Txn) fencedErr(err error) error {
	return fencedError{fmt.Errorf("another producer with transactional id %q fenced this one (%s), or the transaction was open longer than its timeout: %w", t.id, txnSameID, err)}
}

// explain returns the error of a write through t's client, explained
// when it says another producer fenced this one; t may be nil (a write
// outside a transaction).
func (t *Txn) explain(err error) error {
	if t == nil || !txnFenced(err) {
		return err
	}
	return t.fencedErr(err)
}

// ended reports, after a commit failed with err, whether the brokers
// hold the transactional id for another producer than this one (id,
// epoch): a new producer id, an epoch past the one this producer's commit
// could have moved it to, or a later epoch when the brokers refused the
// commit (INVALID_TXN_STATE), which so did not move it. A broker may
// answer a fenced producer's commit so rather than with PRODUCER_FENCED,
// taking it for a retry of the abort that fenced it.
func (t *Txn) ended(ctx context.Context, id int64, epoch int16, err error) bool {
	if id < 0 {
		return false // no producer id: nothing was written
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	described, derr := kadm.NewClient(t.cl).DescribeTransactions(ctx, t.id)
	d, ok := described[t.id]
	switch {
	case derr != nil || !ok || d.Err != nil:
		return false
	case d.ProducerID != id, d.ProducerEpoch > epoch+1:
		return true
	}
	return d.ProducerEpoch > epoch && errors.Is(err, kerr.InvalidTxnState)
}

// Fence makes the brokers abort any transaction a previous instance with
// the same transactional id left open (after a crash), and reject that
// instance's writes from now on, by initialising the producer id anew. A
// read_committed reader of the outputs is then no longer held back by the
// old transaction.
func (t *Txn) Fence(ctx context.Context) error {
	for {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = &t.id
		req.TransactionTimeoutMillis = int32(srcOr(t.timeout, time.Minute).Milliseconds())
		resp, err := req.RequestWith(ctx, t.cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, kerr.ConcurrentTransactions), errors.Is(err, kerr.CoordinatorLoadInProgress),
			errors.Is(err, kerr.NotCoordinator), errors.Is(err, kerr.CoordinatorNotAvailable):
			// The coordinator is still aborting the old transaction.
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return fmt.Errorf("kafka: fencing transactional id %q: %w", t.id, ctx.Err())
			}
		default:
			return fmt.Errorf("kafka: fencing transactional id %q: %w", t.id, err)
		}
	}
}

// txnOpts returns the producer options of a transactional client.
func txnOpts(cc ClientConfig, tc *TxnConfig, manual *manualTopics, log *slog.Logger) ([]kgo.Opt, error) {
	if tc.ID == "" {
		return nil, errors.New("no transactional id")
	}
	opts, _, err := snkProducerOpts(cc, tc.Compression, AcksAll, tc.Linger, tc.BatchMaxBytes, 0, manual, log)
	if err != nil {
		return nil, err
	}
	timeout := tc.Timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	return append(opts, kgo.TransactionalID(tc.ID), kgo.TransactionTimeout(timeout),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets()), nil
}
