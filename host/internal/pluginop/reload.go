package pluginop

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/operator"
	"github.com/weir-stream/weir/host/internal/wasm"
)

// Hot reload.
//
// Each map, flat_map and filter operator is an Operator holding its live
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
// (over all instances). What counts against it is every record it
// dead-lettered: records the guest rejected with an error (the Go SDK
// reports a panic that way), records it trapped on, timed out on or
// answered with invalid output. Languages differ in which of these a bug
// becomes (a Go panic is a rejection, a Rust panic a trap), so probation
// judges outcomes, not the way a plugin failed. If the share of failed
// records is above rollbackThreshold of the previous version's share, the
// previous version (kept loaded until then) is put back, the same way.
// Failed records go to the dead-letter output, as always.
const probationBatches = 10

// Rollback thresholds; see rollbackThreshold.
const (
	minRollbackShare = 0.5
	rollbackMargin   = 0.25
)

// rollbackThreshold is the failure share above which a version on
// probation is rolled back, given baseline, the share of its records the
// previous version failed on: max(0.5, min(baseline+0.25, (1+baseline)/2)).
//
// The floor of one half keeps a version that still processes most of its
// records: plugins that validate reject records as a business outcome, and
// a stricter rule, deployed on purpose, rejects more; ten batches are also
// too few to tell a few more rejections from noise. Above the floor, the
// bar follows the previous version, so that on a stream where it already
// rejected 60% (a validator on dirty data) a new version rejecting 70% is
// kept, while one failing on nearly everything is not: the bar is a
// quarter of the records above the baseline, but never more than half way
// from the baseline to every record, so that a version that fails on every
// record is rolled back whenever the previous one got any through (at a
// baseline of 0.9 the bar is 0.95, not 1.15). Baseline 0 gives 0.5, the
// rule before baselines; 0.3 gives 0.55; 0.6 gives 0.8.
func rollbackThreshold(baseline float64) float64 {
	return max(minRollbackShare, min(baseline+rollbackMargin, (1+baseline)/2))
}

