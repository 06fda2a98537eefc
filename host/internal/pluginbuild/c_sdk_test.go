package pluginbuild

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// The C SDK's own unit tests (guest-sdk/c/test/weir_test.c: the JSON
// reader and writer, buffers, config helpers, and a differential test of
// the JSON reader's fast path against its full parser) run twice: built
// for wasm32-wasi with the flags plugins get and run under wazero, which
// is what plugins run on, and built natively when a host C compiler is
// there, which is how the SDK's README says to run them.

// commandFlags are the flags C plugins are built with, for a command (with
// main) rather than a reactor.
func commandFlags() []string {
	var flags []string
	for _, f := range cFlags {
		if f != "-mexec-model=reactor" {
			flags = append(flags, f)
		}
	}
	return flags
}

// cSDKTestSources returns the unit test's source files.
func cSDKTestSources(t *testing.T) (dir string, files []string) {
	dir = filepath.Join(moduleRoot(t), "guest-sdk", "c")
	return dir, []string{filepath.Join(dir, "test", "weir_test.c"), filepath.Join(dir, "weir.c")}
}

func TestCSDKUnitTestsWasm(t *testing.T) {
	weirtest.NeedToolchain(t, "c")
	ctx := context.Background()
	clang, _, _, err := clangPath(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir, srcs := cSDKTestSources(t)
	out := filepath.Join(t.TempDir(), "weir_test.wasm")
	args := append([]string{"-Wall", "-Werror", "-I", dir, "-o", out}, commandFlags()...)
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

// BenchmarkCSDKTransform times guest-sdk/c/test/transform_bench.c, the
// uppercase plugin's JSON work without the ABI, built natively (cc -O2)
// and for wasm32-wasi (the plugin flags) run under wazero: the ratio is
// what running the SDK's code as WebAssembly costs. Each run is one
// process (native) or one instantiation (Wasm) doing b.N records, so the
// native figure includes a process start, about a millisecond.
func BenchmarkCSDKTransform(b *testing.B) {
	dir := filepath.Join(moduleRoot(b), "guest-sdk", "c")
	srcs := []string{filepath.Join(dir, "test", "transform_bench.c"), filepath.Join(dir, "weir.c")}
	b.Run("native", func(b *testing.B) {
		cc, err := exec.LookPath("cc")
		if err != nil {
			b.Skip("no native C compiler (cc) on PATH")
		}
		bin := filepath.Join(b.TempDir(), "transform_bench")
		args := append([]string{"-O2", "-I", dir, "-o", bin}, srcs...)
		if out, err := exec.Command(cc, append(args, "-lm")...).CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		b.ResetTimer()
		if out, err := exec.Command(bin, strconv.Itoa(b.N)).CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/record")
	})
	b.Run("wasm", func(b *testing.B) {
		ctx := context.Background()
		clang, _, _, err := clangPath(ctx)
		if err != nil {
			b.Skipf("no C toolchain: %v", err)
		}
		out := filepath.Join(b.TempDir(), "transform_bench.wasm")
		args := append([]string{"-I", dir, "-o", out}, commandFlags()...)
		if msg, err := exec.CommandContext(ctx, clang, append(args, srcs...)...).CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, msg)
		}
		wasm, err := os.ReadFile(out)
		if err != nil {
			b.Fatal(err)
		}
		rt := wazero.NewRuntime(ctx)
		defer rt.Close(ctx)
		wasi_snapshot_preview1.MustInstantiate(ctx, rt)
		mod, err := rt.CompileModule(ctx, wasm)
		if err != nil {
			b.Fatal(err)
		}
		var stderr bytes.Buffer
		cfg := wazero.NewModuleConfig().WithStderr(&stderr).WithArgs("transform_bench", strconv.Itoa(b.N))
		b.ResetTimer()
		_, err = rt.InstantiateModule(ctx, mod, cfg)
		var exit *sys.ExitError
		if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 0) {
			b.Fatalf("%v\n%s", err, &stderr)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/record")
	})
}
