package pluginbuild

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// rustPlugin writes a Rust plugin crate outside the weir tree, as a user
// would have it, that uses the SDK from this checkout by path.
func rustPlugin(t *testing.T, lib string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "shout")
	sdk := filepath.Join(moduleRoot(t), "guest-sdk", "rust")
	cargo := `[package]
name = "shout"
version = "0.1.0"
edition = "2021"

[lib]
crate-type = ["cdylib"]

[dependencies]
weir = { path = "` + sdk + `" }

[workspace]
`
	for name, content := range map[string]string{"Cargo.toml": cargo, "src/lib.rs": lib} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const rustUpper = `fn init(_: &weir::Config) -> Result<(), weir::Error> {
    weir::register_map(|r, out| {
        out.set_value(Some(&r.value_bytes().to_ascii_uppercase()));
        Ok(())
    });
    Ok(())
}

weir::plugin!(init);
`

func TestRustDetect(t *testing.T) {
	dir := rustPlugin(t, rustUpper)
	if lang, err := Detect(dir); err != nil || lang != LangRust {
		t.Fatalf("Detect = %v, %v; want rust", lang, err)
	}
}

func TestRustRoots(t *testing.T) {
	root := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("plug/Cargo.toml", `[package]
name = "plug"
[lib]
path = "src/lib.rs"
crate-type = ["cdylib"]
[dependencies]
a = { path = "../a" }
missing = { path = "../missing" }
[dependencies.b]
path = '`+filepath.Join(root, "b")+`'
`)
	write("plug/src/lib.rs", "")
	write("a/Cargo.toml", "[dependencies]\nb = { path = \"../b\" }\n")
	write("b/Cargo.toml", "[package]\nname = \"b\"\n")
	got, err := rustRoots(filepath.Join(root, "plug"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "plug"), filepath.Join(root, "a"), filepath.Join(root, "b")}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rustRoots = %q, want %q", got, want)
	}
}

func TestRustHash(t *testing.T) {
	weirtest.NeedToolchain(t, "rust")
	t.Setenv("WEIR_CACHE_DIR", t.TempDir())
	ctx := context.Background()
	dir := rustPlugin(t, rustUpper)
	h1, err := rustHash(ctx, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "Cargo.lock")); err != nil {
		t.Fatalf("no Cargo.lock after hashing: %v", err)
	}
	// A target folder is not an input.
	if err := os.MkdirAll(filepath.Join(dir, "target"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "target", "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if h2, err := rustHash(ctx, dir, ""); err != nil || h2 != h1 {
		t.Fatalf("hash after writing target/ = %s, %v; want %s", h2, err, h1)
	}
	if err := os.WriteFile(filepath.Join(dir, "src", "lib.rs"), []byte(rustUpper+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if h3, err := rustHash(ctx, dir, ""); err != nil || h3 == h1 {
		t.Fatalf("hash after a source change = %s, %v; want a new one", h3, err)
	}
}

func TestRustBuildCachesByContent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Rust plugin")
	}
	weirtest.NeedToolchain(t, "rust")
	ctx := context.Background()
	cache := t.TempDir()
	t.Setenv("WEIR_CACHE_DIR", cache)
	dir := rustPlugin(t, rustUpper)
	first, err := Build(ctx, dir, Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if !first.Built || first.Cached || first.Lang != LangRust {
		t.Fatalf("first build = %+v, want built, not cached, rust", first)
	}
	b, err := os.ReadFile(first.Path)
	if err != nil || !strings.HasPrefix(string(b), "\x00asm") {
		t.Fatalf("built module: %d bytes, %v", len(b), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "target")); err == nil {
		t.Error("the build wrote a target folder into the source tree")
	}
	again, err := Build(ctx, dir, Options{CacheDir: cache})
	if err != nil || !again.Cached || again.Path != first.Path {
		t.Fatalf("second build = %+v, %v; want the cached %s", again, err, first.Path)
	}

	// A compiler error is reported with the compiler's message.
	broken := strings.Replace(rustUpper, "Ok(())\n}", "undefined_thing()\n}", 1)
	if err := os.WriteFile(filepath.Join(dir, "src", "lib.rs"), []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Build(ctx, dir, Options{CacheDir: cache})
	if err == nil || !strings.Contains(err.Error(), "undefined_thing") || !strings.Contains(err.Error(), "rust build failed") {
		t.Fatalf("Build error = %v, want the compiler's message", err)
	}
}

func TestRustMissingCargo(t *testing.T) {
	old := rustCargo
	rustCargo = filepath.Join(t.TempDir(), "no-cargo")
	defer func() { rustCargo = old }()
	dir := rustPlugin(t, rustUpper)
	_, err := Build(context.Background(), dir, Options{CacheDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "install-toolchains.sh") {
		t.Fatalf("Build without cargo: %v, want a hint to run scripts/install-toolchains.sh", err)
	}
}