// Operator is one map, flat_map or filter operator of a loaded pipeline,
// holding its plugin's live version, from Load to Close. Its methods are
// safe for concurrent use; reloads, rollbacks and promotions are
// serialised.
type Operator struct {
	env operator.Env
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
func (s *Operator) livePath() string {
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
	// mark is the operator's counts when the version went live, and
	// baseline the failure share of the version it was compared with on
	// probation; publish sets both before it publishes the version.
	mark     stageMark
	baseline float64
	// Probation counters, over every instance: batches, records given,
	// records dead-lettered (rejected, trapped, timed out, over a limit).
	batches, records, failed atomic.Int64
	settled                  atomic.Bool
	// done is closed when the version's probation ends: it passed, was
	// rolled back, or was replaced by a newer version first. verdict, set
	// before, says which; whoever sets settled owns both.
	done    chan struct{}
	verdict probationVerdict
}

// probationVerdict is how a version's probation ended.
type probationVerdict struct {
	outcome ReloadOutcome // ReloadSwapped, ReloadRolledBack or ReloadReplaced
	reason  string        // why it was rolled back
	report  ProbationReport
}

// probation reports v's probation so far.
func (v *pluginVersion) probation() ProbationReport {
	r := ProbationReport{Batches: min(v.batches.Load(), probationBatches), Of: probationBatches,
		Records: v.records.Load(), Baseline: v.baseline}
	r.Failed = min(v.failed.Load(), r.Records)
	if r.Records > 0 {
		r.FailedShare = float64(r.Failed) / float64(r.Records)
	}
	r.Threshold = rollbackThreshold(v.baseline)
	return r
}

// stageMark is an operator's counts in one run at some moment.
type stageMark struct {
	run      any // the run's identity; nil before the first run
	in, dead int64
}

// mark returns the operator's counts now.
func (s *Operator) mark() stageMark {
	run, in, dead := s.env.Counts()
	return stageMark{run: run, in: in, dead: dead}
}

// failureShareSince returns the share of the operator's records that went
// to the dead-letter output since m (since the start of the current run,
// if m is of an earlier one), and false if it was given none.
func (s *Operator) failureShareSince(m stageMark) (float64, bool) {
	now := s.mark()
	if now.run != m.run {
		m = stageMark{}
	}
	in, dead := now.in-m.in, now.dead-m.dead
	if in <= 0 {
		return 0, false
	}
	return min(float64(dead)/float64(in), 1), true
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
	// Probation is the live version's probation so far, while it is on
	// probation.
	Probation *ProbationReport `json:"probation,omitempty"`
	// Shadow is the candidate running beside the live version, if any.
	Shadow *ShadowStatus `json:"shadow,omitempty"`
}

// ProbationReport is what a new version's first batches showed. It is a
// plain value.
type ProbationReport struct {
	// Batches counted so far, of the Of that probation lasts.
	Batches int64 `json:"batches"`
	Of      int   `json:"of"`
	// Records given to the version in them, and those it failed on:
	// rejected with an error, trapped or timed out on.
	Records     int64   `json:"records"`
	Failed      int64   `json:"failed"`
	FailedShare float64 `json:"failed_share"`
	// Baseline is the previous version's failure share, and Threshold the
	// failure share above which the version is rolled back.
	Baseline  float64 `json:"baseline_share"`
	Threshold float64 `json:"threshold_share"`
}

// ReloadOutcome is what a reload did to one plugin operator. It is a plain
// value.
type ReloadOutcome string

// Reload outcomes.
const (
	// ReloadSwapped: the new version is live and passed its probation.
	ReloadSwapped ReloadOutcome = "swapped"
	// ReloadProbation: the new version is live, its probation not over.
	ReloadProbation ReloadOutcome = "on_probation"
	// ReloadRolledBack: the new version failed its probation; the
	// previous one runs again.
	ReloadRolledBack ReloadOutcome = "rolled_back"
	// ReloadReplaced: another reload or a promotion replaced the new
	// version before its probation ended.
	ReloadReplaced ReloadOutcome = "replaced"
	// ReloadRefused: the new version did not load; the live one goes on.
	ReloadRefused ReloadOutcome = "refused"
	// ReloadUnchanged: the module is the one running; nothing changed.
	ReloadUnchanged ReloadOutcome = "unchanged"
)

// ReloadResult is what a reload did to one plugin operator. It is a plain
// value.
type ReloadResult struct {
	Pipeline string        `json:"pipeline"`
	Operator string        `json:"operator"`
	Outcome  ReloadOutcome `json:"outcome"`
	// From is the version that ran before the reload, New the version it
	// loaded (0 when refused or unchanged), and Live the version running
	// when the result was made.
	From int `json:"from_version"`
	New  int `json:"new_version,omitempty"`
	Live int `json:"live_version"`
	// Reason says why the new version was refused or rolled back.
	Reason string `json:"reason,omitempty"`
	// Probation is the new version's probation, final or so far.
	Probation *ProbationReport `json:"probation,omitempty"`
}

// Failed reports whether the reload left the operator on its previous
// version because the new one was refused or rolled back.
func (r ReloadResult) Failed() bool {
	return r.Outcome == ReloadRefused || r.Outcome == ReloadRolledBack
}

// String describes the result in one line, "pipeline/operator: what
// happened".
func (r ReloadResult) String() string {
	s := r.Pipeline + "/" + r.Operator + ": "
	pr := r.Probation
	if pr == nil {
		pr = &ProbationReport{Of: probationBatches}
	}
	switch r.Outcome {
	case ReloadSwapped:
		return s + fmt.Sprintf("swapped to version %d (from %d), passed probation: %d of %d records failed in %d batches",
			r.New, r.From, pr.Failed, pr.Records, pr.Batches)
	case ReloadProbation:
		return s + fmt.Sprintf("swapped to version %d (from %d), on probation: %d of %d batches so far, %d of %d records failed",
			r.New, r.From, pr.Batches, pr.Of, pr.Failed, pr.Records)
	case ReloadRolledBack:
		return s + fmt.Sprintf("rolled back to version %d: %s", r.Live, r.Reason)
	case ReloadReplaced:
		return s + fmt.Sprintf("version %d was replaced by version %d before its probation ended", r.New, r.Live)
	case ReloadRefused:
		return s + fmt.Sprintf("refused, version %d goes on: %s", r.Live, r.Reason)
	case ReloadUnchanged:
		return s + fmt.Sprintf("unchanged: version %d runs this module already", r.Live)
	}
	return s + string(r.Outcome)
}

func newOperator(env operator.Env, op *config.Operator, plug *wasm.Plugin, hash string) *Operator {
	s := &Operator{env: env, op: op, log: env.Logger.With("operator", op.Name), next: 2, stats: &reloadCounters{}}
	v := &pluginVersion{n: 1, plug: plug, hash: hash, loaded: time.Now(), ready: make(chan *wasm.Worker, 1),
		done: make(chan struct{}), verdict: probationVerdict{outcome: ReloadSwapped}}
	v.settled.Store(true)
	close(v.done)
	s.cur.Store(v)
	s.good = v
	s.state = PluginStatus{Operator: op.Name, Path: op.Plugin, Version: 1, SHA256: hash, LoadedAt: v.loaded}
	return s
}

// instances is how many operator instances run the plugin.
func (s *Operator) instances() int { return max(s.env.Parallelism, 1) }

// Ticket is a reload's result for one operator and the version it
// published, if any, whose probation decides the final result.
type Ticket struct {
	slot *Operator
	res  ReloadResult
	v    *pluginVersion
	err  error // why the new version was refused
}

// Result returns t's result now: for a version it published, swapped or
// rolled back once its probation is over, on probation until then.
func (t *Ticket) Result() ReloadResult {
	r := t.res
	if t.v == nil {
		return r
	}
	var pr ProbationReport
	select {
	case <-t.v.done:
		r.Outcome, r.Reason, pr = t.v.verdict.outcome, t.v.verdict.reason, t.v.verdict.report
	default:
		pr = t.v.probation()
	}
	r.Probation = &pr
	r.Live = t.slot.cur.Load().n
	return r
}

// AwaitProbation waits until the probation of every version the tickets
// published is over, at most wait and no longer than ctx, and returns
// their results.
func AwaitProbation(ctx context.Context, wait time.Duration, tickets []Ticket) []ReloadResult {
	if wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
	waiting:
		for _, t := range tickets {
			if t.v == nil {
				continue
			}
			select {
			case <-t.v.done:
			case <-timer.C:
				break waiting
			case <-ctx.Done():
				break waiting
			}
		}
	}
	out := make([]ReloadResult, len(tickets))
	for i := range tickets {
		out[i] = tickets[i].Result()
	}
	return out
}

