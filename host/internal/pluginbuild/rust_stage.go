package pluginbuild

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// A Rust plugin folder without a Cargo.toml, only src/lib.rs (and other
// sources), is built from a copy under the cache directory (rust-src/)
// with a Cargo.toml that makes it a cdylib crate depending, by path, on
// the Rust SDK extracted from the binary, with the release profile of
// `weir plugin new`'s projects. Nothing is written into the folder.

// rustSourceDir returns the folder to build the Rust plugin in dir from:
// dir itself when it has a Cargo.toml, else its staged copy.
func rustSourceDir(dir, cacheDir string) (string, error) {
	if fileExists(filepath.Join(dir, "Cargo.toml")) {
		return dir, nil
	}
	if cacheDir == "" {
		cacheDir = DefaultCacheDir()
	}
	sdk, err := ExtractedSDK(cacheDir, LangRust)
	if err != nil {
		return "", fmt.Errorf("plugin %s: %w", dir, err)
	}
	files, err := stageFiles(dir)
	if err != nil {
		return "", fmt.Errorf("plugin %s: %w", dir, err)
	}
	files["Cargo.toml"] = []byte(rustStageManifest(rustCrateName(filepath.Base(dir)), sdk))
	if _, ok := files["Cargo.lock"]; !ok {
		// Keep the lock file an earlier build resolved in the copy.
		if b, err := os.ReadFile(filepath.Join(stageDirFor(cacheDir, "rust-src", dir), "Cargo.lock")); err == nil {
			files["Cargo.lock"] = b
		}
	}
	return stage(cacheDir, "rust-src", dir, files)
}

// rustCrateNameRE matches what a crate name may not hold.
var rustCrateNameRE = regexp.MustCompile(`[^a-z0-9_]+`)

// rustCrateName makes a crate name of a folder's name.
func rustCrateName(base string) string {
	name := strings.Trim(rustCrateNameRE.ReplaceAllString(strings.ToLower(base), "_"), "_")
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		name = "plugin_" + name
	}
	return name
}

// rustStageManifest is the Cargo.toml of a staged Rust plugin.
func rustStageManifest(name, sdk string) string {
	return fmt.Sprintf(`# Written by weir for a plugin folder without a Cargo.toml.
[package]
name = %q
version = "0.1.0"
edition = "2021"
publish = false

[lib]
crate-type = ["cdylib"]

[dependencies]
weir = { path = %q }

[profile.release]
opt-level = 3
lto = true
codegen-units = 1
panic = "abort"
strip = true

[workspace]
`, name, sdk)
}
