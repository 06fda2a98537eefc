package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/weir-stream/weir/host/internal/record"
)

// Tasks describes a run whose keyed state is split by task: the instances
// of a pipeline sharing a consumer group each own some of the tasks, and
// so the state of the record keys that belong to them (Pipeline.OwnsKey).
// With Kept set, the run keeps its keyed operators' instances (those that
// are WatermarkResumers) for the next run of the pipeline, which, when the
// group moved tasks at a checkpoint, goes on with them instead of
// restoring every key from the store: the instances go on as they were,
// forgetting the keys of the tasks the group took (Forgetter), and the
// gained tasks get instances of their own, restored (or preloaded,
// Kept.Preload) from the store for their keys alone. A move then pauses
// the tasks that stay only for as long as the run takes to stop at a
// checkpoint and start again, not for a restore of all their state.
// Tasks is plain data, read-only while Run runs.
type Tasks struct {
	// Of returns the task a record key belongs to.
	Of func(key []byte) int32
	// Owned are the tasks the run owns.
	Owned []int32
	// Kept, if set, carries the keyed operators' instances from one run
	// to the next.
	Kept *Kept
	// OnKept, if set, is told, before the run restores, that it goes on
	// with the last run's instances: how many (one per keyed step and
	// worker), and how many of them took a preloaded instance for the
	// tasks gained.
	OnKept func(kept, preloaded int)
}

// Kept carries the instances of a pipeline's keyed operators from a run
// that stopped at a checkpoint to the next run of the pipeline, and holds
// instances preloaded for tasks the next run gains. A run hands it its
// instances as it closes; the caller then either arms it (the run ended
// at a checkpoint whose state the store still holds, and the next run
// restores from it) or drops it. The next run takes the instances only
// when it was armed and has the same steps and parallelism, and only if
// every instance holding a task the run no longer owns can forget it
// (Forgetter); otherwise it closes them and restores as usual. Its
// methods are safe for concurrent use; it lives as long as the pipeline.
type Kept struct {
	mu    sync.Mutex
	armed bool
	clean bool            // the last run's instances hold the state of its last checkpoint
	shape string          // the steps and parallelism of the run that made them
	ops   map[slot]*split // the last run's, by step and worker
	// makers are the current run's, for Preload; pre are the instances
	// Preload made for preTasks.
	makers   map[slot]maker
	pre      map[slot]Operator
	preTasks []int32
	gen      uint64 // counts Drop and take, which void a Preload under way
}

// slot is one worker's instance of one step.
type slot struct{ step, worker int }

// maker makes an instance of a step for one worker, owning the keys of
// the given tasks routed to it; of is the run's Tasks.Of.
type maker struct {
	step Step
	w    owner
	of   func([]byte) int32
}

func (m maker) make(ctx context.Context, tasks []int32) (Operator, func([]byte) bool, error) {
	owns := m.owns(tasks)
	op, err := m.step.New(context.WithValue(ctx, ownerKey{}, owns))
	return op, owns.owns, err
}

// owns is the worker's owner of the keys of tasks.
func (m maker) owns(tasks []int32) owner {
	o := m.w
	o.tasks = func(key []byte) bool { return slices.Contains(tasks, m.of(key)) }
	return o
}

// NewKept returns an empty Kept.
func NewKept() *Kept { return &Kept{} }

// Arm lets the next run take the instances the last one handed over: it
// ended at its final checkpoint. With rolledBack, the run ended without
// one, its state rolled back to its last checkpoint: the instances are
// kept only if they hold that checkpoint's state, no operator having been
// given a record or a watermark since. The next run has the instances
// forget the tasks the group took (Forgetter), or restores as usual if
// one cannot.
func (k *Kept) Arm(rolledBack bool) {
	k.mu.Lock()
	k.armed = len(k.ops) > 0 && (!rolledBack || k.clean)
	k.mu.Unlock()
}

