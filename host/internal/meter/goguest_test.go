package meter_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/weir-stream/weir/host/internal/meter"
)

var goGuest struct {
	once sync.Once
	bin  []byte
	err  error
}

// goGuestModule builds testdata/goguest for GOOS=wasip1, once per test
// binary, and skips the test when there is no Go toolchain to build it.
func goGuestModule(t testing.TB) []byte {
	t.Helper()
	goGuest.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			goGuest.err = err
			return
		}
		dir, err := os.MkdirTemp("", "meter-goguest")
		if err != nil {
			goGuest.err = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "goguest.wasm")
		cmd := exec.Command(goBin, "build", "-o", out, "./testdata/goguest")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if msg, err := cmd.CombinedOutput(); err != nil {
			goGuest.err = errors.New(string(msg))
			return
		}
		goGuest.bin, goGuest.err = os.ReadFile(out)
	})
	if goGuest.err != nil {
		t.Skipf("cannot build the Go guest: %v", goGuest.err)
	}
	return goGuest.bin
}

// runCommand runs a WASI command module and returns its output.
func runCommand(t *testing.T, bin []byte, y *yielder) string {
	t.Helper()
	rt := newRuntime(t, wazero.NewRuntimeConfig(), y)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	var stdout bytes.Buffer
	cfg := wazero.NewModuleConfig().WithStdout(&stdout).WithStderr(&stdout).WithArgs("goguest", "a", "b")
	_, err := rt.InstantiateWithConfig(ctx, bin, cfg)
	if exit := (*sys.ExitError)(nil); err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 0) {
		t.Fatalf("run: %v\n%s", err, stdout.String())
	}
	return stdout.String()
}

// TestGoGuest runs a Go program as built and instrumented, and wants the
// same output, with yields on the way.
func TestGoGuest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go program")
	}
	bin := goGuestModule(t)
	want := runCommand(t, bin, &yielder{fuel: 1})
	y := &yielder{fuel: 1000}
	got := runCommand(t, instrument(t, bin, meter.Options{Fuel: 1000}), y)
	if got != want {
		t.Fatalf("instrumented output:\n%s\nwant:\n%s", got, want)
	}
	if y.calls < 1000 {
		t.Errorf("only %d yields", y.calls)
	}
	t.Logf("output:\n%s%d yields", got, y.calls)
}

// TestGCWhileSpinning is the reason for this package: a GC started while
// a guest spins must complete. Were the loop not instrumented, runtime.GC
// would wait for the spinning goroutine forever, and the test would time
// out (no timing is asserted here).
func TestGCWhileSpinning(t *testing.T) {
	var stop atomic.Bool
	var yields atomic.Int64
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	_, err := rt.NewHostModuleBuilder(meter.ImportModule).NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
			if yields.Add(1); stop.Load() {
				panic(errStopped)
			}
			stack[0] = api.EncodeI32(1000)
		}), nil, []api.ValueType{api.ValueTypeI32}).
		Export(meter.ImportName).Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := instantiate(t, rt, instrument(t, readTestdata(t, "loops.wasm"), meter.Options{Fuel: 1000}), "loops")
	spun := make(chan error)
	go func() {
		_, err := m.ExportedFunction("spin").Call(ctx)
		spun <- err
	}()
	for yields.Load() < 10 { // the guest is spinning
		runtime.Gosched()
	}
	runtime.GC()
	runtime.GC()
	stop.Store(true)
	if err := <-spun; !errors.Is(err, errStopped) {
		t.Fatalf("spin: %v", err)
	}
}
