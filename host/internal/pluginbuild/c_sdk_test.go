package pluginbuild

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// The C SDK's own unit tests (guest-sdk/c/test/weir_test.c: the JSON
// reader and writer, buffers, config helpers, and a differential test of
// the JSON reader's fast path against its full parser) run twice: built
// for wasm32-wasi with the flags plugins get and run under wazero, which
// is what plugins run on, and built natively when a host C compiler is
// there, which is how the SDK's README says to run them.

// cSDKTestSources returns the unit test's source files.
func cSDKTestSources(t *testing.T) (dir string, files []string) {
	dir = filepath.Join(moduleRoot(t), "guest-sdk", "c")
	return dir, []string{filepath.Join(dir, "test", "weir_test.c"), filepath.Join(dir, "weir.c")}
}

func TestCSDKUnitTestsWasm(t *testing.T) {
	needClang(t)
	ctx := context.Background()
	clang, _, err := clangPath(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir, srcs := cSDKTestSources(t)
	out := filepath.Join(t.TempDir(), "weir_test.wasm")
	// The plugin flags, but a command (with main) rather than a reactor.
	args := []string{"-Wall", "-Werror", "-I", dir, "-o", out}
	for _, f := range cFlags {
		if f != "-mexec-model=reactor" {
			args = append(args, f)
		}
	}
	if b, err := exec.CommandContext(ctx, clang, append(args, srcs...)...).CombinedOutput(); err != nil {
		t.Fatalf("building the C SDK's unit tests for wasm32-wasi: %v\n%s", err, b)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	var stdout, stderr bytes.Buffer
	_, err = rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().
		WithStdout(&stdout).WithStderr(&stderr).WithArgs("weir_test"))
	var exit *sys.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 0) {
		t.Fatalf("C SDK unit tests under wazero: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	if strings.TrimSpace(stdout.String()) != "ok" {
		t.Fatalf("C SDK unit tests under wazero printed %q, want \"ok\"\nstderr:\n%s", &stdout, &stderr)
	}
}

func TestCSDKUnitTestsNative(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no native C compiler (cc) on PATH")
	}
	dir, srcs := cSDKTestSources(t)
	bin := filepath.Join(t.TempDir(), "weir_test")
	args := append([]string{"-O2", "-Wall", "-Werror", "-I", dir, "-o", bin}, srcs...)
	if b, err := exec.Command(cc, append(args, "-lm")...).CombinedOutput(); err != nil {
		t.Fatalf("building the C SDK's unit tests natively: %v\n%s", err, b)
	}
	b, err := exec.Command(bin).CombinedOutput()
	if err != nil || strings.TrimSpace(string(b)) != "ok" {
		t.Fatalf("C SDK unit tests (native): %v\n%s", err, b)
	}
}
