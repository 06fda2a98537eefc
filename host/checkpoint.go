package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/kafka"
	"github.com/weir-stream/weir/state"
)

// storeMeta is the metadata the state store keeps with each checkpoint:
// the engine's checkpoint (source positions, event time) and, for runs
// with a changelog, the changelog offset after the checkpoint's marker,
// from where a restart replays what the store may have missed.
type storeMeta struct {
	Engine        json.RawMessage `json:"engine"`
	ChangelogNext int64           `json:"changelog_next,omitempty"`
}

// checkpointer takes a run's checkpoints: the state store's, the
// changelog's and, in an exactly-once run, the Kafka transaction's, in an
// order that a crash at any point leaves recoverable (see RATIONALE.md).
type checkpointer struct {
	p         *Pipeline
	cs        state.Checkpointer
	changelog *kafka.Changelog // nil for runs without a Kafka source
	txn       *kafka.Txn       // nil unless exactly-once
	// exactFiles makes each checkpoint record the lengths of the file
	// outputs, which a restart cuts them back to: exactly-once runs whose
	// input positions are the checkpoint's (see exactFiles).
	exactFiles bool
}

// setUpCheckpoints prepares a run's checkpoints, once its sources exist:
// it fences a crashed predecessor's transaction, brings the store to the
// last checkpoint (its own, or a newer one in the changelog), and returns
// the engine's settings. It returns nil when the pipeline takes no
// checkpoints. close releases the changelog's client.
func (p *Pipeline) setUpCheckpoints(ctx context.Context, cc kafka.ClientConfig, txn *kafka.Txn, kafkaRun bool) (_ *engine.Checkpointing, close func(), err error) {
	c := &p.cfg.Checkpoints
	close = func() {}
	if !c.Enabled {
		return nil, close, nil
	}
	cs, ok := p.opts.Store.(state.Checkpointer)
	if !ok {
		return nil, close, fmt.Errorf("%s: checkpoints: the state store (%T) cannot take checkpoints", c.Pos, p.opts.Store)
	}
	ck := &checkpointer{p: p, cs: cs, txn: txn}
	if ck.exactFiles, err = p.exactFiles(kafkaRun); err != nil {
		return nil, close, err
	}
	if txn != nil {
		if err := txn.Fence(ctx); err != nil {
			return nil, close, err
		}
		p.opts.Logger.Debug("kafka: fenced earlier instances", "transactional_id", txn.ID())
	}
	meta, err := p.lastCheckpoint(cs)
	if err != nil {
		return nil, close, err
	}
	if kafkaRun && p.keyedState() {
		// Without keyed state there is nothing to log, and the Kafka
		// sources resume from the group's offsets, which every
		// checkpoint commits (or its transaction, exactly once).
		if ck.changelog, err = kafka.NewChangelog(cc, c.ChangelogTopic, txn, p.opts.Logger); err != nil {
			return nil, close, fmt.Errorf("%s: checkpoints: %w", c.Pos, err)
		}
		close = ck.changelog.Close
		defer func() {
			if err != nil {
				close()
			}
		}()
		if err := ck.changelog.EnsureTopic(ctx); err != nil {
			return nil, close, err
		}
		start := time.Now()
		res, err := ck.replay(ctx, cc, c.ChangelogTopic, &meta)
		if err != nil {
			return nil, close, err
		}
		if res.Changes > 0 || res.Meta != nil {
			p.opts.Logger.Info("state restored from the changelog", "pipeline", p.cfg.Name,
				"changes", res.Changes, "changelog_next", res.Next, "took", time.Since(start))
		}
	}
	settings := &engine.Checkpointing{Interval: c.Interval, Commit: ck.commit}
	if len(meta.Engine) > 0 {
		cp, err := engine.UnmarshalCheckpoint(meta.Engine)
		if err != nil {
			return nil, close, fmt.Errorf("%s: the last checkpoint in %s is unreadable: %w", p.cfg.State.At("dir"), p.cfg.State.Dir, err)
		}
		settings.Restore = cp
		p.opts.Logger.Info("resuming from a checkpoint", "pipeline", p.cfg.Name, "epoch", cp.Epoch, "watermark", cp.Watermark)
	}
	if txn != nil {
		if err := txn.Begin(); err != nil {
			return nil, close, err
		}
	}
	return settings, close, nil
}

