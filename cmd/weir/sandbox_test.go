package main_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// hostileWasm is the hand-written hostile module (its .wat beside it).
const hostileWasm = "{{root}}/host/internal/wasm/testdata/hostile.wasm"

// healthyPipeline runs beside the hostile one in the same process: a
// throttled generator into a file.
const healthyPipeline = `name: healthy
sources:
  - {name: gen, type: generator, rate: 2000, fields: [{name: n, kind: sequence}, {name: ts, kind: timestamp}]}
sinks: [{name: out, type: file, path: healthy.jsonl}]
`

// TestSandbox runs a hostile plugin through the weir binary, beside a
// healthy pipeline in the same process, for each way a plugin can try to
// hold the process. In each: the healthy pipeline keeps producing while
// the bad record is being dealt with; the bad record is dead-lettered with
// a reason naming what it hit; every other record comes out once, in
// order; SIGTERM drains and exits 0; and the process's peak RSS stays
// within 1.5 times the guest's memory limit plus a constant.
func TestSandbox(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name   string
		op     string // map (default) or flat_map
		extra  string // more fields of the operator
		poison string
		reason string
		bound  string // the config key of the bound hit, as the metric labels it
		limit  int    // the guest's memory limit in bytes
	}{
		{name: "loop with no timeout set", poison: "@spin", reason: "deadline exceeded after 5s", bound: "timeout", limit: 64 * mib},
		{name: "sleep in poll_oneoff", extra: "timeout: 1s", poison: "zzz", reason: "deadline exceeded after 1s", bound: "timeout", limit: 64 * mib},
		// Growing to 512 MiB can take longer than the default 5 s
		// timeout on a loaded machine: the memory limit must be what
		// stops it.
		{name: "memory bomb", extra: "memory_limit_pages: 8192\n    timeout: 60s", poison: "Mem",
			reason: "over its limit of 512 MiB (memory_limit_pages: 8192)", bound: "memory_limit_pages", limit: 512 * mib},
		{name: "oversized state puts", poison: "Keys", reason: "state writes of one call over max_batch_state (32 MiB)", bound: "max_batch_state", limit: 64 * mib},
		{name: "huge flat_map output", op: "flat_map", poison: "Fan", reason: "flat_map output of one call over max_batch_output (32 MiB)",
			bound: "max_batch_output", limit: 64 * mib},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			op := tt.op
			if op == "" {
				op = "map"
			}
			s := startSandboxed(t, op, tt.extra, "")
			before, sent := s.healthyLines(), time.Now()
			s.send("a\nb\n" + tt.poison + "\nc\n")
			weirtest.PollUntil(t, 60*time.Second, "the healthy pipeline to go on producing", func() bool {
				return s.healthyLines() > before+1000
			})
			if code, _ := s.get("/healthz"); code != 200 {
				t.Errorf("/healthz answered %d while the plugin misbehaved", code)
			}
			dead := s.waitDead(tt.poison)
			if !strings.Contains(dead, tt.reason) {
				t.Errorf("dead letter reason %q does not contain %q", dead, tt.reason)
			}
			// While the bad record was being dealt with (from a second after
			// it was sent, when its guest surely misbehaved, to its dead
			// letter), the healthy pipeline made records.
			if from, to := sent.Add(time.Second), time.Now(); to.Sub(from) > time.Second {
				if n := s.healthyBetween(from, to); n < 1000 {
					t.Errorf("the healthy pipeline made %d records in the %s the bad record took", n, to.Sub(from))
				}
			}
			s.send("d\n")
			s.waitOut("a\nb\nc\nd\n")
			want := `weir_plugin_limit_hits_total{limit="` + tt.bound + `",operator="bad",pipeline="hostile"}`
			if _, body := s.get("/metrics"); !strings.Contains(body, want) {
				t.Errorf("/metrics has no %s", want)
			}
			s.stop(float64(tt.limit))
		})
	}
}

// TestSandboxRebuildHangs makes the instance that replaces a trapped one
// hang in weir_init for a while: the rebuild is interrupted at the
// deadline and tried again, and the run goes on.
func TestSandboxRebuildHangs(t *testing.T) {
	t.Parallel()
	from := time.Now().Add(4 * time.Second).UnixMilli()
	cfg := fmt.Sprintf(`config: "window %d %d"`, from, from+3000)
	s := startSandboxed(t, "map", cfg, "")
	s.send("a\n")
	s.waitOut("a\n")
	if d := time.Until(time.UnixMilli(from)); d > 0 {
		<-time.After(d) // the instances made from now on hang
	}
	sent := time.Now()
	s.send("!trap\nb\n")
	dead := s.waitDead("!trap")
	s.waitOut("a\nb\n")
	// The rebuilt instance hung for its 5 s deadline: the healthy pipeline
	// made records meanwhile.
	if n := s.healthyBetween(sent.Add(time.Second), sent.Add(4*time.Second)); n < 1000 {
		t.Errorf("the healthy pipeline made %d records while the rebuild hung", n)
	}
	if !strings.Contains(dead, "trap: wasm error: unreachable") {
		t.Errorf("dead letter reason %q", dead)
	}
	if !strings.Contains(s.stderr.String(), "deadline exceeded after 5s") {
		t.Errorf("the hanging rebuild was not logged:\n%s", s.stderr.String())
	}
	s.stop(64 << 20)
}

