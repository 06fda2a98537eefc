package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/wasm"
)

// Hot reload.
//
// Each map, flat_map and filter operator has a pluginSlot holding its live
// version. A reload builds the plugin if it is Go source, compiles it,
// checks it against the ABI, initialises it with its config, and
// instantiates one worker for each of the operator's instances, all
// before anything changes; any failure leaves the live version running. It
// then publishes the new version. Each operator instance notices at its
// next batch, takes a ready worker and closes its old one: the swap
// happens between batches, so no record is half processed by two versions,
// and costs a pointer exchange. State is the store's, keyed by operator
// name, so the new version sees it as the old one left it.
//
// A new version is on probation for its first probationBatches batches
// (over all instances): if more than maxTrapShare of their records
// trapped, the previous version is put back, the same way. Trapped
// records go to the dead-letter output, as always.
const (
	probationBatches = 10
	maxTrapShare     = 0.5
)

// pluginSlot is one plugin operator's live version. Its methods are safe
// for concurrent use; reloads and rollbacks are serialised.
type pluginSlot struct {
	p   *Pipeline
	op  *config.Operator
	log *slog.Logger
	cur atomic.Pointer[pluginVersion]
	// shadow is the candidate running beside the live version (shadow.go),
	// or nil.
	shadow atomic.Pointer[shadowRun]
	mu     sync.Mutex      // serialises reloads, rollbacks and promotions; guards below
	good   *pluginVersion  // the version a rollback returns to
	next   int             // the next version number
	state  PluginStatus    // what the API reports
	stats  *reloadCounters // totals for metrics
	refs   pluginRefs      // which plugins operator instances still run

	// unkeyed is set, by build, when the operator's records are not
	// routed to workers by key (parallelism above 1, no key_by before it,
	// no keyed step beside it): a version that uses keyed state cannot be
	// swapped in then, since one key's state would be written by several
	// workers.
	unkeyed atomic.Bool
	// scaledOut is set, by build, when the run reads Kafka and started
	// without keyed state: its instances may share their consumer group,
	// and it keeps no changelog, so a version that uses keyed state cannot
	// be swapped in either.
	scaledOut atomic.Bool
}

// livePath is the path the live version was loaded from: the operator's
// plugin, or the shadow promoted in its place. It waits for a reload or
// promotion in progress.
func (s *pluginSlot) livePath() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.Path
}

// pluginRefs counts, per plugin, the operator instances (and shadow
// instances) running it, so that a plugin that was replaced is closed only
// once the last of them has moved off it: an instance that traps is made
// anew from its plugin's compiled module, which must still be open.
type pluginRefs struct {
	mu      sync.Mutex
	users   map[*wasm.Plugin]int
	retired map[*wasm.Plugin]bool
}

func (r *pluginRefs) acquire(p *wasm.Plugin) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.users == nil {
		r.users = map[*wasm.Plugin]int{}
	}
	r.users[p]++
}

// release notes an instance moving off p, closing p if it was retired and
// this was the last.
func (r *pluginRefs) release(ctx context.Context, p *wasm.Plugin) {
	r.mu.Lock()
	r.users[p]--
	last := r.users[p] <= 0
	if last {
		delete(r.users, p)
	}
	closing := last && r.retired[p]
	if closing {
		delete(r.retired, p)
	}
	r.mu.Unlock()
	if closing {
		p.Close(ctx)
	}
}

