package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// fileSinkCrashYAML sums each sensor's readings over 100 ms event-time
// windows into out.jsonl, from a throttled generator: reading i is sensor
// i%20 with value i%97 at event time t0+i ms. A second generator's records
// have no sensor field, so key_by sends every one to dead.jsonl. %s is the
// delivery mode.
const fileSinkCrashYAML = `name: file-crash
state: {backend: badger, dir: state}
checkpoints: {interval: 200ms, delivery: %s}
sources:
  - name: readings
    type: generator
    rate: 5000
    fields:
      - {name: sensor, kind: sequence, start: 0, end: 19}
      - {name: value, kind: sequence, start: 0, end: 96}
      - {name: ts, kind: sequence, start: 1700000000000, end: 1700000009999}
    count: 10000
    event_time: {field: ts, format: epoch_ms}
  - name: strays
    type: generator
    rate: 1000
    count: 2000
    fields:
      - {name: n, kind: sequence, start: 0}
operators:
  - {name: by-sensor, type: key_by, field: sensor}
  - name: sums
    type: window
    kind: tumbling
    size: 100ms
    key_field: sensor
    time_format: epoch_ms
    aggregates:
      - {func: sum, field: value, as: total}
      - {func: count, as: readings}
sinks:
  - {name: out, type: file, path: out.jsonl}
dead_letter: {type: file, path: dead.jsonl}
`

const (
	fileSinkCrashReadings = 10000
	fileSinkCrashStrays   = 2000
	fileSinkCrashKills    = 5
)

// fileSinkCrashWant is the pipeline's result, computed reading by reading.
func fileSinkCrashWant() map[string]fileSinkWindow {
	want := map[string]fileSinkWindow{}
	for i := range fileSinkCrashReadings {
		ts, v := fileSinkT0+int64(i), int64(i%97)
		w := fileSinkWindow{Sensor: fmt.Sprint(i % 20), Start: ts - ts%100}
		w.Total, w.Readings = want[w.id()].Total+v, want[w.id()].Readings+1
		want[w.id()] = w
	}
	return want
}

// TestFileOutputsSurviveKills SIGKILLs a checkpointed pipeline writing a
// file sink and a dead-letter file five times, each once its output has
// grown to a random size, beyond the last, and restarts it; the last run
// ends with its bounded input. At least once, the files must hold every
// window, with the right sums, and every dead letter, repeats allowed;
// exactly once, each exactly once.
func TestFileOutputsSurviveKills(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		delivery string
		once     bool
	}{
		{name: "at least once", delivery: "at_least_once"},
		{name: "exactly once", delivery: "exactly_once", once: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "pipeline.yaml"), fmt.Appendf(nil, fileSinkCrashYAML, tt.delivery), 0o644); err != nil {
				t.Fatal(err)
			}
			want := fileSinkCrashWant()
			fileSinkAwait(t, fileSinkKillRestart(t, dir, len(want), nil, nil, func(int) {}))
			fileSinkCheckWindows(t, dir, want, tt.once)
			fileSinkCheckStrays(t, dir, fileSinkCrashStrays, fileSinkStrayOffset, tt.once)
		})
	}
}

// fileSinkProc is one run of weir, its output logged to a file, which the
// test prints if it fails.
type fileSinkProc struct {
	cmd  *exec.Cmd
	done chan error
	log  string // the run's stdout and stderr
}

// started reports whether the run has started its pipeline, and so
// drains on SIGTERM rather than dying of it.
func (p *fileSinkProc) started() bool {
	b, _ := os.ReadFile(p.log)
	return bytes.Contains(b, []byte(`msg="pipeline started"`))
}

func fileSinkStart(t *testing.T, dir string, env []string) *fileSinkProc {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, "run-*.log"))
	log := filepath.Join(dir, fmt.Sprintf("run-%d.log", len(logs)+1))
	p := &fileSinkProc{cmd: exec.Command(weirtest.Weir(t), "run", "pipeline.yaml"), done: make(chan error, 1), log: log}
	p.cmd.Dir, p.cmd.Env = dir, env
	logf, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait(); logf.Close() }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		if t.Failed() {
			b, _ := os.ReadFile(log)
			t.Logf("%s:\n%s", filepath.Base(log), b)
		}
	})
	return p
}

// fileSinkRows counts the lines of out.jsonl in dir.
func fileSinkRows(dir string) int {
	b, _ := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	return bytes.Count(b, []byte("\n"))
}

