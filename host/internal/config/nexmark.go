package config

import (
	"fmt"
	"math"
	"time"
)

// A nexmark source generates the events of the Nexmark benchmark (people,
// auctions and bids, package host/internal/nexmark):
//
//	- name: events
//	  type: nexmark
//	  count: 1000000          # events of the whole stream, >= 0; 0 (default) = unbounded
//	  kinds: [bid]            # optional, non-empty, no duplicates: person | auction | bid; default all
//	  first_event_rate: 10000 # events per second of event time (spaces dateTime), > 0, default 10000
//	  base_time: 1436918400000  # dateTime of the first event, epoch ms, >= 1; default 2015-07-15T00:00:00Z
//	  rate: 0                 # throttle, events per second, >= 0; 0 (default) = unthrottled
//	  seed: 0                 # default 0: event n draws from java.util.Random(n), as the spec
//	  event_time: {field: dateTime}
//
// count and rate count every event of the stream, those that kinds skips
// included: the skipped events keep their numbers, so bid n is the same bid
// whatever kinds says.

// Nexmark defaults.
const (
	DefaultNexmarkFirstEventRate = 10000
	DefaultNexmarkBaseTime       = 1436918400000 // 2015-07-15T00:00:00Z
)

// Nexmark event kinds, as written in kinds.
const (
	NexmarkPerson  = "person"
	NexmarkAuction = "auction"
	NexmarkBid     = "bid"
)

var (
	nexmarkFields = []string{"name", "type", "count", "rate", "seed", "kinds", "first_event_rate", "base_time", "event_time"}
	nexmarkKinds  = []string{NexmarkPerson, NexmarkAuction, NexmarkBid}
)

// NexmarkSpec holds a nexmark source's own settings; Count, Rate and Seed
// are the Source's.
type NexmarkSpec struct {
	Kinds          []string // NexmarkPerson, NexmarkAuction, NexmarkBid; nil = all
	FirstEventRate float64  // > 0, default DefaultNexmarkFirstEventRate
	BaseTime       int64    // epoch ms, >= 1, default DefaultNexmarkBaseTime
}

func (d *decoder) nexmark(o *object, s *Source) {
	s.Nexmark = NexmarkSpec{FirstEventRate: DefaultNexmarkFirstEventRate, BaseTime: DefaultNexmarkBaseTime}
	d.countRateSeed(o, s)
	if v, st := o.float("first_event_rate"); st == good {
		// Above a rate of 1e9 events per second, events would share
		// microseconds; the spec's generator works in microseconds.
		if v <= 0 || v > float64(time.Second) {
			o.fail("first_event_rate", o.get("first_event_rate", kScalar), "must be in (0, 1e9], got %v", v)
		} else {
			s.Nexmark.FirstEventRate = v
		}
	}
	if v, st := o.int("base_time", 1, math.MaxInt64/4); st == good {
		s.Nexmark.BaseTime = v
	}
	items, st := o.list("kinds")
	if st != good {
		return
	}
	if len(items) == 0 {
		o.fail("kinds", o.get("kinds", kNode), "at least one kind is required (or leave kinds out for all)")
		return
	}
	seen := map[string]string{}
	for i, item := range items {
		path := fmt.Sprintf("%s[%d]", o.path("kinds"), i)
		k, v, ok := d.strItem(item, path)
		if !ok {
			continue
		}
		if !contains(nexmarkKinds, k) {
			hint := ""
			if c := suggest(k, nexmarkKinds); c != "" {
				hint = fmt.Sprintf("; did you mean %q?", c)
			}
			d.errorf(v, path, "invalid value %q (want one of person, auction, bid%s)", k, hint)
			continue
		}
		if prev, dup := seen[k]; dup {
			d.errorf(v, path, "duplicate kind %q (also %s)", k, prev)
			continue
		}
		seen[k] = path
		s.Nexmark.Kinds = append(s.Nexmark.Kinds, k)
	}
}