// retire closes p once no instance runs it (now, if none does).
func (r *pluginRefs) retire(ctx context.Context, p *wasm.Plugin) {
	r.mu.Lock()
	if r.users[p] > 0 {
		if r.retired == nil {
			r.retired = map[*wasm.Plugin]bool{}
		}
		r.retired[p] = true
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	p.Close(ctx)
}

// pluginVersion is one loaded version of a plugin.
type pluginVersion struct {
	n      int
	plug   *wasm.Plugin
	hash   string
	loaded time.Time
	// ready holds workers instantiated before the version was published,
	// one per operator instance; an instance that finds none makes one.
	ready chan *wasm.Worker
	// Probation counters, over every instance.
	batches, records, trapped atomic.Int64
	settled                   atomic.Bool
}

// reloadCounters count a slot's reload outcomes.
type reloadCounters struct {
	reloads, failures, rollbacks atomic.Int64
}

// PluginStatus describes one plugin operator's live version, for the admin
// API. It is a plain value.
type PluginStatus struct {
	Operator  string    `json:"operator"`
	Path      string    `json:"path"`
	Version   int       `json:"version"`
	SHA256    string    `json:"sha256"`
	LoadedAt  time.Time `json:"loaded_at"`
	Reloads   int64     `json:"reloads"`
	Failures  int64     `json:"failures"`
	Rollbacks int64     `json:"rollbacks"`
	LastError string    `json:"last_error,omitempty"`
	// Shadow is the candidate running beside the live version, if any.
	Shadow *ShadowStatus `json:"shadow,omitempty"`
}

func newPluginSlot(p *Pipeline, op *config.Operator, plug *wasm.Plugin, hash string) *pluginSlot {
	s := &pluginSlot{p: p, op: op, log: p.opts.Logger.With("operator", op.Name), next: 2, stats: &reloadCounters{}}
	v := &pluginVersion{n: 1, plug: plug, hash: hash, loaded: time.Now(), ready: make(chan *wasm.Worker, 1)}
	v.settled.Store(true)
	s.cur.Store(v)
	s.good = v
	s.state = PluginStatus{Operator: op.Name, Path: op.Plugin, Version: 1, SHA256: hash, LoadedAt: v.loaded}
	return s
}

// instances is how many operator instances run the plugin.
func (s *pluginSlot) instances() int { return max(s.p.cfg.Engine.Parallelism, 1) }

// reload loads the plugin's file or source folder again and, if it
// changed, swaps it in. It returns the error that kept the live version
// running, if any.
func (s *pluginSlot) reload(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	plug, hash, err := s.p.loadPluginWith(ctx, s.op, s.state.Path, s.p.opts.Store, s.p.metrics.observeCall(s.op.Name))
	if err != nil {
		s.stats.failures.Add(1)
		s.state.LastError = err.Error()
		s.log.Error("plugin reload failed; the running version stays", "version", s.cur.Load().n, "error", err)
		return err
	}
	if hash == s.cur.Load().hash {
		plug.Close(ctx)
		s.log.Info("plugin unchanged; nothing to reload", "sha256", hash)
		return nil
	}
	v, err := s.prepare(ctx, plug, hash, s.next)
	if err != nil {
		s.stats.failures.Add(1)
		s.state.LastError = err.Error()
		s.log.Error("plugin reload failed; the running version stays", "version", s.cur.Load().n, "error", err)
		return err
	}
	s.next++
	s.stats.reloads.Add(1)
	s.state.LastError = ""
	s.publish(v)
	s.log.Info("plugin reloaded", "version", v.n, "sha256", hash)
	return nil
}

// prepare instantiates a version's workers, one per operator instance (the
// first is the one Load initialised).
func (s *pluginSlot) prepare(ctx context.Context, plug *wasm.Plugin, hash string, n int) (*pluginVersion, error) {
	if s.unkeyed.Load() && plug.UsesState() {
		plug.Close(ctx)
		return nil, fmt.Errorf("the new version uses keyed state, but operator %q runs on %d workers with no key_by before it, "+
			"so one key's records reach several workers: put a key_by before it, or run with parallelism 1",
			s.op.Name, s.p.cfg.Engine.Parallelism)
	}
	if s.scaledOut.Load() && plug.UsesState() {
		plug.Close(ctx)
		return nil, fmt.Errorf("the new version uses keyed state, but the pipeline started without any: several instances may share " +
			"its consumer group, and it keeps no changelog; restart the pipeline to run this version (it then runs as one active instance)")
	}
	k := s.instances()
	v := &pluginVersion{n: n, plug: plug, hash: hash, loaded: time.Now(), ready: make(chan *wasm.Worker, k)}
	for range k {
		w, err := plug.NewWorker(ctx)
		if err != nil {
			close(v.ready)
			for w := range v.ready {
				w.Close(ctx)
			}
			plug.Close(ctx)
			return nil, fmt.Errorf("instantiating: %w", err)
		}
		v.ready <- w
	}
	return v, nil
}

// publish makes v the live version. Call with s.mu held.
func (s *pluginSlot) publish(v *pluginVersion) {
	s.cur.Store(v)
	s.state.Version, s.state.SHA256, s.state.LoadedAt = v.n, v.hash, v.loaded
	s.state.Reloads, s.state.Failures, s.state.Rollbacks = s.stats.reloads.Load(), s.stats.failures.Load(), s.stats.rollbacks.Load()
}

// observe counts a batch of records a version processed during its
// probation, and settles it after probationBatches: kept, or rolled back
// if too many records trapped.
func (s *pluginSlot) observe(v *pluginVersion, records, trapped int64) {
	v.records.Add(records)
	v.trapped.Add(trapped)
	if v.batches.Add(1) != probationBatches || !v.settled.CompareAndSwap(false, true) {
		return
	}
	share := float64(v.trapped.Load()) / float64(max(v.records.Load(), 1))
	if share <= maxTrapShare {
		s.log.Info("plugin version passed probation", "version", v.n, "batches", probationBatches, "trapped_share", share)
		s.mu.Lock()
		old := s.good
		s.good = v
		s.mu.Unlock()
		if old != nil && old.plug != v.plug {
			s.refs.retire(context.Background(), old.plug) // closed when its last instance swaps
		}
		return
	}
	go s.rollback(v, share)
}

// rollback puts back the last good version after v failed probation.
func (s *pluginSlot) rollback(v *pluginVersion, share float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur.Load() != v {
		return // replaced meanwhile
	}
	err := fmt.Errorf("version %d trapped on %.0f%% of the records of its first %d batches", v.n, share*100, probationBatches)
	s.state.LastError = err.Error()
	s.log.Error("plugin version rolled back", "version", v.n, "back_to", s.good.n, "error", err)
	// Counted once the good version is live again, so that whoever sees
	// the count sees the rollback done.
	defer s.stats.rollbacks.Add(1)
	ctx := context.Background()
	back := &pluginVersion{n: s.good.n, plug: s.good.plug, hash: s.good.hash, loaded: time.Now(), ready: make(chan *wasm.Worker, s.instances())}
	back.settled.Store(true)
	for range s.instances() {
		w, err := back.plug.NewWorker(ctx)
		if err != nil {
			break // the instances that find no ready worker make their own
		}
		back.ready <- w
	}
	s.publish(back)
	s.refs.retire(ctx, v.plug) // closed once its instances have swapped away
}

// status returns the slot's live state.
func (s *pluginSlot) status() PluginStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state
	st.Reloads, st.Failures, st.Rollbacks = s.stats.reloads.Load(), s.stats.failures.Load(), s.stats.rollbacks.Load()
	if sr := s.shadow.Load(); sr != nil {
		st.Shadow = sr.status()
	}
	return st
}

