package kafka

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A member of a consumer group that waits in a JoinGroup is not expired
// by Kafka: a member awaiting a join or a sync satisfies its heartbeats
// (the classic group coordinator's hasSatisfiedHeartbeat), and the
// rebalance timeout bounds the wait instead. The embedded broker's kfake
// lets such a member's session run out while it waits for the others,
// removes it and never answers its JoinGroup: its client then waits its
// whole JoinGroup timeout (the rebalance timeout plus the request
// overhead, 70 s with franz-go's defaults) while the group goes on
// without it. That happens whenever one member is slow to rejoin, as an
// instance holding a poll is, for longer than another's session.
//
// joinKeeper gives the embedded broker Kafka's rule: it learns each
// member's generation from its heartbeats and syncs and, while a member
// it knows waits in a JoinGroup, heartbeats for it every third of its
// session timeout. During a rebalance such a heartbeat only resets the
// member's session (kfake answers REBALANCE_IN_PROGRESS); once the
// broker answers anything else (the join completed under a new
// generation, or the member is gone), or the member's rebalance timeout
// has passed, the keeper stops.
//
// Its control functions run on the broker's loop, one at a time; the
// heartbeats go from its own goroutine. It lives as long as the broker.
type joinKeeper struct {
	cl    *kgo.Client
	log   *slog.Logger
	renew time.Duration // how often observe replaces its control functions

	mu      sync.Mutex
	gens    map[memberKey]memberGen
	waiting map[memberKey]*joinWait

	stop chan struct{}
	done chan struct{}
}

// memberKey names a member of a group.
type memberKey struct{ group, member string }

// memberGen is the generation a member last said it is in, and when.
type memberGen struct {
	gen      int32
	instance *string
	at       time.Time
}

// joinWait is a member waiting in a JoinGroup: until when it may, how
// often to heartbeat for it, and when next.
type joinWait struct {
	until, next time.Time
	every       time.Duration
	inFlight    bool
}

// joinKeeperTick is how often the keeper looks for heartbeats due;
// joinKeeperForget is how long it remembers a member that said nothing
// (one that died without leaving: heartbeats come every few seconds).
const (
	joinKeeperTick   = 200 * time.Millisecond
	joinKeeperForget = 10 * time.Minute
)

// startJoinKeeper installs the keeper's control functions on c, whose
// clients reach it at addrs, and starts its heartbeats.
func startJoinKeeper(c *kfake.Cluster, addrs []string, log *slog.Logger, renew time.Duration) (*joinKeeper, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ClientID("weir-broker-join-keeper"))
	if err != nil {
		return nil, err
	}
	k := &joinKeeper{cl: cl, log: log, renew: renew, gens: map[memberKey]memberGen{}, waiting: map[memberKey]*joinWait{},
		stop: make(chan struct{}), done: make(chan struct{})}
	k.observe(c, kmsg.Heartbeat, func(r kmsg.Request) {
		if req, ok := r.(*kmsg.HeartbeatRequest); ok {
			k.sawGeneration(memberKey{req.Group, req.MemberID}, req.Generation, req.InstanceID)
		}
	})
	k.observe(c, kmsg.SyncGroup, func(r kmsg.Request) {
		if req, ok := r.(*kmsg.SyncGroupRequest); ok {
			key := memberKey{req.Group, req.MemberID}
			k.joined(key)
			k.sawGeneration(key, req.Generation, req.InstanceID)
		}
	})
	k.observe(c, kmsg.JoinGroup, func(r kmsg.Request) {
		if req, ok := r.(*kmsg.JoinGroupRequest); ok && req.MemberID != "" {
			k.joining(memberKey{req.Group, req.MemberID}, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis)
		}
	})
	k.observe(c, kmsg.LeaveGroup, func(r kmsg.Request) {
		if req, ok := r.(*kmsg.LeaveGroupRequest); ok {
			k.left(req)
		}
	})
	go k.run()
	return k, nil
}