// reload loads the plugin's file or source folder again and, if it
// changed, swaps it in, on probation. The ticket tells what happened.
func (s *Operator) reload(ctx context.Context) Ticket {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.cur.Load()
	t := Ticket{slot: s, res: ReloadResult{Pipeline: s.env.Pipeline, Operator: s.op.Name, From: cur.n, Live: cur.n}}
	refuse := func(err error) Ticket {
		s.stats.failures.Add(1)
		s.state.LastError = err.Error()
		s.log.Error("plugin reload failed; the running version stays", "version", cur.n, "error", err)
		t.res.Outcome, t.res.Reason, t.err = ReloadRefused, err.Error(), err
		return t
	}
	plug, hash, err := s.env.Plugins.Load(ctx, s.op, s.state.Path, s.env.Store, true)
	if err != nil {
		return refuse(err)
	}
	if hash == cur.hash {
		plug.Close(ctx)
		s.log.Info("plugin unchanged; nothing to reload", "sha256", hash)
		t.res.Outcome = ReloadUnchanged
		return t
	}
	v, err := s.prepare(ctx, plug, hash, s.next)
	if err != nil {
		return refuse(err)
	}
	s.next++
	s.stats.reloads.Add(1)
	s.state.LastError = ""
	s.publish(v)
	s.log.Info("plugin reloaded; on probation", "version", v.n, "sha256", hash, "baseline_failed_share", v.baseline)
	t.v = v
	t.res.Outcome, t.res.New, t.res.Live = ReloadProbation, v.n, v.n
	return t
}

