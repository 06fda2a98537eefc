package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/weir-stream/weir/host"
	"github.com/weir-stream/weir/host/admin"
	"github.com/weir-stream/weir/host/broker"
)

// benchOpts are the flags of weir bench.
type benchOpts struct {
	dir            string
	queries        []string
	events         int64
	firstEventRate float64
	kafka          bool
	inProcess      bool
	cpuProfile     string
}

// newBenchCmd is `weir bench`: the Nexmark queries of examples/nexmark run
// in this process, generator → pipeline → discard and, through the
// embedded broker, Kafka topic → pipeline → discard, with their speed.
func newBenchCmd(g *globalFlags) *cobra.Command {
	o := benchOpts{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run the Nexmark queries and report events/s, CPU per event, p99 batch latency and peak RSS",
		Long: `bench runs each Nexmark query of the examples/nexmark folder (qN.yaml) with
its sink replaced by discard: in-process, its nexmark source making the
bids; and through Kafka, the same bids first written to a topic on an
embedded broker (kfake, in this process) and the query reading them back
(only the read is timed). For each run it prints the bids processed per
second of wall time, CPU seconds (user + system, of the whole process, so
with Kafka the broker's work too) per bid, bids per CPU-second ("per
core"), the p99 of the engine's batch latency, and the peak RSS during the
run.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error { return runBench(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "examples/nexmark", "folder of the query pipelines")
	f.StringSliceVar(&o.queries, "queries", []string{"q0", "q1", "q2", "q3", "q5", "q7", "q8", "q11", "q12"}, "queries to run (file names without .yaml)")
	f.Int64Var(&o.events, "events", 5_000_000, "events of the Nexmark stream per run (bids are 46 in 50)")
	f.Float64Var(&o.firstEventRate, "first-event-rate", 100_000, "events per second of event time")
	f.BoolVar(&o.inProcess, "in-process", true, "run generator → query → discard")
	f.BoolVar(&o.kafka, "kafka", true, "run Kafka topic → query → discard on the embedded broker")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of each run to this folder (<query>-<path>.pprof)")
	return cmd
}

// benchResult is one run's measurements.
type benchResult struct {
	records int64
	wall    time.Duration
	cpu     time.Duration
	p99     time.Duration
	rssKB   int64
}

func runBench(cmd *cobra.Command, g *globalFlags, o benchOpts) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "weir-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	var shared *broker.Broker
	if o.kafka {
		if shared, err = broker.Start(broker.Options{}); err != nil {
			return err
		}
		defer shared.Close()
		fill := fmt.Sprintf(`name: bench-fill
sources:
  - {name: bids, type: nexmark, count: %d, first_event_rate: %v, kinds: [bid]}
sinks:
  - {name: topic, type: kafka, topic: nexmark.bids, linger: 5ms, compression: lz4}
`, o.events, o.firstEventRate)
		fmt.Fprintf(out, "filling topic nexmark.bids with the bids of %d events…\n", o.events)
		if _, err := benchRun(ctx, cmd, g, filepath.Join(tmp, "fill.yaml"), fill, shared, ""); err != nil {
			return fmt.Errorf("filling the topic: %w", err)
		}
	}

	fmt.Fprintf(out, "\n%d events (%d bids), first_event_rate %v/s, GOMAXPROCS %d, %s\n\n",
		o.events, o.events/50*46+min(max(o.events%50-4, 0), 46), o.firstEventRate, runtime.GOMAXPROCS(0), cpuModel())
	fmt.Fprintln(out, "| query | path | bids | wall s | bids/s | CPU µs/bid | bids/s per core | p99 batch latency | peak RSS |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|")
	for _, q := range o.queries {
		doc, err := os.ReadFile(filepath.Join(dir, q+".yaml"))
		if err != nil {
			return err
		}
		type path struct {
			name  string
			on    bool
			kafka bool
		}
		for _, p := range []path{{"in-process", o.inProcess, false}, {"kfake", o.kafka, true}} {
			if !p.on {
				continue
			}
			text, err := benchPipeline(doc, dir, q, o, p.kafka, filepath.Join(tmp, "dead-letters.jsonl"))
			if errors.Is(err, errJoinOverKafka) {
				fmt.Fprintf(out, "| %s | %s | — (joins persons and auctions; the topic holds bids) |\n", q, p.name)
				continue
			}
			if err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
			var b *broker.Broker
			if p.kafka {
				b = shared
			}
			prof := ""
			if o.cpuProfile != "" {
				prof = filepath.Join(o.cpuProfile, q+"-"+p.name+".pprof")
			}
			r, err := benchRun(ctx, cmd, g, filepath.Join(tmp, q+"-"+p.name+".yaml"), text, b, prof)
			if err != nil {
				return fmt.Errorf("%s %s: %w", q, p.name, err)
			}
			n := float64(r.records)
			fmt.Fprintf(out, "| %s | %s | %d | %.2f | %s | %.2f | %s | %s | %d MiB |\n", q, p.name, r.records,
				r.wall.Seconds(), human(n/r.wall.Seconds()), r.cpu.Seconds()*1e6/n, human(n/r.cpu.Seconds()),
				r.p99.Round(100*time.Microsecond), r.rssKB/1024)
		}
	}
	return nil
}

// errJoinOverKafka is benchPipeline's answer for a query of several
// sources (a join) on the Kafka path.
var errJoinOverKafka = errors.New("a query of several sources runs in process only")

// benchPipeline rewrites a query pipeline for a benchmark run: its source
// sized by o (or, with kafka, reading the topic instead, with the same
// event time), its sinks one discard sink, dead letters to the file dlq
// (a run with any fails), plugin paths absolute.
func benchPipeline(doc []byte, dir, q string, o benchOpts, kafka bool, dlq string) (string, error) {
	var p map[string]any
	if err := yaml.Unmarshal(doc, &p); err != nil {
		return "", err
	}
	srcs, _ := p["sources"].([]any)
	if len(srcs) == 0 {
		return "", fmt.Errorf("no source")
	}
	for _, s := range srcs {
		if m, _ := s.(map[string]any); m == nil || m["type"] != "nexmark" {
			return "", fmt.Errorf("want nexmark sources")
		}
	}
	switch {
	case kafka && len(srcs) > 1:
		// A join's sources (persons and auctions): the topic holds bids.
		return "", errJoinOverKafka
	case kafka:
		src := srcs[0].(map[string]any)
		k := map[string]any{"name": src["name"], "type": "kafka", "topics": []string{"nexmark.bids"},
			"group": "bench-" + q, "stop_at": "latest"}
		if et, ok := src["event_time"]; ok {
			k["event_time"] = et
		}
		p["sources"] = []any{k}
	default:
		for _, s := range srcs {
			m := s.(map[string]any)
			m["count"], m["first_event_rate"] = o.events, o.firstEventRate
		}
	}
	p["sinks"] = []any{map[string]any{"name": "discard", "type": "discard"}}
	p["dead_letter"] = map[string]any{"type": "file", "path": dlq}
	ops, _ := p["operators"].([]any)
	for _, op := range ops {
		if m, ok := op.(map[string]any); ok {
			if pl, ok := m["plugin"].(string); ok && !filepath.IsAbs(pl) {
				m["plugin"] = filepath.Join(dir, pl)
			}
		}
	}
	b, err := yaml.Marshal(p)
	return string(b), err
}

// benchRun writes the pipeline text to path, loads it, and runs it,
// measuring the run.
func benchRun(ctx context.Context, cmd *cobra.Command, g *globalFlags, path, text string, shared *broker.Broker, profile string) (benchResult, error) {
	var r benchResult
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return r, err
	}
	p, _, err := g.loadWith(ctx, cmd, path, host.Options{Broker: shared})
	if err != nil {
		return r, err
	}
	defer p.Close(ctx)
	srv, err := admin.Start(admin.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		return r, err
	}
	defer srv.Close()
	if err := srv.Register(p); err != nil {
		return r, err
	}
	runtime.GC()
	// Writing 5 to clear_refs resets the peak RSS (VmHWM) to the current RSS.
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return r, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return r, err
		}
	}
	cpu0, start := cpuTime(), time.Now()
	sum, err := p.Run(ctx)
	r.wall, r.cpu = time.Since(start), cpuTime()-cpu0
	if profile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return r, err
	}
	if sum.DeadLetter > 0 {
		return r, fmt.Errorf("%d dead letters", sum.DeadLetter)
	}
	for _, s := range sum.Stages {
		if s.Stage == "source" {
			r.records += s.Out
		}
	}
	r.rssKB = peakRSS()
	r.p99, err = batchLatencyP99("http://" + srv.Addr() + "/metrics")
	return r, err
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSS is VmHWM from /proc/self/status in KiB, or the rusage maximum
// (for the process's whole life) where there is no /proc.
func peakRSS() int64 {
	if f, err := os.Open("/proc/self/status"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				return n
			}
		}
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return int64(ru.Maxrss)
}

// batchLatencyP99 reads the weir_batch_latency_seconds histogram from the
// admin server and returns its 99th percentile, interpolated linearly
// within the bucket that holds it.
func batchLatencyP99(url string) (time.Duration, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	type bucket struct{ le, n float64 }
	var bs []bucket
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "weir_batch_latency_seconds_bucket{") {
			continue
		}
		i := strings.Index(line, `le="`)
		j := strings.Index(line[i+4:], `"`)
		le, err1 := strconv.ParseFloat(line[i+4:i+4+j], 64)
		n, err2 := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		bs = append(bs, bucket{le, n})
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
	if len(bs) == 0 || bs[len(bs)-1].n == 0 {
		return 0, nil
	}
	target := 0.99 * bs[len(bs)-1].n
	lo, below := 0.0, 0.0
	for _, b := range bs {
		if b.n >= target {
			hi := b.le
			if math.IsInf(hi, 1) {
				hi = lo // beyond the last bound: report the bound
			}
			frac := 0.0
			if b.n > below {
				frac = (target - below) / (b.n - below)
			}
			return time.Duration((lo + frac*(hi-lo)) * float64(time.Second)), nil
		}
		lo, below = b.le, b.n
	}
	return 0, nil
}

func human(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2f M", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.0f K", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}