// Drop closes every instance held, and any Preload under way.
func (k *Kept) Drop(ctx context.Context) error {
	k.mu.Lock()
	ops, pre := k.ops, k.pre
	k.reset()
	k.mu.Unlock()
	return closeKept(ctx, ops, pre)
}

// reset forgets everything held. Call with mu held.
func (k *Kept) reset() {
	k.armed, k.clean, k.shape = false, false, ""
	k.ops, k.pre, k.preTasks = nil, nil, nil
	k.gen++
}

func closeKept(ctx context.Context, ops map[slot]*split, pre map[slot]Operator) error {
	var errs []error
	for _, s := range ops {
		errs = append(errs, s.Close(ctx))
	}
	for _, op := range pre {
		errs = append(errs, op.Close(ctx))
	}
	return errors.Join(errs...)
}

// Preload makes, for the tasks the current run was given and will take on
// when it next starts, each keyed operator's instances and restores them
// from the store, while the run goes on with its own tasks: the store's
// state of the given tasks must be current and stay unchanged until the
// next run starts (the caller drops everything kept, Drop, otherwise).
// The instances restore with no watermark; the next run gives them its
// own before anything else (WatermarkResumer). Preload makes only
// instances of the steps the run keeps, WatermarkResumers, which read
// the store and their configuration alone, so it may run beside the
// run's goroutines.
func (k *Kept) Preload(ctx context.Context, tasks []int32) error {
	k.mu.Lock()
	makers, gen := k.makers, k.gen
	k.mu.Unlock()
	var (
		mu   sync.Mutex
		made = map[slot]Operator{}
		errs []error
		wg   sync.WaitGroup
	)
	for sl, m := range makers {
		wg.Go(func() {
			op, err := preload(ctx, m, tasks)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else {
				made[sl] = op
			}
		})
	}
	wg.Wait()
	k.mu.Lock()
	if err := errors.Join(errs...); err != nil || k.gen != gen || ctx.Err() != nil {
		k.mu.Unlock()
		return errors.Join(err, closeKept(context.WithoutCancel(ctx), nil, made), ctx.Err())
	}
	old := k.pre
	k.pre, k.preTasks = made, slices.Sorted(slices.Values(tasks))
	k.mu.Unlock()
	return closeKept(ctx, nil, old)
}

// preload makes and restores one instance of m (a WatermarkResumer's)
// for tasks.
func preload(ctx context.Context, m maker, tasks []int32) (Operator, error) {
	op, owns, err := m.make(ctx, tasks)
	if err != nil {
		return nil, fmt.Errorf("operator %q: %w", m.step.Name, err)
	}
	if err := op.(WatermarkResumer).Restore(ctx, NoWatermark, owns); err != nil {
		op.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("operator %q: restoring state: %w", m.step.Name, err)
	}
	return op, nil
}

// shapeOf is what must not change for a run to take another's instances:
// its steps, where its key_bys and repartitions are, and its parallelism.
func (p *Pipeline) shapeOf(par int) string {
	var b []byte
	for _, s := range p.Steps {
		b = fmt.Appendf(b, "%q/%t/%t;", s.Name, s.KeyBy, s.KeyedState)
	}
	for _, rp := range p.Repartitions {
		b = fmt.Appendf(b, "r%d;", rp.After)
	}
	return fmt.Sprintf("%s par=%d", b, par)
}

// take returns the instances a run of the given shape, owning tasks and
// continuing from a checkpoint (restoring), may go on with, by slot, or
// nil; it closes those it cannot. Either way Kept then holds nothing but
// the run's makers, which the run records as it makes its instances.
func (k *Kept) take(ctx context.Context, shape string, owned []int32, restoring bool, onKept func(kept, preloaded int)) map[slot]*split {
	k.mu.Lock()
	ops, pre, preTasks := k.ops, k.pre, k.preTasks
	ok := k.armed && restoring && k.shape == shape && retainAll(ctx, ops, owned)
	k.reset()
	k.makers = map[slot]maker{}
	if !ok {
		k.mu.Unlock()
		closeKept(ctx, ops, pre)
		return nil
	}
	preloaded := 0
	for sl, s := range ops {
		op := pre[sl]
		if op == nil || !subset(preTasks, owned) || slices.ContainsFunc(preTasks, func(t int32) bool { return slices.Contains(s.tasks(), t) }) {
			continue
		}
		delete(pre, sl)
		s.extras = append(s.extras, &instance{op: op, tasks: preTasks, restored: true, resume: true})
		preloaded++
	}
	k.mu.Unlock()
	closeKept(ctx, nil, pre)
	if onKept != nil {
		onKept(len(ops), preloaded)
	}
	return ops
}

