package kafka

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/internal/engine"
)

// TestSourceLogsWaitForEarlierMembers: a member that stopped without
// leaving (a static one, which does not leave when it closes) holds the
// group's partitions until its session times out. Meanwhile the source
// says, every few seconds, what it waits for, and its lag is unknown
// rather than 0; once the member's session ends it gets the partitions,
// says so, and reads.
func TestSourceLogsWaitForEarlierMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a session timeout; the full pass runs it")
	}
	t.Parallel()
	_, cc := srcBroker(t, map[string]int32{"in": 2})
	srcProduce(t, cc, srcJSONRecords("in", 0, 10)...)
	// A short rebalance timeout too: the join that the source's arrival
	// starts waits for the dead member up to it (60 s by default), which
	// on a loaded machine outlasts the poll below.
	dead := sbMember(t, cc, "g", "in", "earlier-run", kgo.SessionTimeout(10*time.Second), kgo.RebalanceTimeout(10*time.Second))
	dead.Close() // a static member does not leave

	var logs weirtest.SyncBuffer
	src := srcNewSource(t, cc, "g", "in", func(c *SourceConfig) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.SessionTimeout = 10 * time.Second
	})
	sink := &srcSink{keep: true}
	run := srcStart(t, &engine.Pipeline{Sources: []engine.Source{src}, Sinks: []engine.Sink{sink}})
	want := "waiting for the consumer group g: 1 member holds its partitions; a member from an earlier run that stopped without leaving the group holds them until its session times out (session_timeout 10s); set instance_id for static membership"
	weirtest.PollUntil(t, 20*time.Second, "the wait to be logged", func() bool { return strings.Contains(logs.String(), want) })
	if n, known := src.LagKnown(); known && sink.count.Load() == 0 {
		t.Errorf("lag %d known before the group assigned a partition", n)
	}
	weirtest.PollUntil(t, 90*time.Second, "the records, once the earlier member's session ended", func() bool { return sink.count.Load() >= 10 })
	if _, known := src.LagKnown(); !known {
		t.Error("lag unknown while the source holds partitions")
	}
	weirtest.PollUntil(t, 10*time.Second, "the end of the wait to be logged", func() bool {
		return strings.Contains(logs.String(), "the consumer group assigned partitions; reading")
	})
	if _, err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !strings.Contains(logs.String(), "members=\"earlier-run (") {
		t.Errorf("the log does not name the member:\n%s", logs.String())
	}
}

// TestGroupWaitReports feeds a groupWait what it sees at given moments and
// checks what it says: the wait at once and then every groupWaitEvery,
// that the members are alive once they outlive the session timeout (once,
// then quiet), a new wait when the members change, and the end.
func TestGroupWaitReports(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1_000_000, 0).Add(time.Duration(s) * time.Second) }
	one, two := []string{"a on h"}, []string{"a on h", "b on h"}
	tests := []struct {
		name    string
		standby bool
		seen    [][]string // the members at second i; nil ends the wait
		want    []string   // the messages logged, in order, by their start
		without string     // a text no message may hold
	}{
		{"a member every few seconds", false, [][]string{one, one, one, one, one, one, one},
			[]string{"kafka: waiting for the consumer group g: 1 member holds its partitions; a member from an earlier run", "kafka: waiting for the consumer group g: 1 member holds"}, ""},
		{"members that outlive the session timeout are alive, said once", false,
			repeat(one, 30),
			[]string{"kafka: waiting", "kafka: waiting", "kafka: waiting", "kafka: the consumer group's other members outlived their session timeout, so they are alive; " + aliveSource}, ""},
		{"a standby's members that outlive it are another instance", true,
			repeat(one, 16),
			[]string{"kafka: waiting as a standby for the consumer group g: 1 member holds its partitions: another instance that is active, or a member from an earlier run",
				"kafka: waiting as a standby", "kafka: waiting as a standby", "kafka: the consumer group's other members outlived their session timeout, so they are alive; " + aliveStandby}, ""},
		{"new members begin a new wait", false, [][]string{one, two},
			[]string{"kafka: waiting for the consumer group g: 1 member holds", "kafka: waiting for the consumer group g: 2 members hold its partitions; members from an earlier run"}, ""},
		{"the end of a reported wait", false, [][]string{one, one, nil},
			[]string{"kafka: waiting", "the wait is over"}, ""},
		{"a static member is not told to set instance_id", false, [][]string{one}, []string{"kafka: waiting"}, "set instance_id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs weirtest.SyncBuffer
			instanceID := ""
			if tc.without != "" {
				instanceID = "me"
			}
			w := newGroupWait(slog.New(slog.NewJSONHandler(&logs, nil)), "g", instanceID, 10*time.Second, tc.standby)
			for i, others := range tc.seen {
				if others == nil {
					w.done(at(i), "the wait is over")
				} else {
					w.held(others, at(i))
				}
			}
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("logged %d lines, want %d:\n%s", len(lines), len(tc.want), logs.String())
			}
			for i, l := range lines {
				if !strings.Contains(l, `"msg":"`+tc.want[i]) || tc.without != "" && strings.Contains(l, tc.without) {
					t.Errorf("line %d: %s\nwant %q", i, l, tc.want[i])
				}
			}
		})
	}
}

func repeat(members []string, n int) [][]string {
	out := make([][]string, n)
	for i := range out {
		out[i] = members
	}
	return out
}