// exactFiles reports whether the run's file outputs are exactly once: cut
// back, on restart, to the length the last checkpoint recorded. That needs
// exactly_once delivery and input positions that are the checkpoint's:
// not a Kafka run without keyed state, whose sources resume from the
// group's offsets, which its transaction commits before the store records
// the checkpoint, and which a rebalance rolls back in process. There a
// file sink is an error and a dead-letter file is appended to.
func (p *Pipeline) exactFiles(kafkaRun bool) (bool, error) {
	if p.cfg.Checkpoints.Delivery != config.ExactlyOnce {
		return false, nil
	}
	if !kafkaRun || p.keyedState() {
		return true, nil
	}
	for i := range p.cfg.Sinks {
		if s := &p.cfg.Sinks[i]; s.Type == config.SinkFile {
			return false, s.Errorf("", "exactly_once delivery to a file needs keyed state when the pipeline reads Kafka: "+
				"without it the input resumes from the consumer group's offsets, which the file cannot be cut back to; use a Kafka sink")
		}
	}
	return false, nil
}

// lastCheckpoint returns the metadata of the store's last committed
// checkpoint, after rolling back a checkpoint that was prepared and not
// committed (a crash between the two: if it did commit in Kafka, the
// changelog has it, and a replay brings it back).
func (p *Pipeline) lastCheckpoint(cs state.Checkpointer) (storeMeta, error) {
	if b, ok := cs.(*state.Badger); ok {
		if prep, ok := b.Prepared(); ok {
			p.opts.Logger.Info("state: rolling back a checkpoint that did not complete", "pipeline", p.cfg.Name, "version", prep.Version)
			if err := b.Resolve(false); err != nil {
				return storeMeta{}, err
			}
		}
	}
	var meta storeMeta
	if last, ok := cs.Committed(); ok && len(last.Meta) > 0 {
		if err := json.Unmarshal(last.Meta, &meta); err != nil {
			return meta, fmt.Errorf("%s: the last checkpoint in %s is unreadable: %w", p.cfg.State.At("dir"), p.cfg.State.Dir, err)
		}
	}
	return meta, nil
}

// replay applies the changelog topic after the store's last checkpoint
// (meta) to the store, and adopts the last checkpoint marker it finds,
// which is newer than the store's, recording it as the store's checkpoint
// and in meta. A store that lost its directory replays everything.
func (ck *checkpointer) replay(ctx context.Context, cc kafka.ClientConfig, topic string, meta *storeMeta) (kafka.ReplayResult, error) {
	var muts []state.Mutation
	flush := func() error {
		err := ck.p.opts.Store.Apply(muts)
		clear(muts)
		muts = muts[:0]
		return err
	}
	res, err := kafka.Replay(ctx, cc, topic, meta.ChangelogNext, func(k, v []byte, deleted bool) error {
		muts = append(muts, state.Mutation{Key: k, Value: v, Delete: deleted})
		if len(muts) == 1024 {
			return flush()
		}
		return nil
	}, ck.p.opts.Logger)
	if err == nil {
		err = flush()
	}
	if err != nil {
		return res, fmt.Errorf("checkpoints: restoring state from the changelog: %w", err)
	}
	if res.Meta == nil {
		return res, nil
	}
	*meta = storeMeta{Engine: res.Meta, ChangelogNext: res.Next}
	b, err := json.Marshal(meta)
	if err != nil {
		return res, err
	}
	if err := ck.cs.Checkpoint(b); err != nil {
		return res, fmt.Errorf("checkpoints: recording the state restored from the changelog: %w", err)
	}
	return res, nil
}

