package host_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weir-stream/weir/host"
	"github.com/weir-stream/weir/state"
)

// repoRoot returns the module root, for plugin paths.
func repoRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

func writePipeline(t testing.TB, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pipeline.yaml")
	yaml = strings.ReplaceAll(yaml, "{{root}}", repoRoot(t))
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runOutput loads and runs the pipeline file at path and returns what it
// printed to standard output.
func runOutput(t *testing.T, path string) string {
	t.Helper()
	var out bytes.Buffer
	ctx := context.Background()
	p, err := host.Load(ctx, path, host.Options{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// writeReadings writes n JSON lines {"k":"k<i%50>","ts":<i*10>} to a file
// and returns its path.
func writeReadings(t *testing.T, n int) string {
	t.Helper()
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf(`{"k":"k%d","ts":%d}`, i%50, i*10))
	}
	input := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return input
}

func TestLoadErrorKinds(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want error
	}{
		{name: "invalid file", yaml: "name: p\nsources: []\n", want: host.ErrConfig},
		{name: "not a weir module", want: host.ErrPlugin, yaml: `name: p
sources: [{name: in, type: stdin}]
operators: [{name: m, type: map, plugin: "{{root}}/host/internal/wasm/testdata/no_version.wasm"}]
sinks: [{name: out, type: stdout}]
`},
		{name: "init traps", want: host.ErrPlugin, yaml: `name: p
sources: [{name: in, type: stdin}]
operators: [{name: m, type: map, plugin: "{{root}}/host/internal/wasm/testdata/init_trap.wasm"}]
sinks: [{name: out, type: stdout}]
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := host.Load(context.Background(), writePipeline(t, tt.yaml), host.Options{})
			if err == nil {
				p.Close(context.Background())
				t.Fatal("Load succeeded")
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Load error %q does not wrap %v", err, tt.want)
			}
		})
	}
}

// TestRunSummary runs a keyed, stateful Go plugin and checks output, state
// scoping and the summary's accounting.
func TestRunSummary(t *testing.T) {
	path := writePipeline(t, `name: counter
sources:
  - name: gen
    type: generator
    count: 6
    key: k
    fields:
      - {name: k, kind: random_choice, values: [a]}
operators:
  - {name: count, type: map, plugin: "{{root}}/plugins/conformance/go/counter"}
sinks: [{name: out, type: stdout}]
`)
	var stdout bytes.Buffer
	ctx := context.Background()
	p, err := host.Load(ctx, path, host.Options{Stdout: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	sum, err := p.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 6 || lines[5] != `{"key":"a","count":6}` {
		t.Fatalf("output:\n%s", stdout.String())
	}
	want := []host.StageCounts{
		{Stage: "source", Name: "gen", Out: 6},
		{Stage: "operator", Name: "count", In: 6, Out: 6},
		{Stage: "sink", Name: "out", In: 6, Out: 6},
	}
	if len(sum.Stages) != len(want) {
		t.Fatalf("summary %+v", sum)
	}
	for i := range want {
		if sum.Stages[i] != want[i] {
			t.Errorf("stage %d = %+v, want %+v", i, sum.Stages[i], want[i])
		}
	}
}

// TestStateSurvivesPluginUpgrade runs a stateful plugin with checkpointed
// badger state, then the plugin's next version on the same state: the
// operator's state is keyed by its name, not by the plugin's code, so the
// new version's counts continue where the old one's stopped.
func TestStateSurvivesPluginUpgrade(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "in.jsonl")
	pipeline := filepath.Join(dir, "pipeline.yaml")
	ctx := context.Background()
	for i, tc := range []struct {
		plugin, input string
		want          []string
	}{
		{"plugins/conformance/go/counter", `{"k":"a"}` + "\n" + `{"k":"a"}` + "\n" + `{"k":"b"}` + "\n",
			[]string{`{"key":"a","count":1}`, `{"key":"a","count":2}`, `{"key":"b","count":1}`}},
		{"host/testdata/plugins/counterv2", `{"k":"a"}` + "\n" + `{"k":"b"}` + "\n",
			[]string{`{"key":"a","count":3,"version":2}`, `{"key":"b","count":2,"version":2}`}},
	} {
		// The second run reads the same file, grown: the checkpoint says
		// how many records the first run had read.
		f, err := os.OpenFile(input, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = f.WriteString(tc.input)
			f.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		yaml := `name: counter
state: {backend: badger, dir: state}
checkpoints: {interval: 1s}
sources: [{name: in, type: file, path: ` + input + `}]
operators:
  - {name: by-k, type: key_by, field: k}
  - {name: count, type: map, plugin: "` + filepath.Join(repoRoot(t), tc.plugin) + `"}
sinks: [{name: out, type: stdout}]
`
		if err := os.WriteFile(pipeline, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout bytes.Buffer
		p, err := host.Load(ctx, pipeline, host.Options{Stdout: &stdout})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if got := strings.Split(strings.TrimSpace(stdout.String()), "\n"); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Fatalf("run %d (%s) printed:\n%s\nwant:\n%s", i+1, tc.plugin, stdout.String(), strings.Join(tc.want, "\n"))
		}
	}
}

// TestStateTTLEventTime runs the stateful counter with a one-second state
// TTL in event time: a key's count starts over when its previous record is
// a second or more older, and the end of the input, whose final watermark
// passes every stamp, leaves no state behind.
func TestStateTTLEventTime(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "in.jsonl")
	lines := []string{`{"k":"a","ts":0}`, `{"k":"a","ts":500}`, `{"k":"b","ts":600}`, `{"k":"a","ts":1400}`,
		`{"k":"a","ts":3000}`, `{"k":"b","ts":3100}`, `{"k":"a","ts":3100}`}
	if err := os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := writePipeline(t, `name: ttl
sources: [{name: in, type: file, path: `+input+`, event_time: {field: ts}}]
operators:
  - {name: by-k, type: key_by, field: k}
  - {name: count, type: map, plugin: "{{root}}/plugins/conformance/go/counter", state_ttl: 1s, state_ttl_time: event}
sinks: [{name: out, type: stdout}]
`)
	var stdout bytes.Buffer
	st := state.NewMemory()
	ctx := context.Background()
	p, err := host.Load(ctx, path, host.Options{Stdout: &stdout, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{`{"key":"a","count":1}`, `{"key":"a","count":2}`, `{"key":"b","count":1}`, `{"key":"a","count":3}`,
		`{"key":"a","count":1}`, `{"key":"b","count":1}`, `{"key":"a","count":2}`}
	if got := strings.TrimSpace(stdout.String()); got != strings.Join(want, "\n") {
		t.Fatalf("printed:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if st.Len() != 0 {
		t.Fatalf("%d state entries left after the final watermark", st.Len())
	}
}

// TestWindowMaxKeysInMemory: a window bounded to 3 keys in memory, the
// rest spilled to badger, gives the unbounded window's results.
func TestWindowMaxKeysInMemory(t *testing.T) {
	input := writeReadings(t, 2000)
	run := func(bound string) string {
		return runOutput(t, writePipeline(t, `name: bounded
engine: {memory_limit: 1GiB}
state: {backend: badger, dir: `+filepath.Join(t.TempDir(), "state")+`}
sources: [{name: in, type: file, path: `+input+`, event_time: {field: ts}}]
operators:
  - {name: by-k, type: key_by, field: k}
  - {name: w, type: window, kind: tumbling, size: 1s, time_format: epoch_ms, aggregates: [{func: count, as: n}]`+bound+`}
sinks: [{name: out, type: stdout}]
`))
	}
	unbounded, bounded := run(""), run(", max_keys_in_memory: 3")
	if strings.Count(unbounded, "\n") != 1000 || bounded != unbounded {
		t.Fatalf("bounded output differs, or not 1000 windows (%d):\n%s", strings.Count(unbounded, "\n"), bounded)
	}
}

// TestWindowWithoutKeyByInParallel: a window over a stream with no key_by
// (and records without keys) at parallelism 2 counts each window once, over
// all its records, as Flink's windowAll does; split between workers it
// would give each window twice, with part counts.
func TestWindowWithoutKeyByInParallel(t *testing.T) {
	input := writeReadings(t, 2000)
	out := runOutput(t, writePipeline(t, `name: all
engine: {parallelism: 2, batch_size: 16}
sources: [{name: in, type: file, path: `+input+`, event_time: {field: ts}}]
operators:
  - {name: w, type: window, kind: tumbling, size: 1s, time_format: epoch_ms, aggregates: [{func: count, as: n}]}
sinks: [{name: out, type: stdout}]
`))
	got := strings.Split(strings.TrimSpace(out), "\n")
	if len(got) != 20 {
		t.Fatalf("%d results, want one for each of the 20 windows:\n%s", len(got), out)
	}
	for _, line := range got {
		if !strings.Contains(line, `"n":100`) {
			t.Fatalf("a window's count is not its 100 records: %s\nall:\n%s", line, out)
		}
	}
}

// TestWindowPluginAggregateBesideBuiltIns: a window whose aggregates list
// built-in aggregates and a plugin's gives the built-in layout with the
// plugin's result, a JSON value, as its field, where it is listed; the
// plugin's result gets each window's key and bounds (weir_agg_result_ctx).
// The operator-level plugin, on the same windows, gives its result alone.
func TestWindowPluginAggregateBesideBuiltIns(t *testing.T) {
	input := writeReadings(t, 200) // k0..k49, ts 0..1990: two of each key per 1 s window
	run := func(window string) []string {
		out := runOutput(t, writePipeline(t, `name: mixed
sources: [{name: in, type: file, path: `+input+`, event_time: {field: ts}}]
operators:
  - {name: by-k, type: key_by, field: k}
  - {name: w, type: window, kind: tumbling, size: 1s, time_format: epoch_ms, `+window+`}
sinks: [{name: out, type: stdout}]
`))
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 100 {
			t.Fatalf("%d results, want 100 (50 keys, 2 windows):\n%s", len(lines), out)
		}
		return lines
	}
	mixed := run(`aggregates: [{func: count, as: n}, {plugin: "{{root}}/plugins/conformance/go/window_info", as: info}, {func: max, field: ts, as: last}]`)
	want := `{"key":"k7","window_start":1000,"window_end":2000,"n":2,"info":{"key":"k7","start":1000,"end":2000,"count":2},"last":1570}`
	if !slices.Contains(mixed, want) {
		t.Errorf("no line %s among:\n%s", want, strings.Join(mixed, "\n"))
	}
	whole := run(`plugin: "{{root}}/plugins/conformance/go/window_info"`)
	want = `{"key":"k7","start":1000,"end":2000,"count":2}`
	if !slices.Contains(whole, want) {
		t.Errorf("operator-level plugin: no line %s among:\n%s", want, strings.Join(whole, "\n"))
	}
}

// TestWindowPluginAggregateLoadError: a plugin listed among a window's
// aggregates that cannot run as an aggregate is reported at its entry.
func TestWindowPluginAggregateLoadError(t *testing.T) {
	path := writePipeline(t, `name: bad
sources: [{name: in, type: stdin}]
operators:
  - name: w
    type: window
    kind: count
    count: 2
    aggregates:
      - {func: count, as: n}
      - {plugin: "{{root}}/plugins/conformance/wat/words.wasm", as: p}
sinks: [{name: out, type: stdout}]
`)
	ctx := context.Background()
	p, err := host.Load(ctx, path, host.Options{})
	if err == nil {
		p.Close(ctx)
		t.Fatal("loaded a map module as a window's aggregate")
	}
	if !strings.Contains(err.Error(), `pipeline.yaml:10:18: operators[0] "w".aggregates[1].plugin: `) || !errors.Is(err, host.ErrPlugin) {
		t.Errorf("error %v\nwant a plugin error at aggregates[1].plugin, line 10", err)
	}
}
