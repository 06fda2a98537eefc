package host

import "github.com/weir-stream/weir/host/internal/engine"

var eventTimeFormats = map[string]engine.TimeFormat{
	"epoch_ms": engine.TimeEpochMillis, "epoch_s": engine.TimeEpochSeconds, "rfc3339": engine.TimeRFC3339, "sql": engine.TimeSQL,
}

// processingTime reports whether the pipeline runs on processing time: no
// source says where event time comes from. Windows then assign records by
// when they are processed, whatever their timestamps (a Kafka record's is
// when it was written).
func (p *Pipeline) processingTime() bool {
	for _, s := range p.cfg.Sources {
		if s.EventTime != nil {
			return false
		}
	}
	return true
}

// eventTimes returns the engine's event-time settings, per source.
func (p *Pipeline) eventTimes() []*engine.EventTime {
	ets := make([]*engine.EventTime, len(p.cfg.Sources))
	for i, s := range p.cfg.Sources {
		if et := s.EventTime; et != nil {
			ets[i] = &engine.EventTime{Field: et.Path, Format: eventTimeFormats[et.Format],
				MaxOutOfOrderness: et.MaxOutOfOrderness, IdleTimeout: et.IdleTimeout, IdleAdvance: et.IdleAdvance}
		}
	}
	return ets
}
