package pluginbuild

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func moduleRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// userModule writes a plugin module outside the weir tree, as a user would
// have it, that uses the SDK from this checkout.
func userModule(t *testing.T, mainGo string) string {
	t.Helper()
	dir := t.TempDir()
	root := moduleRoot(t)
	gomod := "module example.com/plug\n\ngo 1.26\n\nrequire github.com/weir-stream/weir v0.0.0\n\nreplace github.com/weir-stream/weir => " + root + "\n"
	for name, content := range map[string]string{"go.mod": gomod, "main.go": mainGo} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "mod", "tidy")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, out)
	}
	return dir
}

const upperPlugin = `package main

import (
	"bytes"

	weir "github.com/weir-stream/weir/guest-sdk/go"
)

func init() {
	weir.Map(func(r *weir.Record) ([]byte, error) { return bytes.ToUpper(r.Value), nil })
}

func main() {}
`

func TestBuildCachesByContent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go plugins")
	}
	ctx := context.Background()
	cache := t.TempDir()
	dir := userModule(t, upperPlugin)

	first, err := Build(ctx, dir, Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if !first.Built || first.Cached {
		t.Fatalf("first build = %+v, want built and not cached", first)
	}
	again, err := Build(ctx, dir, Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Cached || again.Path != first.Path {
		t.Fatalf("second build = %+v, want the cached %s", again, first.Path)
	}

	// Any change to a source file is a new build.
	changed := strings.Replace(upperPlugin, "ToUpper", "ToLower", 1)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	third, err := Build(ctx, dir, Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if third.Cached || third.Path == first.Path {
		t.Fatalf("build after a change = %+v, want a new module", third)
	}

	b, src, err := Load(ctx, dir, Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:4]) != "\x00asm" || len(src.Hash) != 64 || src.Path != third.Path {
		t.Fatalf("Load = %d bytes, %+v", len(b), src)
	}
}

func TestBuildReportsCompilerErrors(t *testing.T) {
	dir := userModule(t, upperPlugin)
	broken := strings.Replace(upperPlugin, "func main() {}", "func main() { undefinedThing() }", 1)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Build(context.Background(), dir, Options{CacheDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "undefinedThing") || !strings.Contains(err.Error(), "main.go") {
		t.Fatalf("Build error = %v, want the compiler's message", err)
	}
}

func TestLoadWasmFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.wasm")
	if err := os.WriteFile(path, []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, src, err := Load(context.Background(), path, Options{})
	if err != nil || len(b) != 8 || src.Built || src.Path != path {
		t.Fatalf("Load = %d bytes, %+v, %v", len(b), src, err)
	}
	if _, _, err := Load(context.Background(), path+".missing", Options{}); err == nil {
		t.Fatal("Load of a missing file succeeded")
	}
}
