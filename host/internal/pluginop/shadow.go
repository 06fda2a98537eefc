package pluginop

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/host/internal/wasm"
	"github.com/weir-stream/weir/state"
)

// Shadow mode.
//
// An operator with `shadow: PATH` runs a candidate plugin beside its live
// one: each batch goes through the candidate, then through the live
// version, and the two outputs are compared; the candidate's are then
// dropped. The candidate reads the operator's state, as it was before the
// batch, under a layer of its own writes kept in memory (shadowStore), so
// it can never change what the live version sees, and it doubles the
// operator's plugin work while it runs. Divergences are counted, and the first few kept
// as samples, for the admin API and metrics. Promote swaps the candidate
// in as the live version (as a reload does, with the operator's real
// state) and ends the shadow run.

// maxShadowSamples bounds the divergence samples kept.
const maxShadowSamples = 10

// shadowRun is a candidate plugin running in shadow of a slot's live
// version.
type shadowRun struct {
	path    string
	plug    *wasm.Plugin
	hash    string
	started time.Time
	// Comparison counters, over every instance.
	records, diverged, batches, failed atomic.Int64
	mu                                 sync.Mutex
	samples                            []DivergenceSample
}

// ShadowStatus describes a shadow run, for the admin API. It is a plain
// value.
type ShadowStatus struct {
	Path    string    `json:"path"`
	SHA256  string    `json:"sha256"`
	Started time.Time `json:"started"`
	// Records the candidate was given; Diverged, of their outputs, how
	// many differed from the live version's (or were rejected or trapped
	// by one side only); Failed, candidate batch calls that failed.
	Records  int64              `json:"records"`
	Diverged int64              `json:"diverged"`
	Failed   int64              `json:"failed_batches"`
	Samples  []DivergenceSample `json:"samples,omitempty"`
}

// DivergenceSample is one output where live and candidate differed.
type DivergenceSample struct {
	Input     string `json:"input,omitempty"`
	Live      string `json:"live"`
	Candidate string `json:"candidate"`
}

func (sr *shadowRun) status() *ShadowStatus {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	return &ShadowStatus{Path: sr.path, SHA256: sr.hash, Started: sr.started, Records: sr.records.Load(),
		Diverged: sr.diverged.Load(), Failed: sr.failed.Load(), Samples: append([]DivergenceSample(nil), sr.samples...)}
}

// startShadow loads the candidate at path for slot s.
func (s *Operator) startShadow(ctx context.Context, path string) error {
	plug, hash, err := s.env.Plugins.Load(ctx, s.op, path, &shadowStore{base: s.env.Store, own: map[string]shadowEntry{}}, false)
	if err != nil {
		return fmt.Errorf("shadow %s: %w", path, err)
	}
	s.shadow.Store(&shadowRun{path: path, plug: plug, hash: hash, started: time.Now()})
	s.log.Info("shadow plugin running beside the live one", "shadow", path, "sha256", hash)
	return nil
}

// promote makes the shadow candidate the live version, loaded anew with
// the operator's real state, and ends the shadow run.
func (s *Operator) promote(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sr := s.shadow.Load()
	if sr == nil {
		return fmt.Errorf("operator %q has no shadow plugin to promote", s.op.Name)
	}
	plug, hash, err := s.env.Plugins.Load(ctx, s.op, sr.path, s.env.Store, true)
	if err != nil {
		return fmt.Errorf("promoting %s: %w", sr.path, err)
	}
	v, err := s.prepare(ctx, plug, hash, s.next)
	if err != nil {
		return fmt.Errorf("promoting %s: %w", sr.path, err)
	}
	s.next++
	s.stats.reloads.Add(1)
	s.state.Path = sr.path
	s.shadow.Store(nil)
	s.publish(v)
	s.log.Info("shadow plugin promoted", "version", v.n, "sha256", hash, "diverged", sr.diverged.Load(), "of", sr.records.Load())
	s.refs.retire(ctx, sr.plug) // closed once its instances have noticed
	return nil
}

// shadowOperator is an operator instance's side of a shadow run.
type shadowOperator struct {
	run *shadowRun
	w   *wasm.Worker
	out record.Output
}

