package checkpoint

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/weir-stream/weir/host/internal/kafka"
	"github.com/weir-stream/weir/state"
)

// A run sharing its group by task that the group gives tasks, taking
// none away, goes on with its own tasks while the new ones' state
// catches up in the background, as Kafka Streams restores new tasks
// beside running ones: their input partitions wait, a goroutine replays
// their changelog partitions into the store at full speed (waiting first
// for transactions a dead owner left open there), and only once they are
// current does the run end and the next one start with them, replaying
// the little their partitions gained since. Without this, every task of
// the instance would pause for the whole replay.
//
// The replay writes into the store's last committed checkpoint
// (state.Badger.ApplyCommitted): past the cache, which stays the run's,
// and out of the changes the run's next checkpoint lists and writes to the
// changelog, so that the run's checkpoints do not pay for it; a rollback
// keeps it. (A store that cannot takes the writes in the run's epoch,
// under the Coordinator's mutex, which a checkpoint holds from its
// standby pass to the store's commit.) The offsets and markers a checkpoint records for those tasks
// are the ones the replay reached when it last finished a pass, so the
// store's state of a task may be ahead of its recorded offset, never
// behind: replaying a changelog partition again from an earlier offset
// applies the same changes in the same order, and ends in the same state.

// takeover catches up with the tasks a run was given (kafka.Tasks'
// Pending). It lives as long as the run's checkpoints; its goroutine is
// started by start and ended by stop.
type takeover struct {
	ck     *Coordinator
	r      restorer
	tasks  *kafka.Tasks
	signal chan struct{} // a gain to catch up with (notify)
	// preload, if set, makes the caught-up tasks' operators' state ahead
	// of the next run (Setup.Preload).
	preload func(ctx context.Context, tasks []int32) error
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func newTakeover(ck *Coordinator, r restorer, tasks *kafka.Tasks) *takeover {
	tk := &takeover{ck: ck, r: r, tasks: tasks, signal: make(chan struct{}, 1)}
	if c, ok := r.store.(committedApplier); ok {
		tk.r.apply = c.ApplyCommitted
		return tk
	}
	tk.r.apply = func(muts []state.Mutation) error {
		ck.mu.Lock()
		defer ck.mu.Unlock()
		ck.caught += len(muts)
		return r.store.Apply(muts)
	}
	return tk
}

// committedApplier is a store that can write a batch into its last
// committed checkpoint (state.Badger.ApplyCommitted).
type committedApplier interface {
	ApplyCommitted(muts []state.Mutation) error
}

// start starts catching up with gains (kafka.Tasks.SetCatchUp).
func (tk *takeover) start() {
	ctx, cancel := context.WithCancel(context.Background())
	tk.cancel = cancel
	tk.tasks.SetCatchUp(tk.notify)
	tk.wg.Go(func() { tk.run(ctx) })
}

// stop ends the catching up and waits for it: the run is over.
func (tk *takeover) stop() {
	tk.tasks.SetCatchUp(nil)
	tk.cancel()
	tk.wg.Wait()
}

// notify is told of a gain; it does not block.
func (tk *takeover) notify() {
	select {
	case tk.signal <- struct{}{}:
	default:
	}
}

func (tk *takeover) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.signal:
		}
		tk.catchUp(ctx)
	}
}

// catchUpRetry is how long the catching up waits after a failed pass.
const catchUpRetry = time.Second

// catchUp brings the state of the tasks the run was given to the ends of
// their changelog partitions, trying again after failures, and then ends
// the run (finish). It returns early when a later move took one of the
// run's own tasks (the run ends anyway) or ctx ends.
func (tk *takeover) catchUp(ctx context.Context) {
	log := tk.r.log
	for ctx.Err() == nil {
		pending := tk.tasks.Pending()
		if len(pending) == 0 {
			return
		}
		log.Info("tasks given to this instance: catching up with their changelog partitions while the run goes on with its own", "tasks", pending)
		start := time.Now()
		res, err := tk.pass(ctx, pending)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("tasks given to this instance: catching up with their changelog partitions failed; trying again",
				"tasks", pending, "error", err)
			select {
			case <-time.After(catchUpRetry):
			case <-ctx.Done():
			}
			continue
		case err != nil:
			return
		case !slices.Equal(tk.tasks.Pending(), pending):
			continue // given more meanwhile
		}
		log.Info("tasks given to this instance caught up with their changelog partitions; the run starts again with them",
			"tasks", pending, "changes", res.Changes, "took", time.Since(start))
		tk.finish(ctx, pending)
		return
	}
}

// pass applies the changelog partitions of pending from where the
// store's state of each stands to their ends, and records where that
// is, with their last markers, for the next checkpoint.
func (tk *takeover) pass(ctx context.Context, pending []int32) (kafka.ReplayResult, error) {
	ck := tk.ck
	ck.mu.Lock()
	from := slices.Clone(ck.offsets)
	ck.mu.Unlock()
	r := tk.r
	r.only = pending
	res, err := r.pass(ctx, from)
	if err != nil {
		return res, err
	}
	ck.mu.Lock()
	defer ck.mu.Unlock()
	for _, p := range pending {
		if int(p) < len(res.Next) && int(p) < len(ck.offsets) {
			ck.offsets[p] = res.Next[p]
		}
		if int(p) < len(res.Markers) && res.Markers[p] != nil {
			ck.keepMarker(p, res.Markers[p])
		}
	}
	return res, nil
}

// finish ends the run now that the tasks it was given (pending) are
// current, once their operators' state is preloaded for the next run,
// which goes on with the run's own: at least once at once, its final
// checkpoint recording where their state stands; exactly once at the
// next checkpoint, asked for now, since the run rolls back to its last
// checkpoint as it ends.
func (tk *takeover) finish(ctx context.Context, pending []int32) {
	ck := tk.ck
	if tk.preload != nil {
		start := time.Now()
		if err := tk.preload(ctx, pending); err != nil {
			tk.r.log.Warn("tasks given to this instance: preloading their operators' state failed; the next run restores it", "tasks", pending, "error", err)
		} else {
			tk.r.log.Info("tasks given to this instance: their operators' state is loaded, while the run went on with its own", "tasks", pending, "took", time.Since(start))
		}
	}
	if ck.Txn == nil {
		tk.tasks.CaughtUp()
		return
	}
	ck.mu.Lock()
	ck.caughtUp = true
	ck.mu.Unlock()
	// The run ends at the first checkpoint that records the caught-up
	// state, since ending rolls back to it.
	ck.checkpointSoon()
}
