package engine

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
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
// shown, and, for each repartition, the watermark of the part of the
// chain after it from what its topic's partitions were promised. It is
// used by the dispatcher goroutine only.
type watermarks struct {
	// sources holds the tracking of each source, then of each
	// repartition topic (topics, in order).
	sources []*sourceTime
	nsrc    int
	topics  []string
	now     func() time.Time
}

// partPromise is an event time a partition of a repartition topic
// reached (Out.PartitionTime).
type partPromise struct {
	k partKey
	t int64
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
	offset   int64 // of the last record seen
}

func newWatermarks(ets []*EventTime, sources int, topics []string, now func() time.Time) *watermarks {
	w := &watermarks{now: now, nsrc: sources, topics: topics}
	for i := range sources + len(topics) {
		var et *EventTime
		switch {
		case i >= sources:
			et = &EventTime{} // a repartition topic: its partitions' promises, as they are
		case i < len(ets):
			et = ets[i]
		}
		w.sources = append(w.sources, &sourceTime{et: et, parts: map[partKey]*partTime{}, maxSeen: NoWatermark, held: NoWatermark})
	}
	return w
}

// tracking returns the event-time tracking a partition of topic belongs
// to, read by source i: its repartition topic's, or the source's.
func (w *watermarks) tracking(i int, topic string) *sourceTime {
	for j, t := range w.topics {
		if t == topic {
			return w.sources[w.nsrc+j]
		}
	}
	return w.sources[i]
}

// partAnnounce is a partition a source began to read, and the watermark
// it is known to be at (Out.AnnounceFrom), or NoWatermark.
type partAnnounce struct {
	k  partKey
	wm int64
}

// announce notes partitions source i began to read, which hold the
// watermark back until they show a record or go idle (or, of a
// repartition topic, until they are promised an event time); one
// announced at a known watermark holds it at that.
func (w *watermarks) announce(i int, parts []partAnnounce) {
	now := w.now()
	for _, a := range parts {
		s := w.tracking(i, a.k.topic)
		if s.et == nil {
			continue
		}
		p := s.parts[a.k]
		if p == nil {
			p = &partTime{max: NoWatermark, lastSeen: now}
			s.parts[a.k] = p
		}
		if ooo := s.et.MaxOutOfOrderness.Milliseconds(); a.wm != NoWatermark && a.wm <= math.MaxInt64-ooo {
			p.max = max(p.max, a.wm+ooo) // the partition's watermark is max - ooo
		}
	}
}

// promise notes the event times partitions of repartition topics reached.
func (w *watermarks) promise(ps []partPromise) {
	if len(ps) == 0 {
		return
	}
	now := w.now()
	for _, pp := range ps {
		s := w.tracking(-1, pp.k.topic)
		p := s.parts[pp.k]
		if p == nil {
			p = &partTime{max: NoWatermark}
			s.parts[pp.k] = p
		}
		p.max = max(p.max, pp.t)
		p.lastSeen = now
		s.maxSeen = max(s.maxSeen, pp.t)
		s.lastSeen = now
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
		p.offset = r.Origin.Offset
		s.maxSeen = max(s.maxSeen, r.Timestamp)
	}
	s.lastSeen = now
}

// current returns the pipeline watermark: the least over sources. With
// repartitions, a partition that has shown nothing yet does not hold it
// back: the part of the chain before a repartition keeps no event-time
// state, and what this instance promises the repartition's readers is
// each input partition's own watermark (partitions), of the partitions
// it has read; a partition's last owner's promise stands until then.
func (w *watermarks) current() int64 {
	now := w.now()
	skip := len(w.topics) > 0
	wm := int64(math.MaxInt64)
	for _, s := range w.sources[:w.nsrc] {
		wm = min(wm, s.watermark(now, skip))
	}
	return wm
}

// repartition returns the watermark after repartition j: the least event
// time its topic's partitions were promised.
func (w *watermarks) repartition(j int) int64 {
	return w.sources[w.nsrc+j].watermark(w.now(), false)
}

// PartitionWatermark is how far one partition of a source's input has
// been read in event time: no record at or before WM follows in it,
// except late ones. Idle says it has sent nothing for its source's
// IdleTimeout, and holds no watermark back until it sends again. It is
// plain data.
type PartitionWatermark struct {
	Topic     string
	Partition int32
	WM        int64
	Idle      bool
}

// inputTimes is the dispatcher's snapshot of the sources' partition
// watermarks (partitions), shared read-only by the pieces that carry it.
type inputTimes struct{ parts []PartitionWatermark }

// partitions returns the watermark of every partition of the sources
// (not of repartition topics) that has shown a record, sorted, or prev
// when that is unchanged.
func (w *watermarks) partitions(prev *inputTimes) *inputTimes {
	var out []PartitionWatermark
	now := w.now()
	for _, s := range w.sources[:w.nsrc] {
		if s.et == nil {
			continue
		}
		ooo := s.et.MaxOutOfOrderness.Milliseconds()
		for k, p := range s.parts {
			if p.max != NoWatermark {
				idle := s.et.IdleTimeout > 0 && now.Sub(p.lastSeen) >= s.et.IdleTimeout
				out = append(out, PartitionWatermark{Topic: k.topic, Partition: k.partition, WM: p.max - ooo, Idle: idle})
			}
		}
	}
	slices.SortFunc(out, func(a, b PartitionWatermark) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	if prev != nil && slices.Equal(prev.parts, out) {
		return prev
	}
	return &inputTimes{parts: out}
}

// watermark returns the source's watermark now; skipUnshown leaves out
// the partitions announced that have shown nothing, which otherwise hold
// it back.
func (s *sourceTime) watermark(now time.Time, skipUnshown bool) int64 {
	if s.et == nil {
		return now.UnixMilli() - 1
	}
	ooo := s.et.MaxOutOfOrderness.Milliseconds()
	wm, active := int64(math.MaxInt64), false
	for _, p := range s.parts {
		if s.et.IdleTimeout > 0 && now.Sub(p.lastSeen) >= s.et.IdleTimeout {
			continue
		}
		if p.max == NoWatermark && skipUnshown {
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
