package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-stream/weir/host/internal/record"
)

// TestFileOutputPositioning checks how a file sink places its file: a run
// without a checkpoint truncates it once it writes or flushes (not when it
// only closes), and a resumed run cuts it back to the recorded length, or
// after its last complete line, and appends.
func TestFileOutputPositioning(t *testing.T) {
	tests := []struct {
		name    string
		before  string // the file's contents before the sink opens it ("-": missing)
		resume  *int64 // Resume's length, if the run resumes
		write   []string
		close   bool // close without flushing first
		want    string
		wantErr string
	}{
		{name: "fresh run truncates on flush", before: "old\n", want: ""},
		{name: "fresh run truncates on write", before: "old\nrows\n", write: []string{`{"a":1}`}, want: "{\"a\":1}\n"},
		{name: "closing alone keeps the file", before: "old\n", close: true, want: "old\n"},
		{name: "missing file is created", before: "-", write: []string{`1`}, want: "1\n"},
		{name: "resume appends", before: "1\n2\n", resume: ptr(-1), write: []string{`3`}, want: "1\n2\n3\n"},
		{name: "resume drops a torn line", before: "1\n2\n{\"to", resume: ptr(-1), write: []string{`3`}, want: "1\n2\n3\n"},
		{name: "resume of a torn first line", before: "{\"to", resume: ptr(-1), write: []string{`3`}, want: "3\n"},
		{name: "resume cuts back to the length", before: "1\n2\n9\n", resume: ptr(4), write: []string{`3`}, want: "1\n2\n3\n"},
		{name: "resume at the full length", before: "1\n2\n", resume: ptr(4), want: "1\n2\n"},
		{name: "resume of a missing file at 0", before: "-", resume: ptr(0), write: []string{`1`}, want: "1\n"},
		{name: "resume of a truncated file fails", before: "1\n", resume: ptr(4), want: "1\n",
			wantErr: "holds 2 bytes, fewer than the 4 the last checkpoint recorded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.jsonl")
			if tt.before != "-" {
				writeTestFile(t, path, tt.before)
			}
			s, err := NewFileSink("out", path, SinkRaw)
			if err != nil {
				t.Fatal(err)
			}
			err = positionAndWrite(s, tt.resume, tt.write, tt.close)
			if cerr := s.Close(); err == nil {
				err = cerr
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatal(err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
			if got := readTestFile(t, path); got != tt.want {
				t.Fatalf("file holds %q, want %q", got, tt.want)
			}
		})
	}
}

func ptr(n int64) *int64 { return &n }

// positionAndWrite resumes s if resume is set, writes recs, and flushes
// unless justClose.
func positionAndWrite(s Sink, resume *int64, recs []string, justClose bool) error {
	if resume != nil {
		if err := s.(FileOutput).Resume(*resume); err != nil {
			return err
		}
	}
	var batch []record.Record
	for _, v := range recs {
		batch = append(batch, record.Record{Value: []byte(v)})
	}
	if len(batch) > 0 {
		if _, err := s.Write(batch, nil, nil); err != nil {
			return err
		}
	}
	if justClose {
		return nil
	}
	return s.Flush()
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readTestFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// someBadSource hands out n records, every tenth of which is not JSON, so
// that a JSON file sink dead-letters it.
type someBadSource struct{ n int }

func (s *someBadSource) Name() string     { return "mixed" }
func (s *someBadSource) Replayable() bool { return true }
func (s *someBadSource) Run(ctx context.Context, out *Out) error {
	for i := range s.n {
		v := fmt.Sprintf(`{"i":%d}`, i)
		if i%10 == 9 {
			v = fmt.Sprintf("bad %d", i)
		}
		if err := out.Add(record.Record{Value: []byte(v), Origin: record.Origin{Partition: -1, Offset: int64(i)}}); err != nil {
			return err
		}
	}
	return out.Flush()
}

// fileRun runs someBadSource into a JSON file sink and a dead-letter file
// in dir, with checkpoints (exact: recording the files' lengths), from
// restore if set, and returns the last checkpoint.
func fileRun(t *testing.T, dir string, exact bool, restore *Checkpoint) *Checkpoint {
	t.Helper()
	sink, err := NewFileSink("out", filepath.Join(dir, "out.jsonl"), SinkJSON)
	if err != nil {
		t.Fatal(err)
	}
	dl, err := NewDeadLetterFile(filepath.Join(dir, "dead.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var last *Checkpoint
	p := &Pipeline{Sources: []Source{&someBadSource{n: 200}}, Sinks: []Sink{sink}, DeadLetter: dl, BatchSize: 16}
	p.Checkpointing = &Checkpointing{Restore: restore, Commit: func(_ context.Context, cp *Checkpoint) error {
		if err := p.SyncOutputs(cp, exact); err != nil {
			return err
		}
		b, err := cp.Marshal()
		if err == nil {
			last, err = UnmarshalCheckpoint(b)
		}
		return err
	}}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return last
}

// TestFileOutputsResume runs a checkpointed pipeline with a file sink and
// a dead-letter file, adds what a crash after its last checkpoint would
// leave (a complete row and a torn one), and runs it again from that
// checkpoint: at least once, the files keep everything but the torn row;
// exactly once, they are cut back to the checkpoint. A second run with no
// checkpoint rewrites them.
func TestFileOutputsResume(t *testing.T) {
	tests := []struct {
		name   string
		exact  bool
		resume bool
		extra  string // what is left of the rows written after the checkpoint
	}{
		{name: "at least once", resume: true, extra: "{\"late\":1}\n"},
		{name: "exactly once", exact: true, resume: true},
		{name: "no checkpoint to resume from", exact: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cp := fileRun(t, dir, tt.exact, nil)
			if tt.exact != (len(cp.Outputs) == 2) {
				t.Fatalf("checkpoint outputs %+v, exact %v", cp.Outputs, tt.exact)
			}
			files := []string{filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "dead.jsonl")}
			want := make([]string, len(files))
			for i, f := range files {
				want[i] = readTestFile(t, f)
				writeTestFile(t, f, want[i]+"{\"late\":1}\n{\"to")
				want[i] += tt.extra
			}
			if !tt.resume {
				cp = nil
			}
			fileRun(t, dir, tt.exact, cp)
			for i, f := range files {
				if got := readTestFile(t, f); got != want[i] {
					t.Errorf("%s after the second run:\n%s\nwant:\n%s", f, got, want[i])
				}
			}
			if n := strings.Count(want[0], `{"i":`); n != 180 {
				t.Errorf("the sink holds %d rows, want 180", n)
			}
			if n := strings.Count(want[1], `"reason"`); n != 20 {
				t.Errorf("the dead-letter file holds %d rows, want 20", n)
			}
		})
	}
}
