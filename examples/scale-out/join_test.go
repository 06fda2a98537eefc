package scaleout_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/broker"
)

// The join's topics: partition counts that differ, so that the
// repartition topic (12 partitions, the most) numbers the upstream
// tasks of both inputs together.
const (
	auctionParts = 12
	bidParts     = 5
	joinSpan     = 2000 // ms: join.yaml's between upper bound
)

// TestScaleOutJoin runs join.yaml, a left interval join of auctions
// with bids read from two topics in one consumer group, exactly once and
// at least once, as instances sharing the group: three start; once each
// owns tasks, one is killed (SIGKILL) and a fourth starts (the last
// third of the events waits until it owns tasks); once it reads, one
// stops (SIGTERM). The output must be the brute-force join of the
// generated events: every auction with each bid on it within 2 s of its
// opening, or, with none, once with bids null. Exactly once, each such
// row once; at least once, each at least once and nothing else. Every
// instance must have read records, and nothing must be dead-lettered.
func TestScaleOutJoin(t *testing.T) {
	seed := weirtest.Seed(t)
	evs, want := auctionEvents(rand.New(rand.NewPCG(seed, 3)), 1500)
	for _, mode := range []string{"exactly_once", "at_least_once"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			got, dead := sharedJoin(t, mode, evs, want)
			if dead > 0 {
				t.Errorf("%d records dead-lettered", dead)
			}
			checkJoin(t, got, want, mode == "exactly_once")
		})
	}
}

// auctionEvents returns n auctions and their bids, in the order they are
// produced, each under a random key (so an auction's bids are spread over
// every partition), and the brute-force join's rows, by row: auctions
// open 100 ms apart, in a shuffled order within 400 ms; bids come for
// recent auctions, from 1 s before to 4 s after the opening, ties on
// both bounds included; some auctions get none. Names are unicode. A
// closing event per partition, an hour later, lets the last auctions'
// watermark pass.
func auctionEvents(rng *rand.Rand, n int) ([]*kgo.Record, map[string]int) {
	type ev struct {
		topic string
		at    int64
		value []byte
	}
	var evs []ev
	type auction struct {
		id    int
		at    int64
		value []byte
	}
	var auctions []auction
	bidsOf := map[int][][2]any{} // auction id: [time, value] of each bid
	names := []string{"vase", "théière", "瓷器", "lamp", "клавиатура", "🎻 violin"}
	for i := range n {
		a := auction{id: 1000 + i, at: t0 + int64(i)*100}
		a.value = fmt.Appendf(nil, `{"type":"auction","id":%d,"dateTime":%d,"itemName":%q,"initialBid":%d}`,
			a.id, a.at, names[rng.IntN(len(names))], 1+rng.IntN(1_000_000))
		auctions = append(auctions, a)
		evs = append(evs, ev{"auctions", a.at + rng.Int64N(400), a.value})
		if rng.IntN(4) == 0 {
			continue // no bid at all
		}
		for range rng.IntN(12) {
			at := a.at - 1000 + rng.Int64N(5001)
			switch rng.IntN(10) {
			case 0:
				at = a.at // a tie on the lower bound
			case 1:
				at = a.at + joinSpan // on the upper bound
			}
			v := fmt.Appendf(nil, `{"type":"bid","auction":%d,"dateTime":%d,"bidder":%d,"price":%d}`,
				a.id, at, rng.IntN(500), rng.Int64N(1<<53))
			bidsOf[a.id] = append(bidsOf[a.id], [2]any{at, v})
			evs = append(evs, ev{"bids", at + rng.Int64N(400), v})
		}
	}
	slices.SortStableFunc(evs, func(a, b ev) int { return int(a.at - b.at) })
	var rs []*kgo.Record
	for i, e := range evs {
		rs = append(rs, &kgo.Record{Topic: e.topic, Key: fmt.Appendf(nil, "event-%d", i), Value: e.value})
	}
	end := t0 + int64(n)*100 + 3_600_000
	for p := range int32(auctionParts) {
		rs = append(rs, &kgo.Record{Topic: "auctions", Partition: p, Value: fmt.Appendf(nil, `{"type":"auction","id":%d,"dateTime":%d}`, -1-p, end)})
	}
	for p := range int32(bidParts) {
		rs = append(rs, &kgo.Record{Topic: "bids", Partition: p, Value: fmt.Appendf(nil, `{"type":"bid","auction":-1000,"dateTime":%d}`, end)})
	}
	want := map[string]int{}
	for _, a := range auctions {
		matched := false
		for _, b := range bidsOf[a.id] {
			if at := b[0].(int64); at >= a.at && at <= a.at+joinSpan {
				want[fmt.Sprintf(`{"auctions":%s,"bids":%s}`, a.value, b[1])]++
				matched = true
			}
		}
		if !matched {
			want[fmt.Sprintf(`{"auctions":%s,"bids":null}`, a.value)]++
		}
	}
	return rs, want
}

