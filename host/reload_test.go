package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host"
	"github.com/weir-stream/weir/host/broker"
	"github.com/weir-stream/weir/host/plugintool"
)

// reloadRig runs a pipeline whose stateful counter plugin is the file at
// plugin, fed from a pipe, with two workers.
type reloadRig struct {
	t      *testing.T
	p      *host.Pipeline
	in     *io.PipeWriter
	out    *weirtest.SyncBuffer
	done   chan error
	plugin string
	sent   int
}

func startReloadRig(t *testing.T, first []byte, watch bool) *reloadRig {
	t.Helper()
	return startReloadRigWith(t, first, watch, nil)
}

// startReloadRigWith is startReloadRig calling before with the loaded
// pipeline before it runs.
func startReloadRigWith(t *testing.T, first []byte, watch bool, before func(*host.Pipeline)) *reloadRig {
	t.Helper()
	return startRig(t, first, nil, watch, before)
}

// startRig is startReloadRigWith with an optional shadow module.
func startRig(t *testing.T, first, shadow []byte, watch bool, before func(*host.Pipeline)) *reloadRig {
	t.Helper()
	dir := t.TempDir()
	r := &reloadRig{t: t, out: &weirtest.SyncBuffer{}, done: make(chan error, 1), plugin: filepath.Join(dir, "count.wasm")}
	if err := os.WriteFile(r.plugin, first, 0o644); err != nil {
		t.Fatal(err)
	}
	shadowField := ""
	if shadow != nil {
		sp := filepath.Join(dir, "candidate.wasm")
		if err := os.WriteFile(sp, shadow, 0o644); err != nil {
			t.Fatal(err)
		}
		shadowField = `, shadow: "` + sp + `"`
	}
	path := writePipeline(t, `name: reload
engine: {parallelism: 2, batch_size: 8}
sources: [{name: in, type: stdin}]
operators:
  - {name: by-k, type: key_by, field: k}
  - {name: count, type: map, plugin: "`+r.plugin+`"`+shadowField+`}
sinks: [{name: out, type: stdout}]
dead_letter: {type: file, path: `+filepath.Join(dir, "dead.jsonl")+`}
`)
	pr, pw := io.Pipe()
	r.in = pw
	ctx := context.Background()
	p, err := host.Load(ctx, path, host.Options{Stdin: pr, Stdout: r.out, WatchPlugins: watch})
	if err != nil {
		t.Fatal(err)
	}
	r.p = p
	if before != nil {
		before(p)
	}
	go func() {
		_, err := p.Run(ctx)
		r.done <- err
	}()
	t.Cleanup(func() {
		pw.Close()
		<-r.done
		p.Close(ctx)
	})
	return r
}

// feed sends n records over 5 keys and waits until all have come out;
// it returns their output lines.
func (r *reloadRig) feed(n int) []string {
	r.t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{\"k\":\"k%d\",\"i\":%d}\n", (r.sent+i)%5, r.sent+i)
	}
	if _, err := io.WriteString(r.in, b.String()); err != nil {
		r.t.Fatal(err)
	}
	r.sent += n
	weirtest.PollUntil(r.t, 20*time.Second, fmt.Sprintf("%d results", r.sent), func() bool { return len(r.out.Lines()) >= r.sent })
	lines := r.out.Lines()
	return lines[len(lines)-n:]
}

// install writes a module to the plugin's path and reloads it.
func (r *reloadRig) install(module []byte) error {
	if err := os.WriteFile(r.plugin, module, 0o644); err != nil {
		r.t.Fatal(err)
	}
	return r.p.ReloadPlugins(context.Background(), "count")
}

// checkCounts requires each key's counts to run 1, 2, 3, … with no gap
// and no repeat: every record counted once, and the state carried over
// every swap.
func (r *reloadRig) checkCounts() {
	r.t.Helper()
	next := map[string]int{}
	for _, l := range r.out.Lines() {
		var v struct {
			Key   string
			Count int
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			r.t.Fatalf("output %q: %v", l, err)
		}
		next[v.Key]++
		if v.Count != next[v.Key] {
			r.t.Fatalf("key %s: count %d, want %d (a record lost, repeated, or its state not carried over)", v.Key, v.Count, next[v.Key])
		}
	}
}