// runShadow runs the candidate, if any, on in, before the live version
// does, so that both read the state as it was before the batch. It
// reports whether compare should follow.
func (o *instance) runShadow(ctx context.Context, in []record.Record) bool {
	sr := o.slot.shadow.Load()
	if sr == nil {
		o.closeShadow(ctx)
		return false
	}
	if o.sh.run != sr {
		o.closeShadow(ctx)
		w, err := sr.plug.NewWorker(ctx)
		if err != nil {
			sr.failed.Add(1)
			return false
		}
		o.slot.refs.acquire(sr.plug)
		o.sh = shadowOperator{run: sr, w: w}
	}
	o.sh.out.Reset()
	sr.batches.Add(1)
	sr.records.Add(int64(len(in)))
	// The candidate must never hold up the live version for long: the
	// whole batch, re-runs included, gets one deadline, and a candidate
	// that runs past it is stopped.
	sctx, cancel := context.WithTimeout(ctx, o.slot.shadowBudget())
	err := o.sh.w.Process(sctx, in, &o.sh.out)
	overran := sctx.Err() != nil && ctx.Err() == nil
	cancel()
	if err != nil {
		sr.failed.Add(1)
		sr.diverged.Add(int64(len(in)))
		if overran {
			o.slot.stopShadow(sr, fmt.Sprintf("shadow %s stopped: a batch ran past %s", sr.path, o.slot.shadowBudget()))
		}
		return false
	}
	return true
}

// shadowBudget is the time a shadow candidate may take over one batch:
// the operator's timeout.
func (s *Operator) shadowBudget() time.Duration {
	if t := s.op.Timeout; t > 0 {
		return t
	}
	if s.op.Timeout == 0 {
		return wasm.DefaultTimeout
	}
	return 24 * time.Hour // timeout: none
}

// stopShadow ends the shadow run sr, if it is still the slot's, saying
// why in the plugin's status; each instance closes its candidate at its
// next batch.
func (s *Operator) stopShadow(sr *shadowRun, why string) {
	if !s.shadow.CompareAndSwap(sr, nil) {
		return
	}
	s.mu.Lock()
	s.state.LastError = why
	s.mu.Unlock()
	s.log.Error("shadow plugin stopped; the live version goes on alone", "reason", why)
	s.refs.retire(context.Background(), sr.plug)
}

// closeShadow closes the instance's shadow worker, if any.
func (o *instance) closeShadow(ctx context.Context) {
	if o.sh.w != nil {
		o.sh.w.Close(ctx)
		o.slot.refs.release(ctx, o.sh.run.plug)
	}
	o.sh = shadowOperator{}
}

// compareShadow compares the candidate's output of in with the live
// version's: out.Records[start:] and out.Dead[deadStart:].
func (o *instance) compareShadow(in []record.Record, out *record.Output, start, deadStart int) {
	sr := o.sh.run
	live, cand := out.Records[start:], o.sh.out.Records
	n := max(len(live), len(cand))
	diverged := 0
	for i := range n {
		var l, c *record.Record
		if i < len(live) {
			l = &live[i]
		}
		if i < len(cand) {
			c = &cand[i]
		}
		if l != nil && c != nil && bytes.Equal(l.Value, c.Value) && bytes.Equal(l.Key, c.Key) {
			continue
		}
		diverged++
		sr.mu.Lock()
		if len(sr.samples) < maxShadowSamples {
			smp := DivergenceSample{Live: "(none)", Candidate: "(none)"}
			if l != nil {
				smp.Live = string(l.Value)
			}
			if c != nil {
				smp.Candidate = string(c.Value)
			}
			if len(live) == len(in) && i < len(in) {
				smp.Input = string(in[i].Value) // a map: outputs line up with inputs
			}
			sr.samples = append(sr.samples, smp)
		}
		sr.mu.Unlock()
	}
	if d := len(out.Dead) - deadStart - len(o.sh.out.Dead); d != 0 {
		diverged += max(d, -d)
	}
	sr.diverged.Add(int64(diverged))
}

// shadowStore is a candidate's view of the operator's state: the live
// store's values under a layer of the candidate's own writes, in memory.
type shadowStore struct {
	base state.Store
	mu   sync.RWMutex
	own  map[string]shadowEntry
}

type shadowEntry struct {
	val []byte
	del bool
}

// Get implements state.Store.
func (s *shadowStore) Get(key []byte) ([]byte, bool, error) {
	s.mu.RLock()
	e, ok := s.own[string(key)]
	s.mu.RUnlock()
	if ok {
		return e.val, !e.del, nil
	}
	return s.base.Get(key)
}

// Apply implements state.Store: the writes stay in the layer.
func (s *shadowStore) Apply(muts []state.Mutation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range muts {
		s.own[string(m.Key)] = shadowEntry{val: bytes.Clone(m.Value), del: m.Delete}
	}
	return nil
}
