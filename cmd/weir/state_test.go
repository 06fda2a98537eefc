package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

const windowStateYAML = `name: windows
state: {backend: badger, dir: state}
checkpoints: {interval: 1h}
sources: [{name: in, type: file, path: in.json}]
operators:
  - {name: by, type: key_by, field: id}
  - name: fives
    type: window
    kind: count
    count: 5
    aggregates: [{func: sum, field: v, as: total}]
sinks: [{name: out, type: stdout}]
`

// TestStateCommands runs a pipeline that leaves open count windows in its
// state, then the state commands on it, in order: each case sees what the
// ones before it did.
func TestStateCommands(t *testing.T) {
	dir := pipelineDir(t, windowStateYAML, map[string]string{
		"in.json":   `{"id":"a","v":1}` + "\n" + `{"id":"b","v":2}` + "\n" + `{"id":"a","v":3}` + "\n",
		"copy.yaml": strings.Replace(windowStateYAML, "dir: state", "dir: copy", 1),
	})
	if res := weirtest.Run(t, dir, "", "run", "pipeline.yaml"); res.Code != 0 {
		t.Fatalf("weir run exited %d\n%s", res.Code, res.Stderr)
	}
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    []string // substrings of standard output
		wantErr    []string // substrings of standard error
		wantOutput func(t *testing.T, stdout string)
	}{
		{
			name:    "inspect lists operators",
			args:    []string{"state", "inspect", "pipeline.yaml"},
			wantOut: []string{"pipeline:   windows", "checkpoint: epoch 1", "source in resumes after 3 records", "fives     window  2     2"},
		},
		{
			name:    "inspect lists keys",
			args:    []string{"state", "inspect", "pipeline.yaml", "--operator", "fives"},
			wantOut: []string{`"a"  1`, `"b"  1`},
		},
		{
			name: "inspect a key as JSON",
			args: []string{"state", "inspect", "pipeline.yaml", "--operator", "fives", "--key", "a", "--json"},
			wantOutput: func(t *testing.T, stdout string) {
				lines := strings.Split(strings.TrimSpace(stdout), "\n")
				if len(lines) != 2 {
					t.Fatalf("want a header and one entry:\n%s", stdout)
				}
				var e map[string]any
				if err := json.Unmarshal([]byte(lines[1]), &e); err != nil {
					t.Fatal(err)
				}
				if e["kind"] != "count" || e["records"] != 2.0 || e["key"] != "a" || e["operator"] != "fives" {
					t.Errorf("entry %s", lines[1])
				}
			},
		},
		{
			name:     "--key needs --operator",
			args:     []string{"state", "inspect", "pipeline.yaml", "--key", "a"},
			wantCode: 2,
			wantErr:  []string{"--key needs --operator"},
		},
		{
			name:    "export",
			args:    []string{"state", "export", "pipeline.yaml", "-o", "saved.jsonl"},
			wantErr: []string{"exported 2 state entries"},
		},
		{
			name:    "import into a new directory",
			args:    []string{"state", "import", "copy.yaml", "saved.jsonl"},
			wantOut: []string{"imported 2 state entries"},
		},
		{
			name:    "the copy has the same state",
			args:    []string{"state", "inspect", "copy.yaml", "--operator", "fives", "--key", "b"},
			wantOut: []string{"count window, 1 records"},
		},
		{
			name:     "import again is refused",
			args:     []string{"state", "import", "copy.yaml", "saved.jsonl"},
			wantCode: 1,
			wantErr:  []string{"saved.jsonl: state dir", "is not empty", "--force"},
		},
		{
			name:    "import again with --force",
			args:    []string{"state", "import", "copy.yaml", "saved.jsonl", "--force"},
			wantOut: []string{"imported 2 state entries"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := weirtest.Run(t, dir, "", tt.args...)
			if res.Code != tt.wantCode {
				t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", res.Code, tt.wantCode, res.Stdout, res.Stderr)
			}
			for _, s := range tt.wantOut {
				if !strings.Contains(res.Stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, res.Stdout)
				}
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(res.Stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, res.Stderr)
				}
			}
			if tt.wantOutput != nil {
				tt.wantOutput(t, res.Stdout)
			}
		})
	}
	// The copy resumes from the checkpoint, after the three records read:
	// a's window, two records in the imported state, gets three more.
	f, err := os.OpenFile(filepath.Join(dir, "in.json"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(strings.Repeat(`{"id":"a","v":10}`+"\n", 3))
	f.Close()
	res := weirtest.Run(t, dir, "", "run", "copy.yaml")
	if res.Code != 0 || !strings.Contains(res.Stdout, `"total":34`) {
		t.Fatalf("run on the imported state: exit %d\nstdout:\n%s\nstderr:\n%s", res.Code, res.Stdout, res.Stderr)
	}
}