func buildModule(t *testing.T, dir string) []byte {
	t.Helper()
	path, _, err := plugintool.Build(context.Background(), filepath.Join(repoRoot(t), dir), "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHotReloadSwaps swaps the counter plugin for its next version and
// back, ten times (four with -short, as under the race detector), while
// records flow: every record is counted once, the counts carry over every
// swap, and the records sent after each swap show the new version's
// output.
func TestHotReloadSwaps(t *testing.T) {
	v1, v2 := buildModule(t, "plugins/conformance/go/counter"), buildModule(t, "host/testdata/plugins/counterv2")
	r := startReloadRig(t, v1, false)
	r.feed(40)
	swaps := swapCount()
	for swap := 1; swap <= swaps; swap++ {
		mod, marker := v2, `"version":2`
		if swap%2 == 0 {
			mod, marker = v1, ""
		}
		if err := r.install(mod); err != nil {
			t.Fatalf("swap %d: %v", swap, err)
		}
		for _, l := range r.feed(40) {
			if strings.Contains(l, `"version":2`) != (marker != "") {
				t.Fatalf("swap %d: %s is not the new version's output", swap, l)
			}
		}
	}
	r.checkCounts()
	st := r.p.Plugins()
	if len(st) != 1 || st[0].Version != swaps+1 || st[0].Reloads != int64(swaps) || st[0].Rollbacks != 0 {
		t.Fatalf("plugin status %+v, want version %d after %d reloads", st, swaps+1, swaps)
	}
}

// swapCount is how many times the reload tests swap: 10, or 4 with -short
// (the race pass, where each swap's instantiation is several times
// slower).
func swapCount() int {
	if testing.Short() {
		return 4
	}
	return 10
}

// TestHotReloadBrokenVersions installs broken versions: each is refused or
// rolled back, the pipeline keeps running the good version, and no record
// or count is lost.
func TestHotReloadBrokenVersions(t *testing.T) {
	v1 := buildModule(t, "plugins/conformance/go/counter")
	testdata := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(repoRoot(t), "host/internal/wasm/testdata", name+".wasm"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	r := startReloadRig(t, v1, false)
	r.feed(20)
	for _, tc := range []struct {
		name, wantErr string
		module        []byte
	}{
		{"missing export", "not a valid weir ABI v1 map plugin", testdata("filter_only")},
		{"trap in init", "weir_init", testdata("init_trap")},
		{"not wasm", "not a WebAssembly module", []byte("#!/bin/sh\necho hello\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := r.install(tc.module)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("reload error %v, want one containing %q", err, tc.wantErr)
			}
			if st := r.p.Plugins()[0]; st.Version != 1 || !strings.Contains(st.LastError, tc.wantErr) {
				t.Fatalf("status %+v: want version 1 running and the error reported", st)
			}
			for _, l := range r.feed(20) {
				if strings.Contains(l, "version") {
					t.Fatalf("output %s is not version 1's", l)
				}
			}
			r.checkCounts()
		})
	}
	t.Run("trap on every record", func(t *testing.T) {
		if err := r.install(testdata("trap_all")); err != nil {
			t.Fatalf("reload: %v (it loads; probation must catch it)", err)
		}
		// The broken version's records trap and go to the dead-letter
		// output until probation rolls it back; feed until the good
		// version answers again.
		sentBefore := r.sent
		weirtest.PollUntil(t, 30*time.Second, "the rollback", func() bool {
			var b strings.Builder
			for i := range 8 {
				fmt.Fprintf(&b, "{\"k\":\"t%d\",\"i\":%d}\n", i%5, r.sent+i)
			}
			io.WriteString(r.in, b.String())
			r.sent += 8
			return r.p.Plugins()[0].Rollbacks == 1
		})
		if st := r.p.Plugins()[0]; st.Version != 1 || !strings.Contains(st.LastError, "version 2 failed on 100% of the records") {
			t.Fatalf("status %+v: want version 1 back, with the reason", st)
		}
		t.Logf("%d records sent while version 2 was on probation", r.sent-sentBefore)
		// Version 1 counts new keys from 1 again.
		var b strings.Builder
		for i := range 10 {
			fmt.Fprintf(&b, "{\"k\":\"z%d\"}\n", i%2)
		}
		io.WriteString(r.in, b.String())
		weirtest.PollUntil(t, 20*time.Second, "version 1's results", func() bool {
			n := 0
			for _, l := range r.out.Lines() {
				if strings.HasPrefix(l, `{"key":"z`) {
					n++
				}
			}
			return n == 10
		})
		for _, want := range []string{`{"key":"z0","count":5}`, `{"key":"z1","count":5}`} {
			if !slices.Contains(r.out.Lines(), want) {
				t.Fatalf("no %s after the rollback", want)
			}
		}
	})
}

// TestHotReloadOnFileChange: with WatchPlugins, writing a new module over
// the plugin's file is enough.
func TestHotReloadOnFileChange(t *testing.T) {
	v1, v2 := buildModule(t, "plugins/conformance/go/counter"), buildModule(t, "host/testdata/plugins/counterv2")
	r := startReloadRig(t, v1, true)
	r.feed(10)
	// Write a new file and rename it over the plugin, as editors and
	// build tools do.
	tmp := r.plugin + ".tmp"
	if err := os.WriteFile(tmp, v2, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, r.plugin); err != nil {
		t.Fatal(err)
	}
	weirtest.PollUntil(t, 20*time.Second, "the reload", func() bool { return r.p.Plugins()[0].Version == 2 })
	for _, l := range r.feed(10) {
		if !strings.Contains(l, `"version":2`) {
			t.Fatalf("output %s is not version 2's", l)
		}
	}
	r.checkCounts()
}

// TestHotReloadKafka swaps the plugin ten times (four with -short) while a
// Kafka pipeline processes a stream in bursts: every record comes out once, the counts
// carry over every swap, and each burst after a swap shows its version.
func TestHotReloadKafka(t *testing.T) {
	v1, v2 := buildModule(t, "plugins/conformance/go/counter"), buildModule(t, "host/testdata/plugins/counterv2")
	b, err := broker.Start(broker.Options{Topics: "in:3,out:3"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dir := t.TempDir()
	plugin := filepath.Join(dir, "count.wasm")
	if err := os.WriteFile(plugin, v1, 0o644); err != nil {
		t.Fatal(err)
	}
	path := writePipeline(t, `name: kafka-reload
engine: {parallelism: 2}
kafka: {brokers: [`+b.Addrs()[0]+`]}
sources: [{name: in, type: kafka, topics: [in]}]
operators:
  - {name: by-k, type: key_by, field: k}
  - {name: count, type: map, plugin: "`+plugin+`"}
sinks: [{name: out, type: kafka, topic: out, key_field: key}]
`)
	ctx, cancel := context.WithCancel(context.Background())
	p, err := host.Load(ctx, path, host.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.Run(ctx)
		done <- err
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ConsumeTopics("out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []string
	const keys, perKey = 10, 10
	for round := range swapCount() + 1 {
		if round > 0 {
			mod := v2
			if round%2 == 0 {
				mod = v1
			}
			if err := os.WriteFile(plugin, mod, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := p.ReloadPlugins(ctx, "count"); err != nil {
				t.Fatalf("swap %d: %v", round, err)
			}
		}
		var in strings.Builder
		for i := range keys * perKey {
			fmt.Fprintf(&in, "{\"k\":\"k%d\"}\n", i%keys)
		}
		if _, err := broker.Produce(ctx, broker.ProduceOptions{Client: broker.Client{Brokers: b.Addrs()}, Topic: "in", KeyField: "k"},
			strings.NewReader(in.String()), "test"); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); len(out) < (round+1)*keys*perKey; {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d results", round, len(out))
			}
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
			pcancel()
		}
	}
	next := map[string]int{}
	for _, l := range out {
		var v struct {
			Key     string
			Count   int
			Version int
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatal(err)
		}
		next[v.Key]++
		if v.Count != next[v.Key] {
			t.Fatalf("key %s: count %d, want %d", v.Key, v.Count, next[v.Key])
		}
		// Each key has perKey records per round: the count tells the round.
		if round := (v.Count - 1) / perKey; (round%2 == 1) != (v.Version == 2) {
			t.Fatalf("round %d's output %s is not its version's", round, l)
		}
	}
	if rounds := swapCount() + 1; len(out) != rounds*keys*perKey {
		t.Fatalf("%d results, want %d", len(out), rounds*keys*perKey)
	}
}

// TestShadowCompareAndPromote runs the next version of the counter in
// shadow: its outputs are compared (all differ, by the version field) and
// dropped, its state writes never reach the live state, and promoting it
// makes it live, counting on from the live state.
func TestShadowCompareAndPromote(t *testing.T) {
	v1, v2 := buildModule(t, "plugins/conformance/go/counter"), buildModule(t, "host/testdata/plugins/counterv2")
	r := startRig(t, v1, v2, false, nil)
	for _, l := range r.feed(20) {
		if strings.Contains(l, "version") {
			t.Fatalf("a shadow output reached the sink: %s", l)
		}
	}
	sh := r.p.Plugins()[0].Shadow
	if sh == nil || sh.Records != 20 || sh.Diverged != 20 || len(sh.Samples) == 0 {
		t.Fatalf("shadow status %+v, want 20 records, 20 divergences, samples", sh)
	}
	s := sh.Samples[0]
	if !strings.Contains(s.Candidate, `"version":2`) || strings.Contains(s.Live, "version") || !strings.Contains(s.Input, `"k":"k`) {
		t.Fatalf("sample %+v", s)
	}
	if err := r.p.Promote(context.Background(), "count"); err != nil {
		t.Fatal(err)
	}
	for _, l := range r.feed(10) {
		if !strings.Contains(l, `"version":2`) {
			t.Fatalf("after the promotion, %s is not the candidate's", l)
		}
	}
	r.checkCounts() // the live counts went on: the shadow's writes were its own
	if st := r.p.Plugins()[0]; st.Shadow != nil || st.Version != 2 {
		t.Fatalf("status after the promotion %+v", st)
	}
	if err := r.p.Promote(context.Background(), "count"); err == nil {
		t.Fatal("promoting with no shadow succeeded")
	}
}

// TestWatchFollowsPromotion: once a shadow is promoted, the watcher reloads
// the operator when the promoted file changes (and no longer follows the
// old one).
func TestWatchFollowsPromotion(t *testing.T) {
	v1, v2 := buildModule(t, "plugins/conformance/go/counter"), buildModule(t, "host/testdata/plugins/counterv2")
	r := startRig(t, v1, v2, true, nil)
	r.feed(10)
	if err := r.p.Promote(context.Background(), "count"); err != nil {
		t.Fatal(err)
	}
	candidate := filepath.Join(filepath.Dir(r.plugin), "candidate.wasm")
	if st := r.p.Plugins()[0]; st.Version != 2 || st.Path != candidate {
		t.Fatalf("status after the promotion %+v", st)
	}
	tmp := candidate + ".tmp"
	if err := os.WriteFile(tmp, v1, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, candidate); err != nil {
		t.Fatal(err)
	}
	weirtest.PollUntil(t, 20*time.Second, "the reload of the promoted file", func() bool { return r.p.Plugins()[0].Version == 3 })
	for _, l := range r.feed(10) {
		if strings.Contains(l, "version") {
			t.Fatalf("output %s is not the reloaded first version's", l)
		}
	}
	r.checkCounts()
}

// A shadow identical to the live plugin never diverges.
func TestShadowSameVersion(t *testing.T) {
	v1 := buildModule(t, "plugins/conformance/go/counter")
	r := startRig(t, v1, v1, false, nil)
	r.feed(40)
	if sh := r.p.Plugins()[0].Shadow; sh == nil || sh.Records != 40 || sh.Diverged != 0 {
		t.Fatalf("shadow status %+v, want 40 records and no divergence", sh)
	}
}

// TestStatefulPluginWithoutKeyBy: a plugin that keeps keyed state, with no
// key_by before it, at parallelism 2. Its records (all without a key) are
// routed by key, so they reach one worker and the counts run 1..n, each
// once; routed in turn, two workers would share the key's state and lose
// updates. A stateless plugin there cannot be reloaded into a stateful one,
// since its records are not routed by key.
func TestStatefulPluginWithoutKeyBy(t *testing.T) {
	counter, identity := buildModule(t, "plugins/conformance/go/counter"), buildModule(t, "plugins/identity")
	dir := t.TempDir()
	var lines []string
	for i := range 2000 {
		lines = append(lines, fmt.Sprintf(`{"i":%d}`, i))
	}
	input := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plugin := filepath.Join(dir, "p.wasm")
	pipeline := writePipeline(t, `name: unkeyed
engine: {parallelism: 2, batch_size: 16}
sources: [{name: in, type: file, path: `+input+`}]
operators:
  - {name: count, type: map, plugin: "`+plugin+`"}
sinks: [{name: out, type: stdout}]
`)
	if err := os.WriteFile(plugin, counter, 0o644); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(runOutput(t, pipeline)), "\n") {
		if seen[l] {
			t.Fatalf("output twice: %s (two workers counted the key)", l)
		}
		seen[l] = true
	}
	if len(seen) != 2000 || !seen[`{"key":null,"count":2000}`] {
		t.Fatalf("%d distinct outputs, want the counts 1 to 2000", len(seen))
	}

	if err := os.WriteFile(plugin, identity, 0o644); err != nil {
		t.Fatal(err)
	}
	err := reloadAfterRun(t, pipeline, plugin, counter, host.Options{Stdout: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "uses keyed state") || !strings.Contains(err.Error(), "put a key_by before it") {
		t.Fatalf("reloading a stateful version into an unkeyed operator: %v", err)
	}
}

// TestStatefulReloadIntoStatelessKafkaRun: a pipeline that reads Kafka and
// started without keyed state may run as several instances in one group,
// with no changelog, so a version of a plugin that uses keyed state is
// refused until a restart.
func TestStatefulReloadIntoStatelessKafkaRun(t *testing.T) {
	counter, identity := buildModule(t, "plugins/conformance/go/counter"), buildModule(t, "plugins/identity")
	b, err := broker.Start(broker.Options{Topics: "in:2"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	plugin := filepath.Join(t.TempDir(), "p.wasm")
	if err := os.WriteFile(plugin, identity, 0o644); err != nil {
		t.Fatal(err)
	}
	pipeline := writePipeline(t, `name: scaled
sources: [{name: in, type: kafka, topics: [in], stop_at: latest}]
operators:
  - {name: by-k, type: key_by, field: k}
  - {name: count, type: map, plugin: "`+plugin+`"}
sinks: [{name: out, type: discard}]
`)
	err = reloadAfterRun(t, pipeline, plugin, counter, host.Options{Broker: b})
	if err == nil || !strings.Contains(err.Error(), "the pipeline started without any") {
		t.Fatalf("reloading a stateful version into a stateless Kafka run: %v", err)
	}
}

// reloadAfterRun runs the pipeline at path to its end, puts module in
// place of its operator "count"'s plugin file, and returns what reloading
// it says.
func reloadAfterRun(t *testing.T, path, plugin string, module []byte, opts host.Options) error {
	t.Helper()
	ctx := context.Background()
	p, err := host.Load(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plugin, module, 0o644); err != nil {
		t.Fatal(err)
	}
	return p.ReloadPlugins(ctx, "count")
}
