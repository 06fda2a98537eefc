package host_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host"
	"github.com/weir-stream/weir/host/plugintool"
)

// goPluginModule builds a Go plugin whose main.go is mainGo, in a module of
// its own outside the weir tree that uses this checkout's SDK, as a user's
// plugin would, and returns the module.
func goPluginModule(t *testing.T, mainGo string) []byte {
	t.Helper()
	dir := t.TempDir()
	gomod := "module example.com/probation\n\ngo 1.26\n\nrequire github.com/weir-stream/weir v0.0.0\n\nreplace github.com/weir-stream/weir => " + repoRoot(t) + "\n"
	for name, content := range map[string]string{"go.mod": gomod, "main.go": mainGo} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tidy := exec.Command("go", "mod", "tidy")
	tidy.Dir = dir
	if out, err := tidy.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, out)
	}
	path, _, err := plugintool.Build(context.Background(), dir, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rejectingPlugin is a map plugin that validates records ending in
// "i":N}: those whose N ends in a digit below the given one are rejected
// with an error, the others kept. Fed consecutive N, it rejects that many
// tenths of the records.
func rejectingPlugin(tenths int) string {
	return fmt.Sprintf(`package main

import (
	"errors"

	weir "github.com/weir-stream/weir/guest-sdk/go"
)

func init() {
	weir.Map(func(r *weir.Record) ([]byte, error) {
		v := r.Value
		if len(v) >= 2 && v[len(v)-2] < '0'+%d {
			return nil, errors.New("invalid record")
		}
		return v, nil
	})
}

func main() {}
`, tenths)
}

// panickingPlugin has a bug that panics on every record. The Go SDK
// recovers the panic and reports it as the record's error, so the host
// sees rejections, not traps.
const panickingPlugin = `package main

import weir "github.com/weir-stream/weir/guest-sdk/go"

func init() {
	weir.Map(func(r *weir.Record) ([]byte, error) {
		var seen map[string]bool
		seen[string(r.Value)] = true // assignment to entry in nil map
		return r.Value, nil
	})
}

func main() {}
`

// probationRig runs a pipeline whose map operator "check" runs the
// module at plugin, on two workers, fed from a pipe.
type probationRig struct {
	t      *testing.T
	p      *host.Pipeline
	in     *io.PipeWriter
	plugin string
	dead   string
	sent   int
}

func startProbationRig(t *testing.T, module []byte) *probationRig {
	t.Helper()
	dir := t.TempDir()
	r := &probationRig{t: t, plugin: filepath.Join(dir, "check.wasm"), dead: filepath.Join(dir, "dead.jsonl")}
	if err := os.WriteFile(r.plugin, module, 0o644); err != nil {
		t.Fatal(err)
	}
	path := writePipeline(t, `name: probation
engine: {parallelism: 2, batch_size: 8}
sources: [{name: in, type: stdin}]
operators:
  - {name: by-k, type: key_by, field: k}
  - {name: check, type: map, plugin: "`+r.plugin+`"}
sinks: [{name: out, type: discard}]
dead_letter: {type: file, path: `+r.dead+`}
`)
	pr, pw := io.Pipe()
	r.in = pw
	ctx := context.Background()
	p, err := host.Load(ctx, path, host.Options{Stdin: pr})
	if err != nil {
		t.Fatal(err)
	}
	r.p = p
	done := make(chan error, 1)
	go func() {
		_, err := p.Run(ctx)
		done <- err
	}()
	t.Cleanup(func() {
		pw.Close()
		if err := <-done; err != nil {
			t.Error(err)
		}
		p.Close(ctx)
	})
	return r
}

// send writes n records over 5 keys, numbered on from the last.
func (r *probationRig) send(n int) {
	r.t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{\"k\":\"k%d\",\"i\":%d}\n", (r.sent+i)%5, r.sent+i)
	}
	if _, err := io.WriteString(r.in, b.String()); err != nil {
		r.t.Fatal(err)
	}
	r.sent += n
}

// counts returns what the operator "check" was given and dead-lettered.
func (r *probationRig) counts() (in, dead int64) {
	for _, s := range r.p.Stats().Stages {
		if s.Stage == "operator" && s.Name == "check" {
			return s.In, s.Dead
		}
	}
	return 0, 0
}

// feed sends n records and waits until the operator has had them all.
func (r *probationRig) feed(n int) {
	r.t.Helper()
	r.send(n)
	weirtest.PollUntil(r.t, 20*time.Second, fmt.Sprintf("%d records through the operator", r.sent), func() bool {
		in, _ := r.counts()
		return in == int64(r.sent)
	})
}