// sharedJoin runs the instances of TestScaleOutJoin delivering mode, and
// returns the join's output once every row of want is there, and how
// many records went to the dead-letter topic.
func sharedJoin(t *testing.T, mode string, evs []*kgo.Record, want map[string]int) (map[string]int, int) {
	b, err := broker.Start(broker.Options{Topics: fmt.Sprintf("auctions:%d,bids:%d,first-bids:6,auction-bids.dead:1", auctionParts, bidParts)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	release, stop := produce(t, b.Addrs(), evs, 400)
	defer stop()
	dir := t.TempDir()
	procs, admin, read := map[string]*weirtest.Proc{}, map[string]string{}, map[string]int64{}
	start := func(name string) {
		env := append(os.Environ(), "WEIR_KAFKA_BROKERS="+strings.Join(b.Addrs(), ","), "WEIR_CHECKPOINTS_DELIVERY="+mode,
			"WEIR_STATE_DIR="+filepath.Join(dir, "state-"+name), "WEIR_SOURCES_AUCTIONS_INSTANCE_ID=join-"+name)
		procs[name] = weirtest.Start(t, dir, name, env, "run", "--log-level", "debug", "--admin", "127.0.0.1:0", "join.yaml")
		admin[name] = procs[name].AdminAddr(t)
	}
	owns := func(names ...string) {
		for _, n := range names {
			weirtest.PollUntil(t, 60*time.Second, "instance "+n+" to own tasks", func() bool {
				read[n] = max(read[n], weirtest.SourceRecords(admin[n]))
				return len(weirtest.OwnedTasks(admin[n])) > 0
			})
		}
	}
	for _, n := range []string{"a", "b", "c"} {
		start(n)
	}
	owns("a", "b", "c")
	if err := procs["b"].Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-procs["b"].Done
	start("d")
	owns("d")
	release()
	read["a"] = max(read["a"], weirtest.SourceRecords(admin["a"]))
	if err := procs["a"].Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-procs["a"].Done; err != nil {
		t.Errorf("instance a did not stop cleanly: %v", err)
	}
	got := readRows(t, b.Addrs(), "first-bids", want, nil)
	for _, n := range []string{"c", "d"} {
		read[n] = max(read[n], weirtest.SourceRecords(admin[n]))
		procs[n].Cmd.Process.Signal(syscall.SIGTERM)
		if err := <-procs[n].Done; err != nil {
			t.Errorf("instance %s did not stop cleanly: %v", n, err)
		}
	}
	for _, n := range []string{"a", "b", "c", "d"} {
		t.Logf("instance %s read %d records", n, read[n])
		if read[n] == 0 && n != "b" { // b, killed, may not have committed a read
			t.Errorf("instance %s read nothing", n)
		}
	}
	dead := readRows(t, b.Addrs(), "auction-bids.dead", nil, func(r *kgo.Record) string {
		for _, h := range r.Headers {
			if h.Key == "weir.error" {
				return string(h.Value) + ": " + string(r.Value)
			}
		}
		return string(r.Value)
	})
	for _, d := range slices.Sorted(maps.Keys(dead))[:min(len(dead), 5)] {
		t.Logf("dead letter: %s", d)
	}
	return got, len(dead)
}

// readRows reads topic read_committed from its start, and returns its
// values (or what row says of each record) counted, once it holds every row of want and two seconds more
// have brought no new one (so that repeats would show), or, with want
// nil, once a poll finds nothing more. When a minute passes without a
// new row before that, it fails the test, naming rows missing, and
// returns what it read.
func readRows(t *testing.T, addrs []string, topic string, want map[string]int, row func(*kgo.Record) string) map[string]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got, missing := map[string]int{}, len(want)
	last := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if row != nil {
				v = row(r)
			}
			got[v]++
			n++
			if got[v] == 1 && want[v] > 0 {
				missing--
			}
		})
		switch {
		case n > 0:
			last = time.Now()
		case missing == 0:
			return got
		case time.Since(last) > time.Minute:
			shown := 0
			for row := range want {
				if got[row] == 0 && shown < 10 {
					t.Errorf("missing: %s", row)
					shown++
				}
			}
			t.Errorf("%s: %d of %d rows after a minute without a new one", topic, len(want)-missing, len(want))
			return got
		}
	}
}

// checkJoin compares the join's output with the brute-force rows, each
// exactly as many times (exact) or at least once, and nothing else.
func checkJoin(t *testing.T, got, want map[string]int, exact bool) {
	t.Helper()
	rows, pairs, wrong := 0, 0, 0
	for row, n := range want {
		rows += n
		if !strings.HasSuffix(row, `"bids":null}`) {
			pairs += n
		}
		if g := got[row]; g == 0 || exact && g != n {
			wrong++
			if wrong <= 5 {
				t.Errorf("row %s: %d times, want %d", row, g, n)
			}
		}
	}
	for row, n := range got {
		if want[row] == 0 && !closing(row) {
			wrong++
			if wrong <= 10 {
				t.Errorf("row %s (%d times) is not the join's", row, n)
			}
		}
	}
	if wrong > 0 {
		t.Errorf("%d rows wrong", wrong)
	}
	t.Logf("%d rows, %d of them pairs; %d distinct rows out", rows, pairs, len(got))
}

// closing reports whether row is a closing event's, which no reference
// row holds: a closing auction has a negative id.
func closing(row string) bool {
	var r struct {
		Auctions struct {
			ID int `json:"id"`
		} `json:"auctions"`
	}
	return json.Unmarshal([]byte(row), &r) == nil && r.Auctions.ID < 0
}
