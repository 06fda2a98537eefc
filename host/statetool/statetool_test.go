package statetool_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/weir-stream/weir/host"
	"github.com/weir-stream/weir/host/statetool"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-stream/weir/state"
)

// stateRepoRoot returns the module root, for plugin paths.
func stateRepoRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// statePipeline writes a pipeline file into dir whose state is in
// dir/stateDir; {{root}} is the module root, {{state}} the state dir.
func statePipeline(t testing.TB, dir, stateDir, yaml string) string {
	t.Helper()
	yaml = strings.ReplaceAll(yaml, "{{root}}", stateRepoRoot(t))
	yaml = strings.ReplaceAll(yaml, "{{state}}", stateDir)
	path := filepath.Join(dir, "pipeline-"+stateDir+".yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runPipeline loads and runs a pipeline to its end.
func runPipeline(t testing.TB, path string) string {
	t.Helper()
	ctx := context.Background()
	var out bytes.Buffer
	p, err := host.Load(ctx, path, host.Options{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(ctx); err != nil {
		p.Close(ctx)
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// dump is a store's content as a view shows it: every entry, then the
// committed checkpoint's metadata.
func dump(t testing.TB, dir string) string {
	t.Helper()
	v, err := state.OpenBadgerView(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var sb strings.Builder
	if err := v.Scan(nil, func(k, val []byte) error {
		fmt.Fprintf(&sb, "%q=%q\n", k, val)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	cp, ok := v.Committed()
	fmt.Fprintf(&sb, "committed=%v meta=%s\n", ok, cp.Meta)
	return sb.String()
}

const counterPipeline = `name: counter
state: {backend: badger, dir: {{state}}}
checkpoints: {interval: 1h}
sources: [{name: in, type: file, path: in.json}]
operators:
  - {name: by, type: key_by, field: id}
  - {name: count, type: map, plugin: "{{root}}/plugins/conformance/go/counter"}
sinks: [{name: out, type: stdout}]
`

const countWindowPipeline = `name: windows
state: {backend: badger, dir: {{state}}}
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

// writeEntries fills a store in dir directly, without a pipeline: n
// entries of operator "direct", with binary keys and values.
func writeEntries(t testing.TB, dir string, n int) {
	t.Helper()
	b, err := state.OpenBadger(state.BadgerOptions{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var muts []state.Mutation
	for i := range n {
		rk := binary.BigEndian.AppendUint32([]byte{0xff}, uint32(i))
		muts = append(muts, state.Mutation{
			Key:   state.Key(nil, "direct", rk, []byte("v\x00bin")),
			Value: bytes.Repeat([]byte{byte(i)}, i%17),
		})
	}
	if err := b.Apply(muts); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

const directPipeline = `name: direct
state: {backend: badger, dir: {{state}}}
sources: [{name: in, type: file, path: in.json}]
sinks: [{name: out, type: discard}]
`

// TestStateExportImport builds state three ways, exports it, imports it
// into a fresh directory and requires the same entries and the same
// committed checkpoint, and the same file exported again.
func TestStateExportImport(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		input string
		// build, when set, fills the state instead of running the pipeline.
		build       func(t *testing.T, dir string)
		wantEntries int64
		wantMeta    bool
	}{
		{
			name:        "plugin value state with a checkpoint",
			yaml:        counterPipeline,
			input:       `{"id":"a"}` + "\n" + `{"id":"b"}` + "\n" + `{"id":"a"}` + "\n",
			wantEntries: 2,
			wantMeta:    true,
		},
		{
			name:        "open count windows",
			yaml:        countWindowPipeline,
			input:       `{"id":"a","v":1}` + "\n" + `{"id":"b","v":2}` + "\n" + `{"id":"a","v":3}` + "\n",
			wantEntries: 2,
		},
		{
			name:        "many binary entries, more than a batch",
			yaml:        directPipeline,
			build:       func(t *testing.T, dir string) { writeEntries(t, dir, 3*statetool.ImportBatch+5) },
			wantEntries: 3*statetool.ImportBatch + 5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "in.json"), []byte(tt.input), 0o644); err != nil {
				t.Fatal(err)
			}
			src := statePipeline(t, dir, "state", tt.yaml)
			if tt.build != nil {
				tt.build(t, filepath.Join(dir, "state"))
			} else {
				runPipeline(t, src)
			}
			var file bytes.Buffer
			n, err := statetool.Export(ctx, src, &file)
			if err != nil {
				t.Fatal(err)
			}
			if n != tt.wantEntries {
				t.Errorf("exported %d entries, want %d", n, tt.wantEntries)
			}
			header, _, _ := strings.Cut(file.String(), "\n")
			if hasMeta := !strings.HasSuffix(header, `"checkpoint":null}`); hasMeta != tt.wantMeta {
				t.Errorf("header %s: checkpoint given = %v, want %v", header, hasMeta, tt.wantMeta)
			}

			dst := statePipeline(t, dir, "imported", tt.yaml)
			m, err := statetool.Import(ctx, dst, bytes.NewReader(file.Bytes()), false)
			if err != nil {
				t.Fatal(err)
			}
			if m != n {
				t.Errorf("imported %d entries, exported %d", m, n)
			}
			want, got := dump(t, filepath.Join(dir, "state")), dump(t, filepath.Join(dir, "imported"))
			if !tt.wantMeta {
				// The source had no checkpoint record; the import
				// commits one with empty metadata.
				want = strings.Replace(want, "committed=false", "committed=true", 1)
			}
			if got != want {
				t.Errorf("imported state differs\n got: %.2000s\nwant: %.2000s", got, want)
			}
			var again bytes.Buffer
			if _, err := statetool.Export(ctx, dst, &again); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again.Bytes(), file.Bytes()) {
				t.Errorf("re-export differs:\n%.1000s\nwant:\n%.1000s", again.String(), file.String())
			}
			leftovers, _ := filepath.Glob(filepath.Join(dir, ".imported.import-*"))
			if len(leftovers) > 0 {
				t.Errorf("temporary directories left: %v", leftovers)
			}
		})
	}
}

// TestStateImportResumes runs a checkpointed pipeline on imported state:
// it must continue from the checkpoint (skipping the records counted) with
// the counts carried over.
func TestStateImportResumes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.json")
	os.WriteFile(in, []byte(`{"id":"a"}`+"\n"+`{"id":"a"}`+"\n"), 0o644)
	src := statePipeline(t, dir, "state", counterPipeline)
	runPipeline(t, src)
	var file bytes.Buffer
	if _, err := statetool.Export(ctx, src, &file); err != nil {
		t.Fatal(err)
	}
	dst := statePipeline(t, dir, "imported", counterPipeline)
	if _, err := statetool.Import(ctx, dst, &file, false); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(in, []byte(`{"id":"a"}`+"\n"+`{"id":"a"}`+"\n"+`{"id":"a"}`+"\n"), 0o644)
	if got, want := runPipeline(t, dst), `{"key":"a","count":3}`+"\n"; got != want {
		t.Fatalf("resumed output %q, want %q", got, want)
	}
}

// TestStateInspect checks what a view decodes: plugin slots by the SDK
// convention, window units with their times, and the checkpoint.
func TestStateInspect(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "in.json"), []byte(`{"id":"a"}`+"\n"+`{"id":"b"}`+"\n"+`{"id":"a"}`+"\n"), 0o644)
	path := statePipeline(t, dir, "state", counterPipeline)
	runPipeline(t, path)
	// Add what the counter plugin does not write: a map state entry, and
	// entries of an operator the pipeline no longer has.
	b, err := state.OpenBadger(state.BadgerOptions{Dir: filepath.Join(dir, "state"), Checkpointed: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	b.Apply([]state.Mutation{
		{Key: state.Key(nil, "count", []byte("a"), append([]byte{'m', 3}, "LUTk1"...)), Value: []byte(`{"x":1}`)},
		{Key: state.Key(nil, "gone", []byte("z"), []byte("v")), Value: []byte("1")},
	})
	cp, _ := b.Committed()
	if err := b.Checkpoint(cp.Meta); err != nil {
		t.Fatal(err)
	}
	b.Close()

	sv, err := statetool.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	ck, err := sv.Checkpoint()
	if err != nil || ck == nil {
		t.Fatalf("Checkpoint = %v, %v", ck, err)
	}
	if ck.Epoch != 1 || len(ck.Sources) != 1 || ck.Sources[0].Name != "in" || ck.Sources[0].Records != 3 {
		t.Errorf("checkpoint %+v", ck)
	}
	ops, err := sv.Operators()
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(ops); got != "[{count map 2 3} {gone  1 1}]" {
		t.Errorf("operators %s", got)
	}
	keys, err := sv.Keys("count")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || string(keys[0].Key) != "a" || keys[0].Entries != 2 || string(keys[1].Key) != "b" {
		t.Errorf("keys %+v", keys)
	}
	entries, err := sv.Entries("count", []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, fmt.Sprintf("%s=%x", e.Describe(), e.Value))
	}
	want := []string{`map "LUT" ["k1"]=7b2278223a317d`, `value "count"=0200000000000000`}
	if strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("entries\n got %q\nwant %q", got, want)
	}
}

// TestDecodeEntry covers the user key conventions.
// TestStateRefusals covers what the tools refuse, and that a refused
// import leaves the state directory as it was.
func TestStateRefusals(t *testing.T) {
	ctx := context.Background()
	const header = `{"format":"weir-state-v1","pipeline":"direct","checkpoint":null}` + "\n"
	tests := []struct {
		name string
		// prepare sets up dir/state; it may return a func that runs at the end.
		prepare func(t *testing.T, stateDir string)
		run     func(path string) error
		wantIs  error
		want    string
	}{
		{
			name: "inspect while running",
			prepare: func(t *testing.T, stateDir string) {
				b, err := state.OpenBadger(state.BadgerOptions{Dir: stateDir, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { b.Close() })
			},
			run:    func(path string) error { _, err := statetool.Open(path); return err },
			wantIs: statetool.ErrInUse,
			want:   "is in use — is the pipeline running?",
		},
		{
			name: "export while running",
			prepare: func(t *testing.T, stateDir string) {
				b, err := state.OpenBadger(state.BadgerOptions{Dir: stateDir, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { b.Close() })
			},
			run:    func(path string) error { _, err := statetool.Export(ctx, path, io.Discard); return err },
			wantIs: statetool.ErrInUse,
			want:   "is the pipeline running?",
		},
		{
			name: "forced import while running",
			prepare: func(t *testing.T, stateDir string) {
				b, err := state.OpenBadger(state.BadgerOptions{Dir: stateDir, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { b.Close() })
			},
			run: func(path string) error {
				_, err := statetool.Import(ctx, path, strings.NewReader(header), true)
				return err
			},
			wantIs: statetool.ErrInUse,
		},
		{
			name:    "import into a non-empty directory",
			prepare: func(t *testing.T, stateDir string) { writeEntries(t, stateDir, 3) },
			run: func(path string) error {
				_, err := statetool.Import(ctx, path, strings.NewReader(header), false)
				return err
			},
			want: "is not empty",
		},
		{
			name: "forced import into a directory of other files",
			prepare: func(t *testing.T, stateDir string) {
				os.Mkdir(stateDir, 0o755)
				os.WriteFile(filepath.Join(stateDir, "precious.txt"), []byte("x"), 0o644)
			},
			run: func(path string) error {
				_, err := statetool.Import(ctx, path, strings.NewReader(header), true)
				return err
			},
			want: "holds files but no badger state",
		},
		{
			name: "another pipeline's file",
			run: func(path string) error {
				_, err := statetool.Import(ctx, path, strings.NewReader(strings.Replace(header, "direct", "other", 1)), false)
				return err
			},
			want: `the state of pipeline "other", not "direct"`,
		},
		{
			name:   "inspect a missing state",
			run:    func(path string) error { _, err := statetool.Open(path); return err },
			wantIs: fs.ErrNotExist,
			want:   "has not run",
		},
		{
			name: "export a pipeline with memory state",
			run: func(path string) error {
				os.WriteFile(path, []byte("name: direct\nsources: [{name: in, type: stdin}]\nsinks: [{name: out, type: discard}]\n"), 0o644)
				_, err := statetool.Export(ctx, path, io.Discard)
				return err
			},
			want: "keeps its state in memory",
		},
		{
			name: "an invalid pipeline file",
			run: func(path string) error {
				os.WriteFile(path, []byte("name: x\n"), 0o644)
				_, err := statetool.Open(path)
				return err
			},
			wantIs: host.ErrConfig,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "in.json"), nil, 0o644)
			stateDir := filepath.Join(dir, "state")
			if tt.prepare != nil {
				tt.prepare(t, stateDir)
			}
			path := statePipeline(t, dir, "state", directPipeline)
			err := tt.run(path)
			if err == nil {
				t.Fatal("no error")
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %q does not wrap %v", err, tt.wantIs)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

// TestImportMalformed requires an error naming the bad line, and no
// trace of the import in the state directory's parent.
func TestImportMalformed(t *testing.T) {
	const header = `{"format":"weir-state-v1","pipeline":"direct","checkpoint":null}`
	const good = `{"k":"YQ==","v":"Yg=="}`
	tests := []struct {
		name string
		file string
		want string
	}{
		{"empty file", "", "line 1: the file is empty"},
		{"not JSON", "hello\n", "line 1: not a weir state file header"},
		{"wrong format", `{"format":"weir-state-v9"}` + "\n", `line 1: format "weir-state-v9"`},
		{"bad checkpoint", `{"format":"weir-state-v1","pipeline":"direct","checkpoint":{"engine":[1]}}` + "\n", "line 1: checkpoint"},
		{"missing value", header + "\n" + good + "\n" + `{"k":"YQ=="}` + "\n", "line 3: want"},
		{"bad base64", header + "\n" + `{"k":"!!","v":""}` + "\n", "line 2: k: illegal base64"},
		{"unknown field", header + "\n" + `{"k":"YQ==","v":"","x":1}` + "\n", `line 2: json: unknown field "x"`},
		{"empty key", header + "\n\n" + `{"k":"","v":""}` + "\n", "line 3: state: badger: empty key"},
		{"reserved key", header + "\n" + `{"k":"IWJhZGdlciF4","v":""}` + "\n", "line 2: state: badger: key"},
		{"trailing value", header + "\n" + good + good + "\n", "line 2: more than one JSON value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "in.json"), nil, 0o644)
			path := statePipeline(t, dir, "state", directPipeline)
			_, err := statetool.Import(context.Background(), path, strings.NewReader(tt.file), false)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one saying %q", err, tt.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "state")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the state directory exists: %v", err)
			}
			if hidden, _ := filepath.Glob(filepath.Join(dir, ".state*")); len(hidden) != 0 {
				t.Errorf("left behind: %v", hidden)
			}
		})
	}
}