// reload installs module and reloads it with Pipeline.Reload, waiting for
// its probation, sending records once it is live; it returns the
// operator's result.
func (r *probationRig) reload(module []byte) host.ReloadResult {
	r.t.Helper()
	if err := os.WriteFile(r.plugin, module, 0o644); err != nil {
		r.t.Fatal(err)
	}
	type answer struct {
		res []host.ReloadResult
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		res, err := r.p.Reload(context.Background(), "check", time.Minute)
		ch <- answer{res, err}
	}()
	var a answer
	live := false // records are sent once the new version is live, so the previous version's share stays what it was
	weirtest.PollUntil(r.t, time.Minute, "the end of the new version's probation", func() bool {
		select {
		case a = <-ch:
			return true
		default:
			live = live || r.p.Plugins()[0].Version == 2
			if live {
				r.send(8)
			}
			return false
		}
	})
	if a.err != nil || len(a.res) != 1 {
		r.t.Fatalf("Reload: %v %v", a.res, a.err)
	}
	return a.res[0]
}

// TestProbationJudgesOutcomes hot-reloads a version over another while
// records flow and checks the verdict of its probation, which counts every
// record a version fails on (here rejections with an error, which is what
// a Go panic becomes) and compares their share with the previous
// version's.
func TestProbationJudgesOutcomes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a failing plugin version per case; the full pass runs it")
	}
	for _, tc := range []struct {
		name string
		// The previous version rejects beforeTenths tenths of the records.
		beforeTenths int
		after        string
		want         host.ReloadOutcome
		// deadReason, if set, is in the new version's dead letters.
		deadReason string
	}{
		{name: "a Go panic on every record is rolled back", beforeTenths: 0, after: panickingPlugin,
			want: host.ReloadRolledBack, deadReason: "assignment to entry in nil map"},
		{name: "validation rejecting a tenth is kept", beforeTenths: 0, after: rejectingPlugin(1),
			want: host.ReloadSwapped, deadReason: "invalid record"},
		{name: "rejecting 70% where the previous version rejected 60% is kept", beforeTenths: 6, after: rejectingPlugin(7),
			want: host.ReloadSwapped},
		{name: "rejecting 70% where the previous version rejected none is rolled back", beforeTenths: 0, after: rejectingPlugin(7),
			want: host.ReloadRolledBack},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, after := goPluginModule(t, rejectingPlugin(tc.beforeTenths)), goPluginModule(t, tc.after)
			r := startProbationRig(t, before)
			r.feed(100) // the previous version's failure share: whole tenths
			res := r.reload(after)
			t.Logf("%s", res)
			if res.Outcome != tc.want || res.From != 1 || res.New != 2 || res.Probation == nil || res.Probation.Batches != 10 ||
				res.Probation.Baseline != float64(tc.beforeTenths)/10 {
				t.Fatalf("result %+v (probation %+v), want %s of version 2, compared with a baseline of %d%%",
					res, res.Probation, tc.want, tc.beforeTenths*10)
			}
			st := r.p.Plugins()[0]
			switch tc.want {
			case host.ReloadRolledBack:
				if res.Live != 1 || st.Version != 1 || st.Rollbacks != 1 || !strings.Contains(st.LastError, "version 2 failed on") ||
					res.Reason != st.LastError {
					t.Fatalf("result %+v, status %+v: want version 1 back, with the reason", res, st)
				}
				// Version 1 runs again: it rejects what it rejected before.
				r.feed(0)
				in0, dead0 := r.counts()
				r.feed(100)
				in, dead := r.counts()
				if want := int64(tc.beforeTenths) * 10; in-in0 != 100 || dead-dead0 != want {
					t.Fatalf("after the rollback, %d of %d records failed, want %d (version 1's)", dead-dead0, in-in0, want)
				}
			case host.ReloadSwapped:
				if res.Live != 2 || st.Version != 2 || st.Rollbacks != 0 || st.Probation != nil {
					t.Fatalf("result %+v, status %+v: want version 2 kept", res, st)
				}
			}
			if tc.deadReason != "" {
				weirtest.PollUntil(t, 20*time.Second, "a dead letter saying "+tc.deadReason, func() bool {
					b, _ := os.ReadFile(r.dead)
					return strings.Contains(string(b), tc.deadReason)
				})
			}
		})
	}
}