// retainAll has every split retain the tasks of owned, the splits of
// different workers side by side, and reports whether all could.
func retainAll(ctx context.Context, ops map[slot]*split, owned []int32) bool {
	var (
		wg     sync.WaitGroup
		failed atomic.Bool
	)
	for _, s := range ops {
		wg.Go(func() {
			if !s.retain(ctx, owned) {
				failed.Store(true)
			}
		})
	}
	wg.Wait()
	return !failed.Load()
}

// put holds a run's instance of a keyed step (a split) for the next run:
// whatever it holds is in memory now.
// clean says the instance holds the state of the run's last checkpoint.
func (k *Kept) put(shape string, sl slot, s *split, clean bool) {
	s.restored = true
	for _, e := range s.extras {
		e.restored = true
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ops == nil {
		k.ops = map[slot]*split{}
		k.clean = true
	}
	k.shape, k.ops[sl] = shape, s
	k.clean = k.clean && clean
}

// addMaker records how the current run makes the instances of a keyed
// step, for Preload.
func (k *Kept) addMaker(sl slot, m maker) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.makers == nil {
		k.makers = map[slot]maker{}
	}
	k.makers[sl] = m
}

// subset reports whether every element of a is in b.
func subset(a, b []int32) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// split is one worker's instance of a keyed step in a run split by task
// (Tasks.Kept set): one instance for the keys of the tasks the worker had
// when its state was last restored in full (base), and one for each set
// of tasks gained since (extras), each restored for those tasks' keys
// alone. Records go to the instance of their key's task, in order;
// watermarks to all. A split is used by its worker's goroutine, like the
// instances it holds; Kept holds it between runs.
type split struct {
	base      *instance
	extras    []*instance
	m         maker   // how the run makes instances, and its Tasks.Of
	baseTasks []int32 // the tasks base holds
	restored  bool    // base was restored (or began a run that restored nothing)
	// route and held are reused from call to call: each record's
	// instance, and the records of one instance.
	route []int
	held  []record.Record
}

// instance is one operator instance of a split, holding the keys of tasks.
type instance struct {
	op    Operator
	tasks []int32
	owns  func([]byte) bool
	// restored says Restore was called; resume that the instance was
	// preloaded, with no watermark, and must be given the run's.
	restored, resume bool
}

func (s *split) Name() string { return s.base.op.Name() }

// tasks returns every task the split's instances hold.
func (s *split) tasks() []int32 {
	out := slices.Clone(s.baseTasks)
	for _, e := range s.extras {
		out = append(out, e.tasks...)
	}
	return out
}

// retain keeps, of the split's instances, the tasks of owned: an
// instance left with none is closed, one left with some forgets the keys
// of the others (Forgetter). It reports false, having done part of that,
// when an instance that must forget cannot.
func (s *split) retain(ctx context.Context, owned []int32) bool {
	in := func(t int32) bool { return slices.Contains(owned, t) }
	keep := func(tasks []int32) []int32 {
		return slices.DeleteFunc(slices.Clone(tasks), func(t int32) bool { return !in(t) })
	}
	extras := s.extras[:0]
	for _, e := range s.extras {
		tasks := keep(e.tasks)
		switch {
		case len(tasks) == 0:
			e.op.Close(ctx)
			continue
		case len(tasks) < len(e.tasks) && !s.forget(e.op, tasks):
			return false
		}
		e.tasks = tasks
		extras = append(extras, e)
	}
	clear(s.extras[len(extras):])
	s.extras = extras
	tasks := keep(s.baseTasks)
	if len(tasks) < len(s.baseTasks) && !s.forget(s.base.op, tasks) {
		return false
	}
	s.baseTasks = tasks
	return true
}

