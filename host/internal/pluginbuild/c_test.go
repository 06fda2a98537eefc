package pluginbuild

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// copySDK copies the C SDK of this checkout into dir, as `weir plugin new`
// vendors it.
func copySDK(t *testing.T, dir string) {
	t.Helper()
	for _, f := range []string{"weir.h", "weir.c"} {
		b, err := os.ReadFile(filepath.Join(moduleRoot(t), "guest-sdk", "c", f))
		if err != nil {
			t.Fatal(err)
		}
		writeFiles(t, dir, map[string]string{f: string(b)})
	}
}

const cUpper = `#include <ctype.h>
#include "weir.h"

static void shout(const weir_record *r, weir_out *out) {
    weir_buf *v = weir_value_begin(out);
    for (size_t i = 0; i < r->value_len; i++)
        weir_buf_byte(v, (uint8_t)toupper(r->value[i]));
    weir_value_end(out);
}
WEIR_MAP(shout);
`

func TestDetectC(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"plugin.c": cUpper})
	if lang, err := Detect(dir); err != nil || lang != LangC {
		t.Fatalf("Detect = %v, %v; want c", lang, err)
	}
}

func TestFindCSDK(t *testing.T) {
	root := moduleRoot(t)
	inTree := filepath.Join(root, "plugins", "conformance", "c", "uppercase")
	cache := t.TempDir()
	sdk, err := findCSDK(inTree, cache)
	if err != nil || sdk.dir != filepath.Join(root, "guest-sdk", "c") || sdk.vendored {
		t.Fatalf("in the tree: %+v, %v; want the repository's guest-sdk/c", sdk, err)
	}

	vendored := t.TempDir()
	copySDK(t, vendored)
	if sdk, err := findCSDK(vendored, cache); err != nil || sdk.dir != vendored || !sdk.vendored {
		t.Fatalf("vendored: %+v, %v", sdk, err)
	}

	outside := t.TempDir()
	// A go.mod of another module on the way up does not count.
	writeFiles(t, outside, map[string]string{"go.mod": "module example.com/other\n"})
	t.Setenv(CSDKEnv, "")
	embedded, err := findCSDK(outside, cache)
	if err != nil || embedded.dir != filepath.Join(cache, "sdk", SDKVersion(), "c") || embedded.vendored {
		t.Fatalf("no SDK anywhere: %+v, %v; want the embedded one, extracted into the cache", embedded, err)
	}
	for _, f := range []string{"weir.h", "weir.c"} {
		got, err := os.ReadFile(filepath.Join(embedded.dir, f))
		want, werr := os.ReadFile(filepath.Join(root, "guest-sdk", "c", f))
		if err != nil || werr != nil || string(got) != string(want) {
			t.Fatalf("extracted %s differs from guest-sdk/c's (%v, %v)", f, err, werr)
		}
	}
	inSDKDir := t.TempDir()
	if err := os.Mkdir(filepath.Join(inSDKDir, SDKDirName), 0o755); err != nil {
		t.Fatal(err)
	}
	copySDK(t, filepath.Join(inSDKDir, SDKDirName))
	if sdk, err := findCSDK(inSDKDir, cache); err != nil || sdk.dir != filepath.Join(inSDKDir, SDKDirName) || sdk.vendored {
		t.Fatalf("in the plugin's %s folder: %+v, %v", SDKDirName, sdk, err)
	}
	t.Setenv(CSDKEnv, filepath.Join(root, "guest-sdk", "c"))
	if sdk, err := findCSDK(outside, cache); err != nil || sdk.dir != filepath.Join(root, "guest-sdk", "c") {
		t.Fatalf("$%s: %+v, %v", CSDKEnv, sdk, err)
	}
	t.Setenv(CSDKEnv, outside)
	if _, err := findCSDK(outside, cache); err == nil || !strings.Contains(err.Error(), CSDKEnv) {
		t.Fatalf("$%s without the SDK: no error", CSDKEnv)
	}
}

func TestBuildC(t *testing.T) {
	if testing.Short() {
		t.Skip("builds C plugins")
	}
	weirtest.NeedToolchain(t, "c")
	ctx := context.Background()
	cache := t.TempDir()
	dir := t.TempDir()
	copySDK(t, dir)
	writeFiles(t, dir, map[string]string{"plugin.c": cUpper})

	first, err := Build(ctx, dir, Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if !first.Built || first.Cached || first.Lang != LangC {
		t.Fatalf("first build = %+v, want a built C plugin, not cached", first)
	}
	b, err := os.ReadFile(first.Path)
	if err != nil || !bytes.HasPrefix(b, []byte("\x00asm")) {
		t.Fatalf("built module: %v, %q...", err, b[:min(len(b), 8)])
	}
	again, err := Build(ctx, dir, Options{CacheDir: cache})
	if err != nil || !again.Cached || again.Path != first.Path {
		t.Fatalf("second build = %+v, %v; want the cached %s", again, err, first.Path)
	}

	// A change to the SDK is a new build.
	writeFiles(t, dir, map[string]string{"weir.h": mustRead(t, filepath.Join(dir, "weir.h")) + "\n/* changed */\n"})
	changed, err := Build(ctx, dir, Options{CacheDir: cache})
	if err != nil || changed.Cached || changed.Path == first.Path {
		t.Fatalf("after an SDK change = %+v, %v; want a new build", changed, err)
	}

	// Compiler errors are part of the error.
	writeFiles(t, dir, map[string]string{"plugin.c": cUpper + "\nthis is not C\n"})
	_, err = Build(ctx, dir, Options{CacheDir: cache})
	if err == nil || !strings.Contains(err.Error(), "c build failed") || !strings.Contains(err.Error(), "plugin.c") {
		t.Fatalf("broken source: err = %v", err)
	}
}

// TestBuildCInTree builds a conformance plugin that takes the SDK from the
// repository's guest-sdk/c.
func TestBuildCInTree(t *testing.T) {
	if testing.Short() {
		t.Skip("builds C plugins")
	}
	weirtest.NeedToolchain(t, "c")
	dir := filepath.Join(moduleRoot(t), "plugins", "conformance", "c", "uppercase")
	src, err := Build(context.Background(), dir, Options{CacheDir: t.TempDir()})
	if err != nil || src.Lang != LangC {
		t.Fatalf("Build = %+v, %v", src, err)
	}
}

func TestBuildCWithoutClang(t *testing.T) {
	clangOK.Lock()
	saved := clangOK.path
	clangOK.path = ""
	clangOK.Unlock()
	t.Cleanup(func() {
		clangOK.Lock()
		if clangOK.path == "" {
			clangOK.path = saved
		}
		clangOK.Unlock()
	})
	dir := t.TempDir()
	copySDK(t, dir)
	writeFiles(t, dir, map[string]string{"plugin.c": cUpper})
	t.Setenv("PATH", t.TempDir())
	_, err := Build(context.Background(), dir, Options{CacheDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "scripts/install-toolchains.sh") {
		t.Fatalf("err = %v, want one pointing at scripts/install-toolchains.sh", err)
	}
	if _, err := exec.LookPath("clang"); err == nil {
		t.Fatal("clang found on an empty PATH")
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
