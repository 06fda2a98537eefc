package pluginbuild_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/internal/pluginbuild"
)

// asRoot returns the weir module root, skipping the test when the
// AssemblyScript compiler is not installed there (see
// weirtest.NeedToolchain).
func asRoot(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds AssemblyScript plugins")
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	weirtest.NeedToolchain(t, "assemblyscript")
	return root
}

func TestAssemblyScriptBuildCaches(t *testing.T) {
	root := asRoot(t)
	ctx := context.Background()
	cache := t.TempDir()
	// A copy of a conformance plugin, outside the tree, whose asconfig.json
	// extends the SDK's by absolute path: the SDK (and asc) are found
	// through it.
	src := filepath.Join(root, "plugins", "conformance", "assemblyscript", "fail_on")
	dir := filepath.Join(t.TempDir(), "fail_on")
	copyTree(t, src, dir)
	sdkConfig := filepath.Join(root, "guest-sdk", "assemblyscript", "asconfig.plugin.json")
	cfg := `{"extends": "` + filepath.ToSlash(sdkConfig) + `", "entries": ["./assembly/index.ts"]}`
	if err := os.WriteFile(filepath.Join(dir, "asconfig.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("WEIR_ASC", "")

	if lang, err := pluginbuild.Detect(dir); err != nil || lang != pluginbuild.LangAssemblyScript {
		t.Fatalf("Detect = %v, %v; want assemblyscript", lang, err)
	}
	first, err := pluginbuild.Build(ctx, dir, pluginbuild.Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if !first.Built || first.Cached || first.Lang != pluginbuild.LangAssemblyScript {
		t.Fatalf("first build = %+v", first)
	}
	wasm, err := os.ReadFile(first.Path)
	if err != nil || !bytes.HasPrefix(wasm, []byte("\x00asm")) {
		t.Fatalf("built module %s: %v", first.Path, err)
	}
	again, err := pluginbuild.Build(ctx, dir, pluginbuild.Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Cached || again.Path != first.Path {
		t.Fatalf("second build = %+v, want the cached %s", again, first.Path)
	}
	// A build output or node_modules folder does not change the hash.
	for _, d := range []string{"node_modules", "build"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, d, "x.wasm"), []byte("junk"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := pluginbuild.Build(ctx, dir, pluginbuild.Options{CacheDir: cache}); err != nil || !b.Cached {
		t.Fatalf("build with outputs = %+v, %v; want cached", b, err)
	}
	// A source change is a new build, and a compile error is reported.
	index := filepath.Join(dir, "assembly", "index.ts")
	b, _ := os.ReadFile(index)
	if err := os.WriteFile(index, append(b, "\nlet broken: i32 = \"no\";\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = pluginbuild.Build(ctx, dir, pluginbuild.Options{CacheDir: cache})
	if err == nil || !strings.Contains(err.Error(), "assemblyscript build failed") || !strings.Contains(err.Error(), "index.ts") {
		t.Fatalf("broken build: err = %v", err)
	}
}

func TestAssemblyScriptNoCompiler(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "asconfig.json"), []byte(`{"entries":["./index.ts"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.ts"), []byte("export function f(): void {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("WEIR_ASC", "")
	_, err := pluginbuild.Build(context.Background(), dir, pluginbuild.Options{CacheDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "scripts/install-toolchains.sh") {
		t.Fatalf("err = %v, want a pointer to scripts/install-toolchains.sh", err)
	}
}

// copyTree copies the regular files under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