// forget has op forget every key but those of tasks routed to the
// split's worker, and reports whether it could.
func (s *split) forget(op Operator, tasks []int32) bool {
	f, ok := op.(Forgetter)
	if ok {
		f.Forget(s.m.owns(tasks).owns)
	}
	return ok
}

// gain adds an instance, to be restored, for the tasks of owned that the
// split does not hold yet.
func (s *split) gain(ctx context.Context, owned []int32) error {
	var missing []int32
	have := s.tasks()
	for _, t := range owned {
		if !slices.Contains(have, t) {
			missing = append(missing, t)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	op, owns, err := s.m.make(ctx, missing)
	if err != nil {
		return err
	}
	s.extras = append(s.extras, &instance{op: op, tasks: missing, owns: owns})
	return nil
}

// Restore implements Restorer: a split made for this run restores its one
// instance as an unsplit one would; a split a run went on with restores
// only the instances of tasks gained since, and gives the preloaded ones
// wm.
func (s *split) Restore(ctx context.Context, wm int64, owns func([]byte) bool) error {
	if !s.restored {
		s.restored = true
		if r, ok := s.base.op.(Restorer); ok {
			return r.Restore(ctx, wm, owns)
		}
		return nil
	}
	for _, e := range s.extras {
		switch {
		case e.resume:
			e.resume = false
			e.op.(WatermarkResumer).ResumeWatermark(wm)
		case !e.restored:
			e.restored = true
			if err := e.op.(Restorer).Restore(ctx, wm, e.owns); err != nil {
				return err
			}
		}
	}
	return nil
}

// Process implements Operator: each record goes to its task's instance,
// each instance's in their order.
func (s *split) Process(ctx context.Context, in []record.Record, out *record.Output) error {
	if len(s.extras) == 0 {
		return s.base.op.Process(ctx, in, out)
	}
	s.route = s.route[:0]
	for i := range in {
		s.route = append(s.route, s.instanceOf(in[i].Key))
	}
	for j := -1; j < len(s.extras); j++ {
		s.held = s.held[:0]
		for i := range in {
			if s.route[i] == j {
				s.held = append(s.held, in[i])
			}
		}
		if len(s.held) == 0 {
			continue
		}
		op := s.base.op
		if j >= 0 {
			op = s.extras[j].op
		}
		if err := op.Process(ctx, s.held, out); err != nil {
			return err
		}
	}
	clear(s.held)
	return nil
}

// instanceOf returns the extra instance holding key's task, or -1 for the
// base.
func (s *split) instanceOf(key []byte) int {
	t := s.m.of(key)
	for j, e := range s.extras {
		if slices.Contains(e.tasks, t) {
			return j
		}
	}
	return -1
}

// OnWatermark implements Watermarker for every instance that is one.
func (s *split) OnWatermark(ctx context.Context, wm int64, out *record.Output) error {
	if err := onWatermark(ctx, s.base.op, wm, out); err != nil {
		return err
	}
	for _, e := range s.extras {
		if err := onWatermark(ctx, e.op, wm, out); err != nil {
			return err
		}
	}
	return nil
}

// onWatermark gives op watermark wm, if it is a Watermarker.
func onWatermark(ctx context.Context, op Operator, wm int64, out *record.Output) error {
	if w, ok := op.(Watermarker); ok {
		return w.OnWatermark(ctx, wm, out)
	}
	return nil
}

// Close closes every instance.
func (s *split) Close(ctx context.Context) error {
	errs := []error{s.base.op.Close(ctx)}
	for _, e := range s.extras {
		errs = append(errs, e.op.Close(ctx))
	}
	return errors.Join(errs...)
}
