package weirtest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Weir returns the path of a weir binary built from this checkout, building
// it on first use. The binary lives in a temporary directory for the life of
// the test process.
func Weir(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "weir-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "weir")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/weir")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = errors.New("go build ./cmd/weir: " + err.Error() + "\n" + string(out))
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// Root returns the root directory of the weir module.
func Root(t testing.TB) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the weir module")
	}
	return filepath.Dir(mod), nil
}

// Result is the outcome of one weir invocation.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Run runs weir with args in dir, feeding stdin, and waits at most two
// minutes (plugin builds on a cold cache are the slow part).
func Run(t testing.TB, dir, stdin string, args ...string) Result {
	t.Helper()
	return RunBinary(t, Weir(t), dir, nil, stdin, args...)
}

// RunBinary runs the weir binary bin with args in dir, feeding stdin, in
// the environment env (nil for this process's), and waits at most two
// minutes.
func RunBinary(t testing.TB, bin, dir string, env []string, stdin string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.Code = ee.ExitCode()
	default:
		t.Fatalf("weir %v: %v\nstderr:\n%s", args, err, res.Stderr)
	}
	return res
}

// CheckOutput runs `weir run pipeline.yaml` in dir and requires exit code 0
// and standard output equal, byte for byte, to the file expected-output.txt.
func CheckOutput(t testing.TB, dir string) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join(dir, "expected-output.txt"))
	if err != nil {
		t.Fatal(err)
	}
	res := Run(t, dir, "", "run", "pipeline.yaml")
	if res.Code != 0 {
		t.Fatalf("weir run exited %d\nstderr:\n%s", res.Code, res.Stderr)
	}
	if res.Stdout != string(want) {
		t.Fatalf("output differs from expected-output.txt\n got:\n%s\nwant:\n%s\nstderr:\n%s", res.Stdout, want, res.Stderr)
	}
}

// PollUntil calls cond every 10 ms until it returns true, failing the test
// with what, the condition waited for, when timeout passes first. Tests
// wait with it, never with fixed sleeps; a test that must show something
// did not happen waits for a later event that proves it would have.
func PollUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
