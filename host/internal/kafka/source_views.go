package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/weir-stream/weir/host/internal/engine"
)

// The Kafka sources of a pipeline that share a consumer group are read
// through one client, as Kafka Streams reads every source topic of an
// application through one consumer: one member of the group per
// instance, whose assignment covers all their topics, one transaction
// exactly once, one checkpoint position. Two clients in one group would
// be two members of one instance (the second seen as another instance by
// a pipeline with keyed state, and two static members with one instance
// id fencing each other). Each source stays a source of its own in the
// engine, with its name on its records, its format and its event time:
// the Source is the first, and a View each other (SourceConfig.Others).
// The Source's Run polls for all of them and hands each record to its
// own source's Out; a View's Run lends its Out to the Source and waits.

// ViewConfig is another source read through a Source's client
// (SourceConfig.Others): a plain value.
type ViewConfig struct {
	Name   string
	Topics []string
	Format Format
}

// sourceView is one of the sources a Source reads: its own (index 0) or
// a View's.
type sourceView struct {
	name   string
	topics []string
	format Format
}

// View is a source of the pipeline read through another Source's client
// (SourceConfig.Others): its records carry its name and are handed to
// its own Out, but the Source polls for it, commits its offsets and
// checkpoints its positions. The engine runs it as any source: Run once
// per run, on a goroutine of its own, which waits while the Source's Run
// uses the View's Out. It lives as long as its Source; Close does
// nothing. Its methods are safe as the Source's are.
type View struct {
	s *Source
	i int // index in s.views, from 1
}

var (
	_ engine.Source      = (*View)(nil)
	_ engine.Acker       = (*View)(nil)
	_ engine.Snapshotter = (*View)(nil)
)

// Views returns the engine sources of SourceConfig.Others, in order.
func (s *Source) Views() []*View {
	out := make([]*View, len(s.views)-1)
	for i := range out {
		out[i] = &View{s: s, i: i + 1}
	}
	return out
}

// Name implements engine.Source.
func (v *View) Name() string { return v.s.views[v.i].name }

// Run implements engine.Source: it lends out to the Source's Run, which
// hands it the records of the View's topics, and returns once that Run
// has ended.
func (v *View) Run(ctx context.Context, out *engine.Out) error {
	done := v.s.lend(v.i, out)
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	// The run stops: the Source's Run ends soon, unless it has not
	// taken the Out and so never will.
	if !v.s.unlend(v.i) {
		<-done
	}
	return nil
}

// Ack implements engine.Acker.
func (v *View) Ack(positions []engine.Position) { v.s.Ack(positions) }

// Snapshot implements engine.Snapshotter: the View's topics' positions.
func (v *View) Snapshot() (json.RawMessage, error) { return v.s.snapshot(v.i) }

// Restore implements engine.Snapshotter.
func (v *View) Restore(b json.RawMessage) error { return v.s.restoreView(v.i, b) }

// Lag returns the consumer lag of the View's topics (Source.Lag).
func (v *View) Lag() int64 { return v.s.lagOf(v.i) }

// Close does nothing: the Source closes the client.
func (v *View) Close() error { return nil }

// newViews returns the sources a Source reads: its own, then others'.
func newViews(cfg SourceConfig) ([]sourceView, error) {
	views := []sourceView{{name: cfg.Name, topics: cfg.Topics, format: cfg.Format}}
	for _, o := range cfg.Others {
		if o.Name == "" || len(o.Topics) == 0 {
			return nil, fmt.Errorf("another source read through the client needs a name and topics")
		}
		views = append(views, sourceView{name: o.Name, topics: o.Topics, format: o.Format})
	}
	for _, v := range views {
		if v.format != FormatJSON && v.format != FormatRaw {
			return nil, fmt.Errorf("source %q: unknown format %d", v.name, int(v.format))
		}
	}
	seen := map[string]string{}
	for _, v := range views {
		for _, t := range v.topics {
			if prev, dup := seen[t]; dup && t != "" {
				return nil, fmt.Errorf("topic %q is read by both %q and %q", t, prev, v.name)
			}
			seen[t] = v.name
		}
	}
	return views, nil
}

// viewOf returns the index of the source reading topic: 0 for the
// Source's own, and for the repartition topic, whose records its Run
// hands to its own Out whichever source they came from.
func (s *Source) viewOf(topic string) int {
	for i := 1; i < len(s.views); i++ {
		if slices.Contains(s.views[i].topics, topic) {
			return i
		}
	}
	return 0
}

// lend gives the Source's coming (or current) Run the Out of view i, and
// returns what is closed when that Run ends.
func (s *Source) lend(i int, out *engine.Out) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.viewsDone == nil {
		s.viewsDone = make(chan struct{})
	}
	s.viewOuts[i] = out
	select {
	case s.viewLent <- struct{}{}:
	default:
	}
	return s.viewsDone
}

// unlend takes view i's Out back, unless the Source's Run has taken it;
// it reports whether it did.
func (s *Source) unlend(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.viewsTaken {
		return false
	}
	s.viewOuts[i] = nil
	return true
}

// borrow waits until every View has lent its Out to this Run, and
// returns the Outs by view, out first; the Outs are the Run's until it
// ends (endViews).
func (s *Source) borrow(ctx context.Context, out *engine.Out) ([]*engine.Out, error) {
	for {
		s.mu.Lock()
		if s.viewsDone == nil {
			s.viewsDone = make(chan struct{})
		}
		outs := slices.Clone(s.viewOuts)
		outs[0] = out
		taken := !slices.Contains(outs, nil)
		s.viewsTaken = taken
		s.mu.Unlock()
		if taken {
			return outs, nil
		}
		select {
		case <-s.viewLent:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// endViews ends the Views' Runs with the Source's.
func (s *Source) endViews() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.viewOuts)
	s.viewsTaken = false
	if s.viewsDone == nil {
		s.viewsDone = make(chan struct{})
	}
	close(s.viewsDone)
	s.viewsDone = nil
}

// lagOf is Lag over the topics of view i.
func (s *Source) lagOf(i int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for tp, l := range s.lag {
		if p := s.parts[tp]; p != nil && p.owned && s.viewOf(tp.topic) == i && tp.topic != s.repartition {
			n += l
		}
	}
	return n
}
