package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// fileSinkResumeYAML reads input.jsonl, sums each sensor's readings over
// 1-second event-time windows into out.jsonl, and sends the lines that are
// not JSON to dead.jsonl. %s is the checkpoints block.
const fileSinkResumeYAML = `name: file-resume
state: {backend: badger, dir: state}
%s
sources:
  - name: readings
    type: file
    path: input.jsonl
    format: jsonl
    event_time: {field: ts, format: epoch_ms}
operators:
  - {name: by-sensor, type: key_by, field: sensor}
  - name: sums
    type: window
    kind: tumbling
    size: 1s
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
	fileSinkT0      = int64(1_700_000_000_000)
	fileSinkSensors = 15
)

// fileSinkWindow is one result row: a sensor's window.
type fileSinkWindow struct {
	Sensor   string `json:"sensor"`
	Start    int64  `json:"window_start"`
	Total    int64  `json:"total"`
	Readings int64  `json:"readings"`
}

func (w fileSinkWindow) id() string { return fmt.Sprintf("%s@%d", w.Sensor, w.Start) }

// fileSinkInput writes input.jsonl into dir: 1500 readings of 15 sensors
// over 10 seconds of event time (150 windows), every 100th line not JSON.
// It returns the expected windows, computed record by record, and the
// number of bad lines.
func fileSinkInput(t *testing.T, dir string) (map[string]fileSinkWindow, int) {
	t.Helper()
	want := map[string]fileSinkWindow{}
	var b strings.Builder
	bad := 0
	for i := range 1500 {
		if i%100 == 99 {
			fmt.Fprintf(&b, "not json %d\n", i)
			bad++
			continue
		}
		s, ts, v := fmt.Sprint(i%fileSinkSensors), fileSinkT0+int64(i)*1000/150, int64(i%97)
		fmt.Fprintf(&b, `{"sensor":%q,"value":%d,"ts":%d}`+"\n", s, v, ts)
		w := fileSinkWindow{Sensor: s, Start: ts - ts%1000}
		w.Total, w.Readings = want[w.id()].Total+v, want[w.id()].Readings+1
		want[w.id()] = w
	}
	if err := os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return want, bad
}

// fileSinkSetUp writes the pipeline, with checkpoints block ck, and its
// input into a new directory.
func fileSinkSetUp(t *testing.T, ck string) (dir string, want map[string]fileSinkWindow, bad int) {
	t.Helper()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pipeline.yaml"), fmt.Appendf(nil, fileSinkResumeYAML, ck), 0o644); err != nil {
		t.Fatal(err)
	}
	want, bad = fileSinkInput(t, dir)
	return dir, want, bad
}

// fileSinkRun runs the pipeline in dir and requires it to succeed.
func fileSinkRun(t *testing.T, dir string) weirtest.Result {
	t.Helper()
	res := weirtest.Run(t, dir, "", "run", "pipeline.yaml")
	if res.Code != 0 {
		t.Fatalf("weir run exited %d\nstderr:\n%s", res.Code, res.Stderr)
	}
	return res
}

func fileSinkRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fileSinkCheckOnce requires out.jsonl to hold every window of want once
// with its sums, and dead.jsonl one dead letter for each of the bad lines.
func fileSinkCheckOnce(t *testing.T, dir string, want map[string]fileSinkWindow, bad int) {
	t.Helper()
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(fileSinkRead(t, filepath.Join(dir, "out.jsonl")), "\n"), "\n") {
		var w fileSinkWindow
		if err := json.Unmarshal([]byte(line), &w); err != nil {
			t.Fatalf("out.jsonl: %q: %v", line, err)
		}
		if w != want[w.id()] {
			t.Errorf("row %+v, want %+v", w, want[w.id()])
		}
		seen[w.id()]++
	}
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("window %s is in out.jsonl %d times, want once", id, seen[id])
		}
	}
	if n := strings.Count(fileSinkRead(t, filepath.Join(dir, "dead.jsonl")), "\n"); n != bad {
		t.Errorf("dead.jsonl holds %d dead letters, want %d", n, bad)
	}
}

// TestFileOutputsKeptOnResume runs a bounded, checkpointed pipeline, then
// runs it again, which resumes from the final checkpoint with nothing left
// to read: the file sink's rows and the dead-letter file's lines of the
// first run must still be there, once, in either delivery mode.
func TestFileOutputsKeptOnResume(t *testing.T) {
	tests := []struct{ name, delivery string }{
		{name: "at least once", delivery: "at_least_once"},
		{name: "exactly once", delivery: "exactly_once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, want, bad := fileSinkSetUp(t, "checkpoints: {interval: 200ms, delivery: "+tt.delivery+"}")
			fileSinkRun(t, dir)
			fileSinkCheckOnce(t, dir, want, bad)
			res := fileSinkRun(t, dir)
			if !strings.Contains(res.Stderr, "resuming from a checkpoint") {
				t.Fatalf("the second run did not resume from a checkpoint:\n%s", res.Stderr)
			}
			fileSinkCheckOnce(t, dir, want, bad)
		})
	}
}

// TestFileOutputsFreshRunRewrites runs a pipeline without checkpoints
// twice: each run starts from scratch, so each rewrites its files, as
// `> out.jsonl` would, rather than appending a second copy. (This is the
// behaviour the fix keeps; it holds before it too.)
func TestFileOutputsFreshRunRewrites(t *testing.T) {
	dir, want, bad := fileSinkSetUp(t, "")
	fileSinkRun(t, dir)
	fileSinkRun(t, dir)
	fileSinkCheckOnce(t, dir, want, bad)
}

// TestExactlyOnceFileTruncatedFails cuts a file output short between two
// exactly-once runs: the resuming run must refuse to start, saying the
// file holds less than the checkpoint recorded, rather than lose rows.
func TestExactlyOnceFileTruncatedFails(t *testing.T) {
	tests := []struct{ name, file string }{
		{name: "file sink", file: "out.jsonl"},
		{name: "dead-letter file", file: "dead.jsonl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, _, _ := fileSinkSetUp(t, "checkpoints: {interval: 200ms, delivery: exactly_once}")
			fileSinkRun(t, dir)
			path := filepath.Join(dir, tt.file)
			if err := os.Truncate(path, int64(len(fileSinkRead(t, path))/2)); err != nil {
				t.Fatal(err)
			}
			res := weirtest.Run(t, dir, "", "run", "pipeline.yaml")
			if res.Code == 0 || !strings.Contains(res.Stderr, tt.file) || !strings.Contains(res.Stderr, "fewer than the") {
				t.Fatalf("weir run exited %d; want a failure naming %s as shorter than its checkpoint\nstderr:\n%s", res.Code, tt.file, res.Stderr)
			}
		})
	}
}
