package kafka

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// srcEnds tracks, for a bounded source, the partitions not yet read up to
// the end offset they had when Run began. A nil *srcEnds is an unbounded
// source: it is never done and read is a no-op. Only Run uses it.
type srcEnds struct {
	remaining map[srcTP]int64 // partition → its end offset (the next offset to be written)
}

func (e *srcEnds) read(tp srcTP, offset int64) {
	if e == nil {
		return
	}
	if end, ok := e.remaining[tp]; ok && offset+1 >= end {
		delete(e.remaining, tp)
	}
}

func (e *srcEnds) done() bool { return e != nil && len(e.remaining) == 0 }

// endOffsets snapshots the end offset of every partition the source reads
// and drops the partitions that have nothing to read before it: empty ones,
// and those whose starting point (the group's committed offset, else the
// start position) is already at the end.
func (s *Source) endOffsets(ctx context.Context) (*srcEnds, error) {
	adm := kadm.NewClient(s.cl)
	topics := s.topics
	if s.regex != "" {
		re := regexp.MustCompile(s.regex) // checked by NewSource
		all, err := adm.ListTopics(ctx)
		if err != nil {
			return nil, fmt.Errorf("kafka source %q: listing topics: %w", s.name, err)
		}
		for _, t := range all.Names() {
			if re.MatchString(t) {
				topics = append(topics, t)
			}
		}
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("kafka source %q: reading end offsets: %w", s.name, err)
	}
	if err := ends.Error(); err != nil {
		return nil, fmt.Errorf("kafka source %q: reading end offsets: %w", s.name, err)
	}
	// Where reading starts, per partition: the committed offset if the group
	// has one, else what the start position gives.
	var starts kadm.ListedOffsets
	switch s.start {
	case StartEarliest, StartCommitted:
		starts, err = adm.ListStartOffsets(ctx, topics...)
	case StartLatest:
		starts = ends
	case StartTimestamp:
		starts, err = adm.ListOffsetsAfterMilli(ctx, s.startMilli, topics...)
	}
	if err != nil {
		return nil, fmt.Errorf("kafka source %q: reading start offsets: %w", s.name, err)
	}
	committed, err := adm.FetchOffsetsForTopics(ctx, s.group, topics...)
	if errors.Is(err, kerr.GroupIDNotFound) {
		committed, err = nil, nil // a new group has committed nothing
	}
	if err != nil {
		return nil, fmt.Errorf("kafka source %q: reading committed offsets: %w", s.name, err)
	}
	e := &srcEnds{remaining: make(map[srcTP]int64)}
	ends.Each(func(o kadm.ListedOffset) {
		from := int64(0)
		if st, ok := starts.Lookup(o.Topic, o.Partition); ok {
			from = st.Offset
		}
		if c, ok := committed.Lookup(o.Topic, o.Partition); ok && c.Err == nil && c.At >= 0 {
			from = c.At
		}
		if from < o.Offset {
			e.remaining[srcTP{o.Topic, o.Partition}] = o.Offset
		}
	})
	return e, nil
}