// TestSandboxLoadHangs checks that a module whose start never returns is
// rejected with exit 4 by weir validate and weir run, and refused by a hot
// reload while the old version goes on.
func TestSandboxLoadHangs(t *testing.T) {
	t.Parallel()
	init := "{{root}}/host/internal/wasm/testdata/initialize_loop.wasm"
	for _, c := range []struct{ name, plugin, extra string }{
		{"_initialize", init, ""},
		{"weir_init", hostileWasm, `config: "loop"`},
	} {
		dir := pipelineDir(t, hostilePipeline("map", c.plugin, "timeout: 1s\n    "+c.extra), nil)
		for _, cmd := range []string{"validate", "run"} {
			res := weirtest.Run(t, dir, "", cmd, "pipeline.yaml")
			if res.Code != 4 || !strings.Contains(res.Stderr, "deadline exceeded after 1s") {
				t.Errorf("%s: weir %s: exit %d\n%s", c.name, cmd, res.Code, res.Stderr)
			}
		}
	}
	// A hot reload to the hanging module is refused; the old one goes on.
	s := startSandboxed(t, "map", "", "plugin.wasm")
	s.send("a\n")
	s.waitOut("a\n")
	copyModule(t, weirtest.Root(t)+"/host/internal/wasm/testdata/initialize_loop.wasm", filepath.Join(s.dir, "plugin.wasm"))
	hup := time.Now()
	s.cmd.Process.Signal(syscall.SIGHUP)
	weirtest.PollUntil(t, 60*time.Second, "the reload to be refused", func() bool {
		return strings.Contains(s.stderr.String(), "plugin reload failed")
	})
	// The new version hung in _initialize for 5 s: the healthy pipeline
	// made records meanwhile.
	if n := s.healthyBetween(hup.Add(time.Second), hup.Add(4*time.Second)); n < 1000 {
		t.Errorf("the healthy pipeline made %d records while the reload hung", n)
	}
	if !strings.Contains(s.stderr.String(), "_initialize failed: deadline exceeded after 5s") {
		t.Errorf("the refusal does not give the reason:\n%s", s.stderr.String())
	}
	s.send("b\n")
	s.waitOut("a\nb\n")
	s.stop(64 << 20)
}

// hostilePipeline is the pipeline of the hostile plugin: stdin lines
// through it, to out.txt, with dead letters in dlq.jsonl.
func hostilePipeline(op, plugin, extra string) string {
	return `name: hostile
sources: [{name: in, type: stdin, format: lines}]
operators:
  - name: bad
    type: ` + op + `
    plugin: ` + plugin + `
    ` + extra + `
sinks: [{name: out, type: file, path: out.txt, format: raw}]
dead_letter: {type: file, path: dlq.jsonl}
`
}

// sandboxed is a weir process running the hostile and healthy pipelines.
type sandboxed struct {
	t      *testing.T
	dir    string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *weirtest.SyncBuffer
	admin  string // the admin server's address
}

