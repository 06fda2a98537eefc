package pluginbuild

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Rust plugins are cdylib crates built for wasm32-wasi with Debian's Rust
// toolchain, whose standard library has the wasm32-wasi target (the rustup
// toolchain a developer may also have usually does not). Crates come only
// from Debian's librust-*-dev packages, through cargo's directory source
// /usr/share/cargo/registry, offline. scripts/install-toolchains.sh installs
// all of it.
//
// The build runs with its own CARGO_HOME (holding the config that selects
// that registry) and its target directory under the cache directory, one
// per plugin folder, so nothing but Cargo.lock is written into the source
// tree. Cargo.lock is created before hashing when it is missing, so that
// the hash covers the exact dependency versions and a first build does not
// change the hash of the next.

// The Rust tools. Variables so that tests can point them elsewhere.
var (
	rustCargo   = "/usr/bin/cargo"
	rustRustc   = "/usr/bin/rustc"
	rustRustdoc = "/usr/bin/rustdoc"
	rustTarget  = "wasm32-wasi"
	rustCrates  = "/usr/share/cargo/registry"
	rustInstall = "run scripts/install-toolchains.sh"
)

// rustFlags are rustc's flags for every Rust plugin, passed as the
// target's rustflags (added to any the plugin's own cargo config sets for
// the target): bulk memory, so that copies the plugin and the SDK compile
// (Vec::extend_from_slice, copy_from_slice) are one memory.copy
// instruction instead of a call to wasi-libc's byte-and-word memcpy, as
// the C plugins' -mbulk-memory does. The profile (opt-level, lto,
// codegen-units, panic) is the plugin's Cargo.toml's.
var rustFlags = []string{"-C", "target-feature=+bulk-memory"}

// rustFlagsConfig is the --config value that sets rustFlags.
func rustFlagsConfig() string {
	q := make([]string, len(rustFlags))
	for i, f := range rustFlags {
		q[i] = strconv.Quote(f)
	}
	return "target." + rustTarget + ".rustflags=[" + strings.Join(q, ", ") + "]"
}

func init() {
	register(LangRust, builder{hash: rustHash, build: rustBuild})
}

// rustVersions caches the tool versions per tool path.
var rustVersions struct {
	sync.Mutex
	m map[string]string
}

// rustToolVersions returns the versions of cargo and rustc, which are part
// of the build's hash.
func rustToolVersions(ctx context.Context) (string, error) {
	if _, err := os.Stat(rustCargo); err != nil {
		return "", fmt.Errorf("building Rust plugins needs Debian's cargo at %s (%s): %w", rustCargo, rustInstall, err)
	}
	if _, err := os.Stat(rustRustc); err != nil {
		return "", fmt.Errorf("building Rust plugins needs Debian's rustc at %s (%s): %w", rustRustc, rustInstall, err)
	}
	key := rustCargo + "\x00" + rustRustc
	rustVersions.Lock()
	defer rustVersions.Unlock()
	if v, ok := rustVersions.m[key]; ok {
		return v, nil
	}
	var out strings.Builder
	for _, c := range [][]string{{rustRustc, "-vV"}, {rustCargo, "-V"}} {
		b, err := exec.CommandContext(ctx, c[0], c[1:]...).Output()
		if err != nil {
			return "", fmt.Errorf("%s %s: %w (%s)", c[0], c[1], err, rustInstall)
		}
		out.Write(b)
	}
	if rustVersions.m == nil {
		rustVersions.m = map[string]string{}
	}
	rustVersions.m[key] = out.String()
	return out.String(), nil
}

// rustEnv is the environment of the cargo commands: Debian's tools, the
// offline registry config in cargoHome, and no flags from the caller's
// environment that the hash would not see.
func rustEnv(cargoHome, targetDir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "CARGO_HOME", name == "RUSTC", name == "RUSTDOC", name == "CARGO_TARGET_DIR",
			name == "RUSTFLAGS", name == "RUSTUP_TOOLCHAIN", name == "RUSTC_WRAPPER",
			strings.HasPrefix(name, "CARGO_BUILD_"), strings.HasPrefix(name, "CARGO_PROFILE_"),
			name == "CARGO_ENCODED_RUSTFLAGS", name == "PATH":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"CARGO_HOME="+cargoHome,
		"RUSTC="+rustRustc,
		"RUSTDOC="+rustRustdoc,
		"CARGO_TARGET_DIR="+targetDir,
		"CARGO_TERM_COLOR=never",
		"PATH="+filepath.Dir(rustCargo)+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
}