// close releases the live version's plugin (and a good one kept for
// rollback). Workers are closed by their operators.
func (s *pluginSlot) close(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.cur.Load()
	if v.ready != nil {
		for {
			select {
			case w := <-v.ready:
				w.Close(ctx)
				continue
			default:
			}
			break
		}
	}
	v.plug.Close(ctx)
	if s.good != nil && s.good.plug != v.plug {
		s.good.plug.Close(ctx)
	}
	if sr := s.shadow.Load(); sr != nil {
		sr.plug.Close(ctx)
	}
}

// ErrNoSuchPlugin is returned by ReloadPlugins for an operator that runs no
// plugin.
var ErrNoSuchPlugin = errors.New("no plugin operator of that name")

// ReloadPlugins reloads the plugin of the named operator, or of every
// plugin operator when operator is "": each is built (Go source), compiled,
// checked and initialised, and swapped in between batches if it changed.
// A plugin that fails to load leaves its live version running; the errors
// are returned joined. It is safe to call while the pipeline runs, from
// any goroutine.
func (p *Pipeline) ReloadPlugins(ctx context.Context, operator string) error {
	var errs []error
	found := false
	for _, s := range p.slots {
		if s == nil || (operator != "" && s.op.Name != operator) {
			continue
		}
		found = true
		if err := s.reload(ctx); err != nil {
			errs = append(errs, fmt.Errorf("operator %q: %w", s.op.Name, err))
		}
	}
	if !found && operator != "" {
		return fmt.Errorf("%w: %q", ErrNoSuchPlugin, operator)
	}
	return errors.Join(errs...)
}

// Plugins returns the live version of every plugin operator.
func (p *Pipeline) Plugins() []PluginStatus {
	var out []PluginStatus
	for _, s := range p.slots {
		if s != nil {
			out = append(out, s.status())
		}
	}
	return out
}
