package kafka

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
)

// groupWaitEvery is how often a wait for a consumer group is logged, so
// that a run that gets no partitions says why instead of sitting silent.
const groupWaitEvery = 5 * time.Second

// srcDefaultSessionTimeout is franz-go's session timeout, used when
// SourceConfig.SessionTimeout is 0.
const srcDefaultSessionTimeout = 45 * time.Second

// groupWait logs what a wait for a consumer group's partitions waits for:
// other members hold them. Members of an earlier run that stopped without
// leaving the group (a crash, a kill) hold them until their session times
// out; a live instance holds them for as long as it runs. The two cannot
// be told apart from the group's description until the session timeout
// has passed: until then each report says both, every groupWaitEvery;
// once the same members outlive it, they are alive, which is said once.
// It is used by one goroutine.
type groupWait struct {
	log        *slog.Logger
	group      string
	instanceID string
	session    time.Duration
	standby    bool // the wait of a standby, not of a source's join

	began  time.Time // when the wait began; zero: at the first held
	since  time.Time // when the current members were first seen
	last   time.Time // the last report
	seen   []string  // the current members
	told   bool      // alive was said for them
	waited bool      // a wait was reported since the last done
}

func newGroupWait(log *slog.Logger, group, instanceID string, session time.Duration, standby bool) *groupWait {
	if session <= 0 {
		session = srcDefaultSessionTimeout
	}
	return &groupWait{log: log, group: group, instanceID: instanceID, session: session, standby: standby}
}

// What a wait says of members that outlived their session timeout.
const (
	aliveStandby = "another instance is active: waiting as a standby until it leaves (a pipeline with keyed state runs as one active instance per group)"
	aliveSource  = "they hold every partition of the topics (a group with more members than partitions leaves some without)"
)

// held reports that others, the group's members other than this one, hold
// its partitions, as seen at now; it logs at once when they change, then
// every groupWaitEvery.
func (w *groupWait) held(others []string, now time.Time) {
	if w.began.IsZero() {
		w.began = now
	}
	if !slices.Equal(others, w.seen) {
		w.seen, w.since, w.last, w.told = slices.Clone(others), now, time.Time{}, false
	}
	switch {
	case w.told:
	case now.Sub(w.since) >= w.session+groupWaitEvery:
		w.told = true
		alive := aliveSource
		if w.standby {
			alive = aliveStandby
		}
		w.log.Info("kafka: the consumer group's other members outlived their session timeout, so they are alive; "+alive,
			"group", w.group, "members", strings.Join(others, ", "), "session_timeout", w.session)
	case w.last.IsZero() || now.Sub(w.last) >= groupWaitEvery:
		w.last, w.waited = now, true
		w.log.Info(w.message(len(others)), "group", w.group, "members", strings.Join(others, ", "),
			"waited", now.Sub(w.began).Round(time.Second), "session_timeout", w.session)
	}
}

// message says what holds the group's partitions and how long for.
func (w *groupWait) message(n int) string {
	who, verb, its := "a member", "holds", "its"
	if n > 1 {
		who, verb, its = "members", "hold", "their"
	}
	held := fmt.Sprintf("%d %s %s its partitions", n, strings.TrimPrefix(who, "a "), verb)
	earlier := fmt.Sprintf("%s from an earlier run that stopped without leaving the group %s them until %s session times out (session_timeout %s)",
		who, verb, its, w.session)
	msg := "kafka: waiting for the consumer group " + w.group + ": " + held + "; " + earlier
	if w.standby {
		msg = "kafka: waiting as a standby for the consumer group " + w.group + ": " + held +
			": another instance that is active, or " + earlier
	}
	if w.instanceID == "" {
		msg += "; set instance_id for static membership so a restart takes its partitions back at once"
	}
	return msg
}

// done reports that the wait is over, logging msg, with how long it
// lasted, if the wait was reported.
func (w *groupWait) done(now time.Time, msg string) {
	if w.waited {
		w.log.Info(msg, "group", w.group, "waited", now.Sub(w.began).Round(time.Millisecond))
	}
	*w = groupWait{log: w.log, group: w.group, instanceID: w.instanceID, session: w.session, standby: w.standby}
}