// rustCargoHome writes, under root, a CARGO_HOME whose config replaces
// crates.io with Debian's crate directory, offline, and returns it.
func rustCargoHome(root string) (string, error) {
	home := filepath.Join(root, "cargo-home")
	config := fmt.Sprintf(`# Written by weir: crates come only from Debian's librust-*-dev packages.
[source.crates-io]
replace-with = "debian"

[source.debian]
directory = %q

[net]
offline = true
`, rustCrates)
	path := filepath.Join(home, "config.toml")
	if b, err := os.ReadFile(path); err == nil && string(b) == config {
		return home, nil
	}
	if err := os.MkdirAll(home, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(home, ".config-*")
	if err != nil {
		return "", err
	}
	_, err = tmp.WriteString(config)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return home, nil
}

// rustWorkDir is where the builds of the plugin in dir keep their cargo
// state, under cacheDir: the shared CARGO_HOME and the plugin's own target
// directory.
func rustWorkDir(cacheDir, dir string) (cargoHome, targetDir string, err error) {
	root := filepath.Join(cacheDir, "rust")
	cargoHome, err = rustCargoHome(root)
	if err != nil {
		return "", "", fmt.Errorf("cargo home: %w", err)
	}
	sum := sha256.Sum256([]byte(dir))
	return cargoHome, filepath.Join(root, "target", filepath.Base(dir)+"-"+hex.EncodeToString(sum[:8])), nil
}

// pathDepRE finds `path = "..."` settings in a Cargo.toml: the path
// dependencies (and [lib]/[[bin]] paths, which resolve to files and are
// ignored).
var pathDepRE = regexp.MustCompile(`(?m)\bpath\s*=\s*(?:"([^"]*)"|'([^']*)')`)

// rustRoots returns dir and the folders of every crate it depends on by
// path, transitively, as Cargo.toml files name them.
func rustRoots(dir string) ([]string, error) {
	var roots []string
	seen := map[string]bool{}
	var visit func(d string) error
	visit = func(d string) error {
		if seen[d] {
			return nil
		}
		seen[d] = true
		roots = append(roots, d)
		b, err := os.ReadFile(filepath.Join(d, "Cargo.toml"))
		if err != nil {
			return err
		}
		for _, m := range pathDepRE.FindAllSubmatch(b, -1) {
			p := string(m[1]) + string(m[2])
			if !filepath.IsAbs(p) {
				p = filepath.Join(d, p)
			}
			p = filepath.Clean(p)
			if fi, err := os.Stat(filepath.Join(p, "Cargo.toml")); err != nil || fi.IsDir() {
				continue // a file ([lib] path) or a missing crate, which cargo reports
			}
			if err := visit(p); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visit(dir); err != nil {
		return nil, err
	}
	return roots, nil
}

// rustHash hashes everything a Rust plugin's build reads: the sources of
// the plugin and of its path dependencies (skipping target folders), its
// Cargo.lock (created if missing), and the tool versions.
func rustHash(ctx context.Context, dir string) (string, error) {
	versions, err := rustToolVersions(ctx)
	if err != nil {
		return "", fmt.Errorf("plugin %s is Rust source: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "Cargo.lock")); errors.Is(err, os.ErrNotExist) {
		if err := rustLockfile(ctx, dir); err != nil {
			return "", fmt.Errorf("plugin %s: %w", dir, err)
		}
	}
	roots, err := rustRoots(dir)
	if err != nil {
		return "", fmt.Errorf("plugin %s: %w", dir, err)
	}
	h, err := HashFiles([]string{versions, rustTarget, rustCrates, rustFlagsConfig()}, []string{"target", ".git"}, roots...)
	if err != nil {
		return "", fmt.Errorf("plugin %s: %w", dir, err)
	}
	return h, nil
}

// rustLockfile creates dir's Cargo.lock, resolving against the offline
// registry. It uses the default cache directory's CARGO_HOME: the hash
// step does not know the build's.
func rustLockfile(ctx context.Context, dir string) error {
	cargoHome, targetDir, err := rustWorkDir(DefaultCacheDir(), dir)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, rustCargo, "generate-lockfile", "--offline")
	cmd.Dir = dir
	cmd.Env = rustEnv(cargoHome, targetDir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("cargo generate-lockfile: %w\n%s", err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// rustBuild builds the plugin in dir with cargo and copies the cdylib to
// out. out lies in the cache's plugins directory; cargo's state goes next
// to it.
func rustBuild(ctx context.Context, dir, out string) error {
	if _, err := os.Stat(rustCargo); err != nil {
		return fmt.Errorf("building Rust plugins needs Debian's cargo at %s: %s", rustCargo, rustInstall)
	}
	cacheDir := filepath.Dir(filepath.Dir(out))
	cargoHome, targetDir, err := rustWorkDir(cacheDir, dir)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, rustCargo, "build", "--release", "--offline",
		"--target", rustTarget, "--config", rustFlagsConfig(), "--message-format=json-render-diagnostics")
	cmd.Dir = dir
	cmd.Env = rustEnv(cargoHome, targetDir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if runErr != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = runErr.Error()
		}
		if strings.Contains(msg, "can't find crate for `std`") || strings.Contains(msg, "target may not be installed") {
			msg += "\n(the " + rustTarget + " standard library is missing: " + rustInstall + ")"
		}
		return errors.New(msg)
	}
	wasm, err := rustArtifact(&stdout, filepath.Join(dir, "Cargo.toml"))
	if err != nil {
		return fmt.Errorf("%w\n%s", err, strings.TrimSpace(stderr.String()))
	}
	return copyFile(wasm, out)
}

// rustArtifact finds, in cargo's JSON messages, the .wasm file of the
// cdylib of the package whose manifest is manifest.
func rustArtifact(r io.Reader, manifest string) (string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var found []string
	for sc.Scan() {
		var msg struct {
			Reason       string   `json:"reason"`
			ManifestPath string   `json:"manifest_path"`
			Filenames    []string `json:"filenames"`
			Target       struct {
				Kind []string `json:"kind"`
			} `json:"target"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.Reason != "compiler-artifact" {
			continue
		}
		cdylib := false
		for _, k := range msg.Target.Kind {
			cdylib = cdylib || k == "cdylib"
		}
		if !cdylib || filepath.Clean(msg.ManifestPath) != filepath.Clean(manifest) {
			continue
		}
		for _, f := range msg.Filenames {
			if strings.HasSuffix(f, ".wasm") {
				found = append(found, f)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if len(found) == 0 {
		return "", errors.New(`cargo built no .wasm: the plugin's Cargo.toml needs [lib] crate-type = ["cdylib"]`)
	}
	return found[len(found)-1], nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}