// commit is engine.Checkpointing.Commit. Without a changelog the store
// takes the checkpoint alone, after the Kafka transaction in an
// exactly-once run; a transaction a rebalance aborted is not an error
// there, since nothing but the outputs and offsets it held need undoing.
// With one, the store prepares it, the
// changelog gets the epoch's changes and the marker, then (exactly-once)
// the Kafka transaction commits outputs, changelog and input offsets
// together, and only then does the store commit, recording where the
// changelog stands. A crash after the prepare rolls the store back on
// restart, and the changelog replay brings it forward again if the
// transaction had committed.
func (ck *checkpointer) commit(ctx context.Context, cp *engine.Checkpoint) error {
	start := time.Now()
	// The file outputs are on disk before anything records the
	// checkpoint, and, exactly once, their lengths are in it. p.run is
	// the run whose engine calls commit.
	if ri := ck.p.run.Load(); ri != nil {
		if err := ri.ep.SyncOutputs(cp, ck.exactFiles); err != nil {
			return err
		}
	}
	em, err := cp.Marshal()
	if err != nil {
		return err
	}
	meta := storeMeta{Engine: em}
	b, _ := json.Marshal(meta)
	switch {
	case ck.changelog == nil && ck.txn == nil:
		if err := ck.cs.Checkpoint(b); err != nil {
			return err
		}
		ck.p.opts.Logger.Debug("checkpoint", "pipeline", ck.p.cfg.Name, "epoch", cp.Epoch, "took", time.Since(start))
		return nil
	case ck.changelog == nil:
		// Exactly once without keyed state: the transaction holds all
		// there is (outputs and input offsets), and the store only the
		// engine's checkpoint, after it.
		if err := ck.txn.Commit(ctx); err != nil {
			if !errors.Is(err, kafka.ErrTxnAborted) {
				return err
			}
			// The group rebalanced during the transaction: its outputs
			// are aborted, and the source is back at the group's
			// offsets, so its records are read again into the next.
			ck.p.opts.Logger.Info("checkpoint: the consumer group rebalanced, so the transaction was aborted; its records are processed again",
				"pipeline", ck.p.cfg.Name, "epoch", cp.Epoch)
			return ck.txn.Begin()
		}
		if err := ck.cs.Checkpoint(b); err != nil {
			return err
		}
		if err := ck.txn.Begin(); err != nil {
			return err
		}
		ck.p.opts.Logger.Debug("checkpoint", "pipeline", ck.p.cfg.Name, "epoch", cp.Epoch, "took", time.Since(start))
		return nil
	}
	if err := ck.cs.Prepare(b); err != nil {
		return err
	}
	next, err := ck.changelog.Write(ctx, ck.cs.Changes, em)
	if err != nil {
		return err
	}
	if ck.txn != nil {
		if err := ck.txn.Commit(ctx); err != nil {
			if errors.Is(err, kafka.ErrTxnAborted) {
				return fmt.Errorf("%w; the pipeline must restart from its last checkpoint", err)
			}
			return err
		}
	}
	meta.ChangelogNext = next
	b, _ = json.Marshal(meta)
	if err := ck.cs.Commit(b); err != nil {
		return err
	}
	if ck.txn != nil {
		if err := ck.txn.Begin(); err != nil {
			return err
		}
	}
	ck.p.opts.Logger.Debug("checkpoint", "pipeline", ck.p.cfg.Name, "epoch", cp.Epoch, "changelog_next", next, "took", time.Since(start))
	return nil
}

// openStore opens the state store the config names.
func openStore(cfg *config.Pipeline, opts Options) (state.Store, func() error, error) {
	switch cfg.State.Backend {
	case config.StateBadger:
		b, err := state.OpenBadger(state.BadgerOptions{Dir: cfg.State.Dir, Logger: opts.Logger, Checkpointed: cfg.Checkpoints.Enabled})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: state.dir: %w", cfg.State.At("dir"), err)
		}
		return b, b.Close, nil
	}
	return state.NewMemory(), nil, nil
}