// observe has fn see every request of kind key that c handles, leaving
// each to c. kfake keeps, per control function, the last request of
// every connection it ever served; the function is replaced by a fresh
// copy every k.renew (joinKeeperForget for a broker), so that a
// long-lived broker does not keep its closed connections.
func (k *joinKeeper) observe(c *kfake.Cluster, key kmsg.Key, fn func(kmsg.Request)) {
	born := time.Now()
	c.ControlKey(key.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		fn(r)
		if time.Since(born) >= k.renew {
			c.DropControl()
			k.observe(c, key, fn)
		}
		return nil, nil, false
	})
}

func (k *joinKeeper) sawGeneration(key memberKey, gen int32, instance *string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.gens[key] = memberGen{gen: gen, instance: instance, at: time.Now()}
}

// joining notes a known member's JoinGroup: the keeper heartbeats for it
// from a third of its session on, for at most its rebalance timeout.
func (k *joinKeeper) joining(key memberKey, sessionMs, rebalanceMs int32) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, known := k.gens[key]; !known {
		return // a member new to the group: it has no session to keep
	}
	every := max(time.Duration(sessionMs)*time.Millisecond/3, joinKeeperTick)
	now := time.Now()
	k.waiting[key] = &joinWait{until: now.Add(time.Duration(rebalanceMs) * time.Millisecond), next: now.Add(every), every: every}
}

// joined notes that a member's JoinGroup was answered (it syncs).
func (k *joinKeeper) joined(key memberKey) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.waiting, key)
}

// left forgets the members leaving the group.
func (k *joinKeeper) left(req *kmsg.LeaveGroupRequest) {
	k.mu.Lock()
	defer k.mu.Unlock()
	forget := func(member string) {
		key := memberKey{req.Group, member}
		delete(k.waiting, key)
		delete(k.gens, key)
	}
	if req.MemberID != "" {
		forget(req.MemberID)
	}
	for _, m := range req.Members {
		forget(m.MemberID)
	}
}

func (k *joinKeeper) run() {
	defer close(k.done)
	tick := time.NewTicker(joinKeeperTick)
	defer tick.Stop()
	for {
		select {
		case <-k.stop:
			return
		case now := <-tick.C:
			for key, mg := range k.due(now) {
				go k.heartbeat(key, mg)
			}
		}
	}
}

// due returns the waiting members to heartbeat for now, forgetting
// those past their rebalance timeout, and the members silent for
// joinKeeperForget.
func (k *joinKeeper) due(now time.Time) map[memberKey]memberGen {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out map[memberKey]memberGen
	for key, mg := range k.gens {
		if now.Sub(mg.at) > joinKeeperForget && k.waiting[key] == nil {
			delete(k.gens, key)
		}
	}
	for key, w := range k.waiting {
		switch {
		case now.After(w.until):
			delete(k.waiting, key)
		case !w.inFlight && !now.Before(w.next):
			w.inFlight, w.next = true, now.Add(w.every)
			if out == nil {
				out = map[memberKey]memberGen{}
			}
			out[key] = k.gens[key]
		}
	}
	return out
}

// heartbeat heartbeats for a waiting member; unless the broker answers
// that the rebalance goes on, the member no longer waits.
func (k *joinKeeper) heartbeat(key memberKey, mg memberGen) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation, req.InstanceID = key.group, key.member, mg.gen, mg.instance
	resp, err := req.RequestWith(ctx, k.cl)
	k.mu.Lock()
	defer k.mu.Unlock()
	w := k.waiting[key]
	if w == nil {
		return
	}
	w.inFlight = false
	if err != nil {
		k.log.Debug("heartbeating for a member waiting in a join failed", "group", key.group, "member", key.member, "error", err)
		return
	}
	if resp.ErrorCode != kerr.RebalanceInProgress.Code {
		delete(k.waiting, key)
	}
}

// close stops the heartbeats; the control functions go with the broker.
func (k *joinKeeper) close() {
	close(k.stop)
	<-k.done
	k.cl.Close()
}
