package kafka

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// watchAssignment logs, every groupWaitEvery while the group assigns the
// source no partition although other members are in it, what it waits
// for (see groupWait), until ctx is done or the source closes. A
// restarted run whose earlier members stopped without leaving otherwise
// sits silent until their sessions time out.
func (s *Source) watchAssignment(ctx context.Context) {
	w := newGroupWait(s.log, s.group, s.instanceID, s.sessionTimeout, false)
	w.began = time.Now() // the wait counts from Run's start
	adm := kadm.NewClient(s.cl)
	t := time.NewTicker(groupWaitEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.stop:
			return
		case <-s.gotParts:
			w.done(time.Now(), "kafka source: the consumer group assigned partitions; reading")
		case now := <-t.C:
			if _, known := s.LagKnown(); known {
				continue
			}
			memberID, _ := s.cl.GroupMetadata()
			if others, err := otherMembers(ctx, adm, s.group, memberID, s.instanceID); err == nil && len(others) > 0 {
				w.held(others, now)
			}
		}
	}
}

// LagKnown returns Lag and whether it is known: it is not while the group
// assigns the source no partition (before it joins, or while other
// members hold them all), when a lag of 0 would say it is caught up.
func (s *Source) LagKnown() (int64, bool) {
	s.mu.Lock()
	known := len(s.held) > 0
	s.mu.Unlock()
	return s.Lag(), known
}
