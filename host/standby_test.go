package host_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host"
	"github.com/weir-stream/weir/host/admin"
	"github.com/weir-stream/weir/host/broker"
)

// TestStatefulInstancesStartTogether starts two instances of a pipeline
// with a window, reading the same topic in the same group, at the same
// moment: one runs and the other waits as a standby, whichever way their
// start raced. When the active one stops, the standby takes over and reads
// the rest.
func TestStatefulInstancesStartTogether(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "events"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	// describes counts the broker's DescribeGroups requests: a standby
	// sends one each time it asks whether the group is empty.
	var describes atomic.Int64
	c.ControlKey(kmsg.DescribeGroups.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		describes.Add(1)
		return nil, nil, false
	})
	path := writePipeline(t, `name: together
kafka: {brokers: [`+c.ListenAddrs()[0]+`]}
sources: [{name: in, type: kafka, topics: [events], group: together}]
operators:
  - {name: by-k, type: key_by, field: k}
  - {name: counts, type: window, kind: tumbling, size: 1h, aggregates: [{func: count, as: n}]}
sinks: [{name: out, type: discard}]
`)
	type instance struct {
		p      *host.Pipeline
		cancel context.CancelFunc
		done   chan error
		admin  string // base URL of its admin server
	}
	var insts [2]*instance
	logs := &weirtest.SyncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	var start sync.WaitGroup
	start.Add(1)
	for i := range insts {
		p, err := host.Load(context.Background(), path, host.Options{Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		a, err := admin.Start(admin.Options{Listen: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		if err := a.Register(p); err != nil {
			t.Fatal(err)
		}
		in := &instance{p: p, cancel: cancel, done: make(chan error, 1), admin: "http://" + a.Addr()}
		insts[i] = in
		go func() {
			start.Wait()
			_, err := p.Run(ctx)
			in.done <- err
		}()
		t.Cleanup(func() {
			cancel()
			<-in.done
			p.Close(context.Background())
		})
	}
	start.Done()
	produce := func(n int) {
		t.Helper()
		var lines strings.Builder
		for i := range n {
			lines.WriteString(`{"k":"k` + string(rune('a'+i%26)) + `"}` + "\n")
		}
		if _, err := broker.Produce(context.Background(), broker.ProduceOptions{Client: broker.Client{Brokers: c.ListenAddrs()}, Topic: "events", KeyField: "k"},
			strings.NewReader(lines.String()), "test"); err != nil {
			t.Fatal(err)
		}
	}
	read := func(p *host.Pipeline) int64 {
		for _, s := range p.Stats().Stages {
			if s.Stage == "source" {
				return s.Out
			}
		}
		return 0
	}
	produce(100)
	var active, standby *instance
	weirtest.PollUntil(t, 30*time.Second, "one instance running and the other on standby", func() bool {
		s0, s1 := insts[0].p.Stats().State, insts[1].p.Stats().State
		switch {
		case s0 == host.StateRunning && s1 == host.StateStandby:
			active, standby = insts[0], insts[1]
		case s1 == host.StateRunning && s0 == host.StateStandby:
			active, standby = insts[1], insts[0]
		default:
			return false
		}
		return read(active.p) == 100
	})
	// The standby asks again, and stays. The active instance, reading,
	// describes the group no more, but its check at its first assignment
	// may still be on its way: three more requests hold at least one whole
	// ask of the standby's, answered and acted on.
	asked := describes.Load()
	weirtest.PollUntil(t, 30*time.Second, "the standby to ask again whether the group is empty", func() bool {
		return describes.Load() >= asked+3
	})
	if s := standby.p.Stats().State; s != host.StateStandby || read(standby.p) != 0 {
		t.Fatalf("the standby is %s and read %d records while the other instance runs", s, read(standby.p))
	}
	for _, m := range []struct {
		in               *instance
		running, standby float64
	}{{active, 1, 0}, {standby, 0, 1}} {
		_, body := weirtest.HTTPGet(t, m.in.admin+"/metrics", "")
		if r, s := weirtest.MetricValue(body, "weir_pipeline_running"), weirtest.MetricValue(body, "weir_pipeline_standby"); r != m.running || s != m.standby ||
			!strings.Contains(body, "weir_pipeline_standby{") {
			t.Errorf("metrics say running %v and standby %v, want %v and %v", r, s, m.running, m.standby)
		}
	}
	if code, body := weirtest.HTTPGet(t, standby.admin+"/readyz", ""); code != 503 || !strings.Contains(body, "is standby") {
		t.Errorf("the standby's /readyz: %d %q, want 503 and that it is standby", code, body)
	}
	t.Logf("the instances raced at their first assignment: %v", strings.Contains(strings.Join(logs.Lines(), "\n"), "giving way"))
	active.cancel()
	if err := <-active.done; err != nil {
		t.Fatalf("the active instance: %v", err)
	}
	active.done <- nil // for the cleanup
	produce(50)
	weirtest.PollUntil(t, 30*time.Second, "the standby to take over and read on", func() bool {
		return standby.p.Stats().State == host.StateRunning && read(standby.p) >= 50
	})
}
