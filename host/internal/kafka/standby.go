package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A pipeline that keeps keyed state runs as the only active member of its
// sources' consumer groups: its state is not partitioned by input
// partition, and its changelog has one writer. A
// second instance started for the same group is a standby: AwaitSoleMember
// holds it back until the group is empty, and it then takes over, restoring
// its state from the changelog. A Source with Exclusive set checks, when
// the group first gives it partitions, that no other member joined at the
// same time (ErrNotSoleMember), so two instances that start together do
// not both run.

// ErrNotSoleMember is returned by an exclusive Source's Run when the group
// has another member beside it: the run gave up its partitions before
// reading any record, and may wait as a standby again.
var ErrNotSoleMember = errors.New("another member is in the consumer group")

// standbyPoll is how often a standby asks whether the group is empty.
const standbyPoll = time.Second

// Standby names the consumer group a standby waits for.
type Standby struct {
	Group string
	// InstanceID is this instance's static member id, or "": a member
	// with it is this instance, restarted, not another one.
	InstanceID string
	// SessionTimeout is the members' session timeout, as this instance's
	// (0: franz-go's 45s), for saying how long a member that stopped
	// without leaving holds the group.
	SessionTimeout time.Duration
}

// AwaitSoleMember waits until sb.Group has no member other than the
// static member sb.InstanceID, asking the group's coordinator at once and
// then every second; each time the group is still taken it calls
// whileWaiting, if not nil (a standby keeps its state up to date from the
// changelog there). It logs what it waits for every few seconds, until
// the members outlive their session timeout (they are alive: another
// instance is active), and returns nil when the group is empty, or ctx's
// error.
func AwaitSoleMember(ctx context.Context, cc ClientConfig, sb Standby, log *slog.Logger, whileWaiting func(context.Context)) error {
	log = snkLogger(log)
	opts, err := cc.Opts()
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(opts, kgo.WithLogger(newKgoLogger(log)))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	w := newGroupWait(log, sb.Group, sb.InstanceID, sb.SessionTimeout, true)
	for wait := time.Duration(0); ; wait = standbyPoll {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
		others, err := otherMembers(ctx, adm, sb.Group, "", sb.InstanceID)
		switch {
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			log.Warn("kafka: describing the consumer group failed; asking again", "group", sb.Group, "error", err)
			continue
		case len(others) == 0:
			w.done(time.Now(), "kafka: the consumer group is empty; taking over")
			return nil
		}
		w.held(others, time.Now())
		if whileWaiting != nil {
			whileWaiting(ctx)
		}
	}
}

// otherMembers describes group and returns its members other than this
// one (memberID, when set) and the static member instanceID (when set),
// each as "client id on host".
func otherMembers(ctx context.Context, adm *kadm.Client, group, memberID, instanceID string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	gs, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, err
	}
	g, ok := gs[group]
	switch {
	case !ok:
		return nil, fmt.Errorf("no description of group %q", group)
	case errors.Is(g.Err, kerr.GroupIDNotFound):
		return nil, nil
	case g.Err != nil:
		return nil, g.Err
	}
	var others []string
	for _, m := range g.Members {
		if m.MemberID == memberID || (instanceID != "" && m.InstanceID != nil && *m.InstanceID == instanceID) {
			continue
		}
		who := m.ClientID + " on " + m.ClientHost
		if m.InstanceID != nil {
			who = *m.InstanceID + " (" + who + ")"
		}
		others = append(others, who)
	}
	return others, nil
}
