package pluginbuild

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// TestRustBuildLibOnly builds a Rust plugin folder that holds only
// src/lib.rs: weir supplies the Cargo.toml and the SDK, and writes nothing
// into the folder; a second build is cached.
func TestRustBuildLibOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Rust plugin")
	}
	weirtest.NeedToolchain(t, "rust")
	dir := filepath.Join(t.TempDir(), "Shout-2")
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, filepath.Join(dir, "src"), map[string]string{"lib.rs": rustUpper})
	if lang, err := Detect(dir); err != nil || lang != LangRust {
		t.Fatalf("Detect = %v, %v; want rust", lang, err)
	}
	cache := t.TempDir()
	first, err := Build(context.Background(), dir, Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || entries[0].Name() != "src" {
		t.Fatalf("the folder holds %v after the build (%v), want only src", entries, err)
	}
	again, err := Build(context.Background(), dir, Options{CacheDir: cache})
	if err != nil || !again.Cached || again.Path != first.Path {
		t.Fatalf("second build: %+v, %v; want the cached module %s", again, err, first.Path)
	}
}

func TestRustCrateName(t *testing.T) {
	for _, tt := range []struct{ name, base, want string }{
		{"plain", "shout", "shout"},
		{"dashes and case", "Shout-2", "shout_2"},
		{"a digit first", "2x", "plugin_2x"},
		{"nothing usable", "---", "plugin_"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := rustCrateName(tt.base); got != tt.want {
				t.Fatalf("rustCrateName(%q) = %q, want %q", tt.base, got, tt.want)
			}
		})
	}
}