// prepare instantiates a version's workers, one per operator instance (the
// first is the one Load initialised).
func (s *Operator) prepare(ctx context.Context, plug *wasm.Plugin, hash string, n int) (*pluginVersion, error) {
	if s.unkeyed.Load() && plug.UsesState() {
		plug.Close(ctx)
		return nil, fmt.Errorf("the new version uses keyed state, but operator %q runs on %d workers with no key_by before it, "+
			"so one key's records reach several workers: put a key_by before it, or run with parallelism 1",
			s.op.Name, s.env.Parallelism)
	}
	if s.scaledOut.Load() && plug.UsesState() {
		plug.Close(ctx)
		return nil, fmt.Errorf("the new version uses keyed state, but the pipeline started without any: several instances may share " +
			"its consumer group, and it keeps no changelog; restart the pipeline to run this version (it then runs as one active instance)")
	}
	k := s.instances()
	v := &pluginVersion{n: n, plug: plug, hash: hash, loaded: time.Now(), ready: make(chan *wasm.Worker, k), done: make(chan struct{})}
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

// publish makes v the live version. Call with s.mu held. A version on
// probation takes as its baseline the failure share of the settled
// version it replaces, since that one went live (or, if that one saw no
// records, the baseline it inherited); replacing a version still on
// probation ends that probation, and the baseline stays the one it was
// compared with.
func (s *Operator) publish(v *pluginVersion) {
	old := s.cur.Load()
	if !v.settled.Load() {
		v.baseline = old.baseline
		if old.settled.Load() {
			if share, ok := s.failureShareSince(old.mark); ok {
				v.baseline = share
			}
		}
	}
	v.mark = s.mark()
	s.cur.Store(v)
	s.state.Version, s.state.SHA256, s.state.LoadedAt = v.n, v.hash, v.loaded
	s.state.Reloads, s.state.Failures, s.state.Rollbacks = s.stats.reloads.Load(), s.stats.failures.Load(), s.stats.rollbacks.Load()
	if old == v {
		return
	}
	ctx := context.Background()
	drainReady(ctx, old) // no instance swaps to it any more
	if old.settled.CompareAndSwap(false, true) {
		old.verdict = probationVerdict{outcome: ReloadReplaced, report: old.probation()}
		close(old.done)
		s.refs.retire(ctx, old.plug) // closed once its instances have swapped away
	}
}

// drainReady closes the workers v prepared that no instance took.
func drainReady(ctx context.Context, v *pluginVersion) {
	for {
		select {
		case w := <-v.ready:
			w.Close(ctx)
		default:
			return
		}
	}
}

// observe counts a batch of records a version processed during its
// probation, of which failed were dead-lettered (or could not start), and
// settles it
// after probationBatches. The judgement takes the slot's lock, which a
// reload holds while it builds, so it runs beside the batch.
func (s *Operator) observe(v *pluginVersion, records, failed int64) {
	v.records.Add(records)
	v.failed.Add(failed)
	if v.batches.Add(1) != probationBatches || !v.settled.CompareAndSwap(false, true) {
		return
	}
	go s.judge(v, v.probation())
}

// judge ends v's probation on its report: kept if its failure share is at
// most rollbackThreshold of its baseline, else rolled back to the last
// good version.
func (s *Operator) judge(v *pluginVersion, r ProbationReport) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx := context.Background()
	if cur := s.cur.Load(); cur != v {
		// Replaced after its last batch and before this: the newer version
		// is on probation against the last good one.
		v.verdict = probationVerdict{outcome: ReloadReplaced, report: r}
		close(v.done)
		s.refs.retire(ctx, v.plug)
		return
	}
	if r.FailedShare <= r.Threshold {
		s.log.Info("plugin version passed probation", "version", v.n, "batches", probationBatches,
			"failed_share", r.FailedShare, "baseline_failed_share", r.Baseline)
		old := s.good
		s.good = v
		if old != nil && old.plug != v.plug {
			s.refs.retire(ctx, old.plug) // closed when its last instance swaps
		}
		v.verdict = probationVerdict{outcome: ReloadSwapped, report: r}
		close(v.done)
		return
	}
	s.rollback(ctx, v, r)
}

// rollback puts back the last good version after v failed probation. Call
// with s.mu held.
func (s *Operator) rollback(ctx context.Context, v *pluginVersion, r ProbationReport) {
	err := fmt.Errorf("version %d failed on %.0f%% of the records of its first %d batches (%d of %d rejected, trapped or timed out), "+
		"above the %.0f%% allowed next to version %d's %.0f%%",
		v.n, r.FailedShare*100, r.Batches, r.Failed, r.Records, r.Threshold*100, s.good.n, r.Baseline*100)
	s.state.LastError = err.Error()
	s.log.Error("plugin version rolled back", "version", v.n, "back_to", s.good.n, "error", err)
	back := &pluginVersion{n: s.good.n, plug: s.good.plug, hash: s.good.hash, loaded: time.Now(),
		ready: make(chan *wasm.Worker, s.instances()), baseline: v.baseline, done: make(chan struct{})}
	back.settled.Store(true)
	close(back.done)
	for range s.instances() {
		w, err := back.plug.NewWorker(ctx)
		if err != nil {
			break // the instances that find no ready worker make their own
		}
		back.ready <- w
	}
	s.publish(back)
	s.refs.retire(ctx, v.plug) // closed once its instances have swapped away
	// Counted, and the verdict given, once the good version is live again,
	// so that whoever sees either sees the rollback done.
	s.stats.rollbacks.Add(1)
	v.verdict = probationVerdict{outcome: ReloadRolledBack, reason: err.Error(), report: r}
	close(v.done)
}

// status returns the slot's live state.
func (s *Operator) status() PluginStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state
	st.Reloads, st.Failures, st.Rollbacks = s.stats.reloads.Load(), s.stats.failures.Load(), s.stats.rollbacks.Load()
	if v := s.cur.Load(); !v.settled.Load() {
		pr := v.probation()
		st.Probation = &pr
	}
	if sr := s.shadow.Load(); sr != nil {
		st.Shadow = sr.status()
	}
	return st
}

// close releases the live version's plugin (and a good one kept for
// rollback). Workers are closed by their operators.
func (s *Operator) close(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.cur.Load()
	drainReady(ctx, v)
	v.plug.Close(ctx)
	if s.good != nil && s.good.plug != v.plug {
		s.good.plug.Close(ctx)
	}
	if sr := s.shadow.Load(); sr != nil {
		sr.plug.Close(ctx)
	}
}
