package exactlyonce_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/broker"
)

// BenchmarkSharedByTask measures pipeline-shared.yaml, exactly once, run
// as 1, 2 and 3 instances in one group over the same 400,000 readings
// produced beforehand into 12 partitions: the records per CPU-second of
// all the instances together (user and system time, from the processes'
// own accounting), and the wall time until the last window is out. Each
// iteration is a whole run: use -benchtime=1x.
//
//	go test ./examples/exactly-once/ -run '^$' -bench SharedByTask -benchtime=1x
func BenchmarkSharedByTask(b *testing.B) {
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) {
			for range b.N {
				sharedRun(b, n, "pipeline-shared.yaml")
			}
		})
	}
}

// BenchmarkRepartition measures what the repartition topic costs one
// instance, exactly once, as BenchmarkSharedByTask does, with the same
// window after a key_by on the sensor: pipeline.yaml, whose key_by says
// repartition: false (routed in the process, one active instance, as a
// pipeline made for one machine); in-process, pipeline-repartition.yaml
// without its repartition line (instances share the tasks, and one that
// owns them all routes in the process); and pipeline-repartition.yaml,
// whose key_by always goes through the topic.
//
//	go test ./examples/exactly-once/ -run '^$' -bench Repartition -benchtime=1x -count=3
func BenchmarkRepartition(b *testing.B) {
	auto := filepath.Join(b.TempDir(), "pipeline-auto.yaml")
	src, err := os.ReadFile("pipeline-repartition.yaml")
	if err != nil {
		b.Fatal(err)
	}
	if !strings.Contains(string(src), "    repartition: true\n") {
		b.Fatal("pipeline-repartition.yaml's key_by says no repartition: true")
	}
	if err := os.WriteFile(auto, []byte(strings.Replace(string(src), "    repartition: true\n", "", 1)), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, v := range []struct{ name, file string }{
		{"one-active", "pipeline.yaml"}, {"in-process", auto}, {"topic", "pipeline-repartition.yaml"},
	} {
		b.Run(v.name, func(b *testing.B) {
			for range b.N {
				sharedRun(b, 1, v.file)
			}
		})
	}
}

// sharedRun is one measured run of pipeline with n instances.
func sharedRun(b *testing.B, n int, pipeline string) {
	const records = 400_000
	br, err := broker.Start(broker.Options{Topics: fmt.Sprintf("readings:%d,sums:%d,readings.dead:1", sharedPartitions, sharedPartitions)})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	windows := produceAll(b, br.Addrs(), rng, records)
	dir := b.TempDir()
	weirtest.Weir(b) // built before the clock starts
	b.ResetTimer()
	start := time.Now()
	var procs []*weirProc
	for i := range n {
		name := fmt.Sprintf("i%d", i)
		env := append(os.Environ(),
			"WEIR_KAFKA_BROKERS="+strings.Join(br.Addrs(), ","),
			"WEIR_STATE_DIR="+filepath.Join(dir, "state-"+name),
			"WEIR_SOURCES_READINGS_INSTANCE_ID=bench-"+name,
		)
		procs = append(procs, startPipeline(b, dir, name, env, "--log-level", "info", pipeline))
	}
	got := consumeUntil(b, br.Addrs(), windows, false, procs[0].Done)
	wall := time.Since(start)
	var cpu time.Duration
	for _, p := range procs {
		if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
			b.Fatal(err)
		}
		<-p.Done
		cpu += p.Cmd.ProcessState.UserTime() + p.Cmd.ProcessState.SystemTime()
	}
	b.StopTimer()
	if len(got) < len(windows) {
		b.Fatalf("%d results, want %d windows", len(got), len(windows))
	}
	b.ReportMetric(float64(records)/cpu.Seconds(), "records/cpu-s")
	b.ReportMetric(wall.Seconds(), "wall-s")
	b.ReportMetric(cpu.Seconds(), "cpu-s")
}

// produceAll writes keyedReadings all at once, before the pipeline
// starts, and returns the reference windows they make.
func produceAll(b *testing.B, addrs []string, rng *rand.Rand, records int) map[string]window {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic("readings"))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	rs, want := keyedReadings(rng, records)
	for i := 0; i < len(rs); i += 5000 {
		if err := cl.ProduceSync(b.Context(), rs[i:min(i+5000, len(rs))]...).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	return want
}
