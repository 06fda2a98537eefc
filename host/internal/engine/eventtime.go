package engine

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/weir-stream/weir/abi/wjson"
	"github.com/weir-stream/weir/host/internal/record"
)

// TimeFormat is how an event-time field is written; a plain value.
type TimeFormat int

const (
	TimeEpochMillis  TimeFormat = iota // a JSON number of milliseconds since the epoch
	TimeEpochSeconds                   // a JSON number of seconds (fractions allowed)
	TimeRFC3339                        // a JSON string, RFC 3339
	TimeSQL                            // a JSON string "yyyy-MM-dd HH:mm:ss[.fff]", UTC
)

// EventTime makes a source's records carry event time and its watermarks
// follow the bounded-out-of-orderness strategy: a partition's watermark is
// the highest event time it has shown minus MaxOutOfOrderness. During a run
// it is read by its source's goroutine and the dispatcher, and must not
// change while Run runs.
type EventTime struct {
	// Field is the JSON path of the event time in each value; nil uses the
	// record's own timestamp (a Kafka record's, or a generator's).
	Field  []string
	Format TimeFormat
	// MaxOutOfOrderness is how far behind the highest event time seen a
	// record may still arrive on time.
	MaxOutOfOrderness time.Duration
	// IdleTimeout excludes a partition that has sent nothing for this long
	// from the watermark, so a quiet partition does not hold it back; 0
	// never excludes.
	IdleTimeout time.Duration
	// IdleAdvance, when every partition of the source is idle, advances the
	// watermark with the wall clock, so windows on quiet streams still close
	// (as Kafka Streams users asked in KIP-424).
	IdleAdvance bool
}

// stamp sets rec's timestamp from its event-time field.
func (et *EventTime) stamp(rec *record.Record) error {
	if et == nil || et.Field == nil {
		return nil
	}
	v, err := wjson.Get(rec.Value, et.Field...)
	if err != nil {
		return fmt.Errorf("event time: value is not JSON: %v", err)
	}
	if !v.Exists() {
		return errors.New("event time: field not found")
	}
	ms, err := parseTime(v, et.Format)
	if err != nil {
		return fmt.Errorf("event time: %v", err)
	}
	rec.Timestamp = ms
	return nil
}

func parseTime(v wjson.Value, f TimeFormat) (int64, error) {
	switch f {
	case TimeEpochMillis, TimeEpochSeconds:
		x, err := v.Float()
		if err != nil {
			return 0, fmt.Errorf("want a number, got %s", v.Kind)
		}
		if f == TimeEpochSeconds {
			x *= 1000
		}
		if math.IsNaN(x) || x > math.MaxInt64/2 || x < math.MinInt64/2 {
			return 0, fmt.Errorf("%v is out of range", x)
		}
		return int64(math.Floor(x)), nil
	case TimeRFC3339, TimeSQL:
		if v.Kind != wjson.String {
			return 0, fmt.Errorf("want a string, got %s", v.Kind)
		}
		s := v.String()
		layout := time.RFC3339Nano
		if f == TimeSQL {
			layout = "2006-01-02 15:04:05.999999999"
		}
		t, err := time.Parse(layout, s)
		if err != nil {
			return 0, fmt.Errorf("%s is not a %s time", strconv.Quote(s), map[TimeFormat]string{TimeRFC3339: "RFC 3339", TimeSQL: "yyyy-MM-dd HH:mm:ss"}[f])
		}
		return t.UnixMilli(), nil
	}
	return 0, fmt.Errorf("unknown time format %d", f)
}

// watermarks computes the pipeline's watermark from what the sources have
// shown. It is used by the dispatcher goroutine only.
type watermarks struct {
	sources []*sourceTime
	now     func() time.Time
}

type sourceTime struct {
	et    *EventTime // nil: processing time, the wall clock is the watermark
	parts map[partKey]*partTime
	// maxSeen and lastSeen are over all partitions, for IdleAdvance.
	maxSeen  int64
	lastSeen time.Time
	held     int64 // the last watermark given, which never goes back
}

type partKey struct {
	topic     string
	partition int32
}

type partTime struct {
	max      int64
	lastSeen time.Time
}

func newWatermarks(ets []*EventTime, sources int, now func() time.Time) *watermarks {
	w := &watermarks{now: now}
	for i := range sources {
		var et *EventTime
		if i < len(ets) {
			et = ets[i]
		}
		w.sources = append(w.sources, &sourceTime{et: et, parts: map[partKey]*partTime{}, maxSeen: NoWatermark, held: NoWatermark})
	}
	return w
}

// announce notes partitions source i began to read, which hold the
// watermark back until they show a record or go idle.
func (w *watermarks) announce(i int, parts []partKey) {
	s := w.sources[i]
	if s.et == nil {
		return
	}
	now := w.now()
	for _, k := range parts {
		if s.parts[k] == nil {
			s.parts[k] = &partTime{max: NoWatermark, lastSeen: now}
		}
	}
}

// observe notes the event times of a batch from source i.
func (w *watermarks) observe(i int, recs []record.Record) {
	s := w.sources[i]
	if s.et == nil || len(recs) == 0 {
		return
	}
	now := w.now()
	var p *partTime
	var last partKey
	for j := range recs {
		r := &recs[j]
		k := partKey{r.Origin.Topic, r.Origin.Partition}
		if p == nil || k != last {
			if p = s.parts[k]; p == nil {
				p = &partTime{max: NoWatermark}
				s.parts[k] = p
			}
			last = k
		}
		p.max = max(p.max, r.Timestamp)
		p.lastSeen = now
		s.maxSeen = max(s.maxSeen, r.Timestamp)
	}
	s.lastSeen = now
}

// current returns the pipeline watermark: the least over sources.
func (w *watermarks) current() int64 {
	now := w.now()
	wm := int64(math.MaxInt64)
	for _, s := range w.sources {
		wm = min(wm, s.watermark(now))
	}
	return wm
}

func (s *sourceTime) watermark(now time.Time) int64 {
	if s.et == nil {
		return now.UnixMilli() - 1
	}
	ooo := s.et.MaxOutOfOrderness.Milliseconds()
	wm, active := int64(math.MaxInt64), false
	for _, p := range s.parts {
		if s.et.IdleTimeout > 0 && now.Sub(p.lastSeen) >= s.et.IdleTimeout {
			continue
		}
		active = true
		if p.max == NoWatermark {
			wm = NoWatermark // announced, and nothing shown yet
			continue
		}
		wm = min(wm, p.max-ooo)
	}
	switch {
	case active:
	case len(s.parts) > 0 && s.et.IdleAdvance:
		// Every partition is idle: let event time pass as the wall clock
		// does from the moment the input went quiet.
		wm = s.maxSeen - ooo + now.Sub(s.lastSeen).Milliseconds()
	default:
		wm = s.held
	}
	s.held = max(s.held, wm)
	return s.held
}