// fileSinkKillRestart runs the pipeline in dir, with env, and SIGKILLs it
// five times, each once out.jsonl holds a random number of rows (1/40 to
// 1/12 of rows) more than when the run before was killed: so each run is
// killed at a random point after it wrote new rows, whatever its resume
// cut back first. When ready is not nil, the k-th run is killed only once
// ready(k) holds too. It calls between(k) after the k-th kill, and returns
// the run started after the last. A run that ends before its kill fails
// the test and ends the runs early (nil).
func fileSinkKillRestart(t *testing.T, dir string, rows int, env []string, ready func(k int) bool, between func(k int)) *fileSinkProc {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	killedAt := 0
	for k := range fileSinkCrashKills {
		target := min(killedAt+rows/40+rng.IntN(rows/12-rows/40), rows-1)
		p := fileSinkStart(t, dir, env)
		exited := false
		weirtest.PollUntil(t, time.Minute, fmt.Sprintf("out.jsonl to reach %d rows", target), func() bool {
			select {
			case <-p.done:
				exited = true
				return true
			default:
				return fileSinkRows(dir) >= target && (ready == nil || ready(k))
			}
		})
		if exited {
			// Only if the file lost rows: check what it holds.
			t.Errorf("run %d ended by itself before out.jsonl reached %d rows", k+1, target)
			return nil
		}
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.done
		killedAt = fileSinkRows(dir)
		t.Logf("run %d killed at %d rows", k+1, killedAt)
		between(k)
	}
	return fileSinkStart(t, dir, env)
}

// fileSinkAwait waits for a run to end by itself, successfully.
func fileSinkAwait(t *testing.T, p *fileSinkProc) {
	t.Helper()
	if p == nil {
		return
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("the last run failed: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the last run did not end")
	}
}

// fileSinkLines returns the lines of a file, failing on one that is not
// a JSON object (a torn or merged line).
func fileSinkLines(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	for _, l := range lines {
		if !json.Valid(l) {
			t.Fatalf("%s: line %q is not JSON", filepath.Base(path), l)
		}
	}
	return lines
}

// fileSinkCheckWindows requires out.jsonl to hold every window of want,
// each row with the window's sums, and nothing else; once, no window twice.
func fileSinkCheckWindows(t *testing.T, dir string, want map[string]fileSinkWindow, once bool) {
	t.Helper()
	seen := map[string]int{}
	for _, l := range fileSinkLines(t, filepath.Join(dir, "out.jsonl")) {
		var w fileSinkWindow
		json.Unmarshal(l, &w)
		if ref, ok := want[w.id()]; !ok || w != ref {
			t.Errorf("row %s, want %+v", l, ref)
		}
		seen[w.id()]++
	}
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	fileSinkCheckSeen(t, "out.jsonl", ids, seen, once)
}

// fileSinkDeadLetter is what the tests read of a dead letter.
type fileSinkDeadLetter struct {
	Source string `json:"source"`
	Offset int64  `json:"offset"`
	Reason string `json:"reason"`
	Value  string `json:"value"`
}

// fileSinkStrayOffset names a dead letter of the strays source by its
// offset, the stray's number.
func fileSinkStrayOffset(dl fileSinkDeadLetter) (int, bool) {
	return int(dl.Offset), dl.Source == "strays" && strings.Contains(dl.Reason, "field not found")
}

// fileSinkCheckStrays requires dead.jsonl to hold a dead letter for every
// one of n strays, numbered 0 to n-1 by number, and nothing else; once,
// none twice.
func fileSinkCheckStrays(t *testing.T, dir string, n int, number func(fileSinkDeadLetter) (int, bool), once bool) {
	t.Helper()
	seen := map[string]int{}
	for _, l := range fileSinkLines(t, filepath.Join(dir, "dead.jsonl")) {
		var dl fileSinkDeadLetter
		json.Unmarshal(l, &dl)
		n, ok := number(dl)
		if !ok {
			t.Errorf("unexpected dead letter %s", l)
			continue
		}
		seen[fmt.Sprint(n)]++
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprint(i)
	}
	fileSinkCheckSeen(t, "dead.jsonl", ids, seen, once)
}

// fileSinkCheckSeen requires every one of ids to have been seen, and, once,
// none more than once.
func fileSinkCheckSeen(t *testing.T, file string, ids []string, seen map[string]int, once bool) {
	t.Helper()
	var missing, repeated []string
	for _, id := range ids {
		switch n := seen[id]; {
		case n == 0:
			missing = append(missing, id)
		case n > 1:
			repeated = append(repeated, id)
		}
	}
	slices.Sort(missing)
	slices.Sort(repeated)
	if len(missing) > 0 {
		t.Errorf("%s: %d of %d missing, first %v", file, len(missing), len(ids), missing[:min(len(missing), 5)])
	}
	if once && len(repeated) > 0 {
		t.Errorf("%s: %d of %d more than once, first %v", file, len(repeated), len(ids), repeated[:min(len(repeated), 5)])
	}
	t.Logf("%s: %d expected, %d missing, %d repeated", file, len(ids), len(missing), len(repeated))
}
