package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host"
	"github.com/weir-stream/weir/host/admin"
	"github.com/weir-stream/weir/host/broker"
)

// TestRestoreProgress runs a windowed pipeline over a 6-partition topic,
// deletes its state directory, and runs it again: the state comes back
// from the changelog, which has a partition per input partition, and the
// second run's stats, /api/pipeline and metrics say, task by task, that
// it replayed every changelog record and has none left.
func TestRestoreProgress(t *testing.T) {
	t.Parallel()
	const parts = 6
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(parts, "events"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	path := writePipeline(t, `name: restore
kafka: {brokers: [`+c.ListenAddrs()[0]+`]}
state: {backend: badger, dir: state}
checkpoints: {interval: 100ms}
sources: [{name: in, type: kafka, topics: [events], group: restore, stop_at: latest}]
operators:
  - {name: by-k, type: key_by, field: k}
  - {name: counts, type: window, kind: tumbling, size: 1h, aggregates: [{func: count, as: n}]}
sinks: [{name: out, type: discard}]
`)
	var lines strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&lines, `{"k":"key-%d-ключ"}`+"\n", i*7919%600)
	}
	if _, err := broker.Produce(context.Background(), broker.ProduceOptions{Client: broker.Client{Brokers: c.ListenAddrs()}, Topic: "events", KeyField: "k"},
		strings.NewReader(lines.String()), "test"); err != nil {
		t.Fatal(err)
	}
	runToEnd(t, path, nil)
	ends := changelogEnds(t, c.ListenAddrs(), "restore-changelog")
	if len(ends) != parts {
		t.Fatalf("the changelog has %d partitions, want %d (the input's)", len(ends), parts)
	}
	if err := os.RemoveAll(filepath.Join(filepath.Dir(path), "state")); err != nil {
		t.Fatal(err)
	}

	a, err := admin.Start(admin.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	st := runToEnd(t, path, a)
	r := st.Restore
	if r == nil {
		t.Fatal("the second run reports no restore")
	}
	total := int64(0)
	for p, e := range ends {
		total += e
		if p >= len(r.Tasks) || r.Tasks[p] != (host.TaskRestore{Task: p, Replayed: e, Left: 0}) {
			t.Errorf("task %d: restore %+v, want %d replayed and none left", p, r.Tasks, e)
		}
	}
	if len(r.Tasks) != parts || r.Replayed != total || r.Left != 0 || r.EtaSeconds != 0 {
		t.Errorf("restore %+v, want %d tasks, %d replayed, none left", r, parts, total)
	}

	base := "http://" + a.Addr()
	_, body := weirtest.HTTPGet(t, base+"/metrics", "")
	if v := weirtest.MetricValue(body, "weir_pipeline_restoring"); v != 0 {
		t.Errorf("weir_pipeline_restoring %v after the restore", v)
	}
	for p, e := range ends {
		task := `task="` + strconv.Itoa(p) + `"`
		if v := weirtest.MetricValue(body, "weir_restore_records_replayed", task); v != float64(e) {
			t.Errorf("weir_restore_records_replayed{%s} = %v, want %d", task, v, e)
		}
		if v := weirtest.MetricValue(body, "weir_restore_records_left", task); v != 0 {
			t.Errorf("weir_restore_records_left{%s} = %v, want 0", task, v)
		}
	}
	_, body = weirtest.HTTPGet(t, base+"/api/pipeline", "")
	var infos []admin.PipelineInfo
	if err := json.Unmarshal([]byte(body), &infos); err != nil || len(infos) != 1 || infos[0].Stats.Restore == nil ||
		infos[0].Stats.Restore.Replayed != total {
		t.Errorf("/api/pipeline (%v): %s", err, body)
	}
}

// runToEnd loads the pipeline at path, registers it with a when a is not
// nil, runs it until its bounded input ends, and returns its stats.
func runToEnd(t *testing.T, path string, a *admin.Server) host.Stats {
	t.Helper()
	p, err := host.Load(context.Background(), path, host.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	if a != nil {
		if err := a.Register(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return p.Stats()
}

// changelogEnds returns the end offset of each partition of topic.
func changelogEnds(t *testing.T, addrs []string, topic string) []int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	listed, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	ends := make([]int64, len(listed[topic]))
	listed.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	return ends
}
