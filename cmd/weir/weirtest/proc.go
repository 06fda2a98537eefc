package weirtest

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Proc is a weir process a test started with Start: its command, the file
// it logs to, and the channel its exit comes on (once). It is used by the
// test's goroutine.
type Proc struct {
	Cmd  *exec.Cmd
	Log  string
	Done chan error
}

// Start runs weir with args and env (nil: the test's environment),
// logging to dir/name.log. The test's cleanup kills it; if the test
// failed, the log's last lines above debug, and its last lines of any
// level, go to the test's output and, when
// $WEIR_TEST_LOGS names a directory, the whole log is copied there, as
// <test name>.<name>.log.
func Start(t testing.TB, dir, name string, env []string, args ...string) *Proc {
	t.Helper()
	cmd := exec.Command(Weir(t), args...)
	cmd.Env = env
	p := &Proc{Cmd: cmd, Log: filepath.Join(dir, name+".log"), Done: make(chan error, 1)}
	logf, err := os.Create(p.Log)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr, cmd.Stdout = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.Done <- cmd.Wait(); logf.Close() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		if !t.Failed() {
			return
		}
		b, _ := os.ReadFile(p.Log)
		if d := os.Getenv("WEIR_TEST_LOGS"); d != "" {
			keep := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + "." + name + ".log"
			if err := os.MkdirAll(d, 0o755); err == nil {
				err = os.WriteFile(filepath.Join(d, keep), b, 0o644)
			}
			if err != nil {
				t.Logf("keeping %s's log in $WEIR_TEST_LOGS: %v", name, err)
			}
		}
		t.Logf("%s:\n%s\n%s, its last lines of any level:\n%s", name, tail(string(b), 40), name, last(string(b), 15))
	})
	return p
}

// last returns the last n lines of a log, each cut to 300 bytes: what
// the instance was doing when the test gave up, debug lines included.
func last(log string, n int) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	lines = lines[max(len(lines)-n, 0):]
	for i, l := range lines {
		if len(l) > 300 {
			lines[i] = l[:300] + "…"
		}
	}
	return strings.Join(lines, "\n")
}

// tail returns the last n lines of a log that are not debug lines (a
// debug run's last lines are mostly the client's and the store's chatter,
// and say nothing of what the instance did).
func tail(log string, n int) string {
	var keep []string
	for _, l := range strings.Split(strings.TrimRight(log, "\n"), "\n") {
		if !strings.Contains(l, "level=DEBUG") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep[max(len(keep)-n, 0):], "\n")
}

// Logged reports whether the process's log holds s.
func (p *Proc) Logged(s string) bool {
	b, _ := os.ReadFile(p.Log)
	return strings.Contains(string(b), s)
}

// AdminAddr waits for the process to log the address its admin server
// listens on (weir run --admin 127.0.0.1:0), and returns it.
func (p *Proc) AdminAddr(t testing.TB) string {
	t.Helper()
	var addr string
	PollUntil(t, 30*time.Second, "the admin server to listen", func() bool {
		b, _ := os.ReadFile(p.Log)
		_, rest, ok := strings.Cut(string(b), `msg="admin server listening" addr=`)
		if ok {
			addr, _, _ = strings.Cut(rest, " ")
		}
		return ok
	})
	return addr
}

// SourceRecords returns the records the pipeline's sources have read (all
// of them together), from
// the metrics of the admin server at addr; 0 if it cannot tell (the
// process is not up, or gone).
func SourceRecords(addr string) int64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return max(int64(MetricSum(string(b), "weir_records_out_total", `stage="source"`)), 0)
}

// OwnedTasks returns the tasks the pipeline at the admin address addr says
// it owns (/api/pipeline's stats.tasks), for a pipeline sharing its group
// by task; nil if it cannot tell.
func OwnedTasks(addr string) []int32 { return pipelineStats(addr).Tasks }

// Repartition returns how the pipeline at the admin address addr routes
// its key_by's records now (/api/pipeline's stats.repartition: "topic" or
// "in_process"); "" if it cannot tell or has no repartition.
func Repartition(addr string) string { return pipelineStats(addr).Repartition }

// taskStats is the part of /api/pipeline's stats about tasks.
type taskStats struct {
	Tasks       []int32 `json:"tasks"`
	Repartition string  `json:"repartition"`
}

// pipelineStats returns what the admin address addr says of its one
// pipeline's tasks; empty if it cannot tell.
func pipelineStats(addr string) taskStats {
	resp, err := http.Get("http://" + addr + "/api/pipeline")
	if err != nil {
		return taskStats{}
	}
	defer resp.Body.Close()
	var ps []struct {
		Stats taskStats `json:"stats"`
	}
	if json.NewDecoder(resp.Body).Decode(&ps) != nil || len(ps) != 1 {
		return taskStats{}
	}
	return ps[0].Stats
}
