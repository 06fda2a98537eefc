package host

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/pluginbuild"
)

// BenchmarkPluginSwap measures the processing pause a hot reload causes:
// a pipeline (generator → key_by → the stateful counter plugin → discard,
// two workers) runs flat out while each iteration installs the other of
// two versions of the plugin and reloads it. The pause of one operator
// instance is the time from noticing the new version to finishing its
// first batch with it (taking the prepared worker, closing the old one,
// and the new instance's first call). It reports the p50, p99 and maximum
// over all swaps, and the time of an ordinary batch for comparison.
func BenchmarkPluginSwap(b *testing.B) {
	ctx := context.Background()
	root, err := filepath.Abs("..")
	if err != nil {
		b.Fatal(err)
	}
	var mods [2][]byte
	for i, dir := range []string{"plugins/conformance/go/counter", "host/testdata/plugins/counterv2"} {
		src, err := pluginbuild.Build(ctx, filepath.Join(root, dir), pluginbuild.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if mods[i], err = os.ReadFile(src.Path); err != nil {
			b.Fatal(err)
		}
	}
	dir := b.TempDir()
	plugin := filepath.Join(dir, "count.wasm")
	if err := os.WriteFile(plugin, mods[0], 0o644); err != nil {
		b.Fatal(err)
	}
	yaml := `name: swap
engine: {parallelism: 2, batch_size: 256}
sources:
  - name: gen
    type: generator
    key: k
    fields: [{name: k, kind: random_int, min: 0, max: 9999}, {name: v, kind: random_float, min: 0, max: 100}]
operators:
  - {name: by-k, type: key_by, field: k}
  - {name: count, type: map, plugin: "` + plugin + `"}
sinks: [{name: out, type: discard}]
`
	path := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		b.Fatal(err)
	}
	p, err := Load(ctx, path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(ctx)
	var (
		mu     sync.Mutex
		pauses []time.Duration
	)
	p.metrics.onSwap = func(d time.Duration) {
		mu.Lock()
		pauses = append(pauses, d)
		mu.Unlock()
	}
	swaps := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(pauses)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := p.Run(runCtx)
		done <- err
	}()
	for p.Stats().State != StateRunning || totalOut(p.Stats()) < 100_000 {
		time.Sleep(10 * time.Millisecond)
	}
	start, startOut := time.Now(), totalOut(p.Stats())
	b.ResetTimer()
	for i := range b.N {
		if err := os.WriteFile(plugin, mods[(i+1)%2], 0o644); err != nil {
			b.Fatal(err)
		}
		if err := p.ReloadPlugins(ctx, "count"); err != nil {
			b.Fatal(err)
		}
		for swaps() < 2*(i+1) {
			time.Sleep(100 * time.Microsecond)
		}
	}
	b.StopTimer()
	rate := float64(totalOut(p.Stats())-startOut) / time.Since(start).Seconds()
	stop()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(pauses)
	q := func(f float64) float64 { return float64(pauses[int(f*float64(len(pauses)-1))]) / 1e6 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(float64(pauses[len(pauses)-1])/1e6, "max-ms")
	// An ordinary batch: 256 records at the pipeline's rate per worker.
	b.ReportMetric(256/(rate/2)*1e3, "batch-ms")
}

func totalOut(st Stats) int64 {
	for _, s := range st.Stages {
		if s.Stage == "sink" {
			return s.Out
		}
	}
	return 0
}
