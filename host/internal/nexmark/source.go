package nexmark

import (
	"context"
	"time"

	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/record"
)

// SourceConfig configures a Nexmark source.
type SourceConfig struct {
	Config
	// Count is the number of events of the whole stream, persons, auctions
	// and bids (numbers 0 … Count−1); 0 means no end.
	Count int64
	// Kinds selects the kinds the source emits; 0 means all. Events of the
	// other kinds are skipped without being made, and keep their numbers,
	// so a bid is the same bid whatever the filter.
	Kinds Kind
	// Rate throttles the source to this many events per second of the
	// whole stream (skipped kinds included); 0 means as fast as the
	// pipeline takes them.
	Rate float64
	// WallClock stamps each record with the wall-clock time its batch was
	// started, for processing-time pipelines, instead of its dateTime.
	WallClock bool
	// Linger bounds how long a partly filled batch waits when Rate
	// throttles the source.
	Linger time.Duration
}

type source struct {
	name string
	cfg  SourceConfig
}

// NewSource returns an engine source of Nexmark events, as JSON, each
// record's Timestamp its dateTime (or the wall clock, with WallClock), its
// Origin offset its event number.
func NewSource(name string, cfg SourceConfig) engine.Source {
	if cfg.Kinds == 0 {
		cfg.Kinds = AllKinds
	}
	return &source{name: name, cfg: cfg}
}

func (s *source) Name() string { return s.name }

// Replayable implements engine.Replayable: event n is the same on every run.
func (s *source) Replayable() bool { return true }

// Run implements engine.Source.
func (s *source) Run(ctx context.Context, out *engine.Out) error {
	cfg := s.cfg
	g := NewGenerator(cfg.Config)
	var (
		buf     []byte
		pace    = engine.NewPacer(cfg.Rate, cfg.Linger, time.Now)
		stopped = ctx.Done()
		now     int64
	)
	for n := int64(0); cfg.Count == 0 || n < cfg.Count; n++ {
		if cfg.Kinds&KindOf(n) == 0 {
			continue
		}
		select {
		case <-stopped:
			return out.Flush()
		default:
		}
		if cfg.WallClock && out.Pending() == 0 {
			now = time.Now().UnixMilli()
		}
		if stop, err := pace.Wait(ctx, out, n); stop || err != nil {
			return err
		}
		if out.Pending() == 0 {
			pace.BatchStarted(time.Now())
		}
		var ts int64
		buf, _, ts = g.AppendEvent(buf[:0], n)
		if cfg.WallClock {
			ts = now
		}
		if err := out.Add(record.Record{Value: buf, Timestamp: ts, Origin: record.Origin{Partition: -1, Offset: n}}); err != nil {
			return err
		}
	}
	return out.Flush()
}
