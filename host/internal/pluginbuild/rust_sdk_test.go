package pluginbuild

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// TestRustSDKUnitTests runs the Rust SDK's own tests (cargo test in
// guest-sdk/rust: the JSON reader's fast path against its full parser, the
// batch reader's fast path against the general one, the output frames),
// natively, offline against Debian's crates, as a plugin build resolves
// them. The conformance suite tests the SDK under the host.
func TestRustSDKUnitTests(t *testing.T) {
	weirtest.NeedToolchain(t, "rust")
	if testing.Short() {
		t.Skip("cargo test of the Rust SDK: skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cargoHome, err := rustCargoHome(filepath.Join(t.TempDir(), "rust"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, rustCargo, "test", "--offline", "--quiet")
	cmd.Dir = filepath.Join(moduleRoot(t), "guest-sdk", "rust")
	// A target directory per checkout: cargo takes another checkout's test
	// binaries for fresh (a workspace member's build does not depend on its
	// path), and they read the test vectors from that checkout.
	_, target, err := rustWorkDir(DefaultCacheDir(), cmd.Dir)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = rustEnv(cargoHome, target+"-sdk-tests")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cargo test in guest-sdk/rust: %v\n%s", err, out)
	}
}