// startSandboxed starts weir run with the hostile pipeline (its plugin at
// path local in the pipeline's folder when set, else hostileWasm) and the
// healthy one.
func startSandboxed(t *testing.T, op, extra, local string) *sandboxed {
	plugin := hostileWasm
	files := map[string]string{"healthy.yaml": healthyPipeline}
	dir := pipelineDir(t, hostilePipeline(op, plugin, extra), files)
	if local != "" {
		copyModule(t, strings.ReplaceAll(hostileWasm, "{{root}}", weirtest.Root(t)), filepath.Join(dir, local))
		yaml := hostilePipeline(op, local, extra)
		if err := os.WriteFile(filepath.Join(dir, "pipeline.yaml"), []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := &sandboxed{t: t, dir: dir, stderr: new(weirtest.SyncBuffer), admin: freePort(t)}
	s.cmd = exec.Command(weirtest.Weir(t), "run", "--watch=false", "--status", "never", "--admin", s.admin, "pipeline.yaml", "healthy.yaml")
	s.cmd.Dir = dir
	s.cmd.Stderr = s.stderr
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
	weirtest.PollUntil(t, 60*time.Second, "the admin server", func() bool {
		code, _ := s.get("/healthz")
		return code == 200
	})
	return s
}

// get fetches path from the admin server: the status code and body, or 0
// and the error.
func (s *sandboxed) get(path string) (int, string) {
	resp, err := http.Get("http://" + s.admin + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (s *sandboxed) send(lines string) {
	if _, err := io.WriteString(s.stdin, lines); err != nil {
		s.t.Fatal(err)
	}
}

func (s *sandboxed) read(name string) string {
	b, _ := os.ReadFile(filepath.Join(s.dir, name))
	return string(b)
}

func (s *sandboxed) healthyLines() int { return strings.Count(s.read("healthy.jsonl"), "\n") }

// healthyBetween counts the healthy pipeline's records made between from
// and to (by their ts field, the generator's wall clock).
func (s *sandboxed) healthyBetween(from, to time.Time) int {
	n := 0
	for _, line := range strings.Split(s.read("healthy.jsonl"), "\n") {
		var r struct{ TS int64 }
		if json.Unmarshal([]byte(line), &r) == nil && r.TS >= from.UnixMilli() && r.TS <= to.UnixMilli() {
			n++
		}
	}
	return n
}

// waitDead waits for the dead letter of value and returns its reason.
func (s *sandboxed) waitDead(value string) string {
	s.t.Helper()
	var reason string
	weirtest.PollUntil(s.t, 90*time.Second, "the dead letter of "+value, func() bool {
		for _, line := range strings.Split(s.read("dlq.jsonl"), "\n") {
			if strings.Contains(line, strconv.Quote(value)) {
				reason = line
				return true
			}
		}
		return false
	})
	return reason
}

// waitOut waits until out.txt holds want, and fails if it holds more.
func (s *sandboxed) waitOut(want string) {
	s.t.Helper()
	weirtest.PollUntil(s.t, 90*time.Second, "output "+strconv.Quote(want), func() bool {
		return len(s.read("out.txt")) >= len(want)
	})
	if got := s.read("out.txt"); got != want {
		s.t.Fatalf("out.txt = %q, want %q\n%s", got, want, s.stderr.String())
	}
}

// stop checks the process's peak RSS against 1.5 × limit + 200 MiB, sends
// SIGTERM and requires a drained exit 0 with each dead letter once.
func (s *sandboxed) stop(limit float64) {
	s.t.Helper()
	hwm := peakRSS(s.t, s.cmd.Process.Pid)
	if bound := 1.5*limit + 200<<20; float64(hwm) > bound {
		s.t.Errorf("peak RSS %d MiB, over 1.5 × the guest's limit + 200 MiB = %.0f MiB", hwm>>20, bound/(1<<20))
	}
	s.t.Logf("peak RSS %d MiB for a guest limit of %.0f MiB", hwm>>20, limit/(1<<20))
	s.stdin.Close()
	s.cmd.Process.Signal(syscall.SIGTERM)
	if err := s.cmd.Wait(); err != nil {
		s.t.Fatalf("weir exited with %v after SIGTERM\n%s", err, s.stderr.String())
	}
	if n := strings.Count(s.read("dlq.jsonl"), "\n"); n > 1 {
		s.t.Errorf("%d dead letters, want at most 1:\n%s", n, s.read("dlq.jsonl"))
	}
}

// peakRSS reads VmHWM, the peak resident set size, of process pid.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

func copyModule(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to+".tmp", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(to+".tmp", to); err != nil {
		t.Fatal(err)
	}
}

// TestSandboxSignals sends SIGTERM while a plugin loops: with the default
// deadline the drain ends once the loop is interrupted, and exits 0 with
// the bad record dead-lettered; with timeout: none the drain waits on the
// guest, and a second signal still ends the process at once (130).
func TestSandboxSignals(t *testing.T) {
	t.Parallel()
	t.Run("default deadline", func(t *testing.T) {
		t.Parallel()
		s := startSandboxed(t, "map", "", "")
		s.send("a\n@spin\nc\n")
		s.waitStuck()
		s.cmd.Process.Signal(syscall.SIGTERM)
		if err := s.cmd.Wait(); err != nil {
			t.Fatalf("weir exited with %v after SIGTERM\n%s", err, s.stderr.String())
		}
		if got := s.read("out.txt"); got != "a\nc\n" {
			t.Errorf("out.txt = %q", got)
		}
		if d := s.read("dlq.jsonl"); !strings.Contains(d, `"@spin"`) || !strings.Contains(d, "deadline exceeded after 5s") {
			t.Errorf("dead letters %q", d)
		}
	})
	t.Run("timeout none", func(t *testing.T) {
		t.Parallel()
		s := startSandboxed(t, "map", "timeout: none", "")
		s.send("@spin\n")
		s.waitStuck()
		s.cmd.Process.Signal(syscall.SIGTERM)
		weirtest.PollUntil(t, 30*time.Second, "the drain to begin", func() bool {
			return s.healthyDrained()
		})
		s.cmd.Process.Signal(syscall.SIGTERM)
		err := s.cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Fatalf("after a second SIGTERM: %v, want exit 130\n%s", err, s.stderr.String())
		}
	})
}

// waitStuck waits until the healthy pipeline has made a second's records
// since now: by then the hostile guest is in whatever it does.
func (s *sandboxed) waitStuck() {
	s.t.Helper()
	start := s.healthyLines()
	weirtest.PollUntil(s.t, 60*time.Second, "a second of the healthy pipeline", func() bool { return s.healthyLines() > start+2000 })
}

// healthyDrained reports whether the healthy pipeline has logged its
// drained end, which the first signal causes.
func (s *sandboxed) healthyDrained() bool {
	return strings.Contains(s.stderr.String(), "pipeline stopped by signal and drained") &&
		strings.Contains(s.stderr.String(), "pipeline=healthy")
}
