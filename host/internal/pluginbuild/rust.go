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

// Rust plugins are cdylib crates built for a Wasm target with cargo. The
// toolchain is, in order (rustToolchain):
//
//  1. $WEIR_CARGO, with $WEIR_RUSTC or the rustc beside it, when set;
//  2. the cargo on PATH, when its rustc has a Wasm target installed
//     (rustup's wasm32-wasip1, wasm32-wasi or wasm32-unknown-unknown);
//  3. Debian's /usr/bin/cargo and rustc, whose standard library has the
//     wasm32-wasi target (libstd-rust-dev-wasm32).
//
// With Debian's toolchain, crates come only from Debian's librust-*-dev
// packages, through cargo's directory source /usr/share/cargo/registry,
// offline, and the build has its own CARGO_HOME holding the config that
// selects that registry; another toolchain uses the user's CARGO_HOME and
// registries. scripts/install-toolchains.sh installs Debian's.
//
// The target directory lies under the cache directory, one per plugin
// folder, so nothing but Cargo.lock is written into the source tree.
// Cargo.lock is created before hashing when it is missing, so that the
// hash covers the exact dependency versions and a first build does not
// change the hash of the next.

// Debian's Rust tools. Variables so that tests can point them elsewhere.
var (
	rustCargo   = "/usr/bin/cargo"
	rustRustc   = "/usr/bin/rustc"
	rustRustdoc = "/usr/bin/rustdoc"
	rustTarget  = "wasm32-wasi"
	rustCrates  = "/usr/share/cargo/registry"
	rustInstall = "run scripts/install-toolchains.sh"
)

// rustWasmTargets are the targets a Rust toolchain may build plugins for,
// most preferred first.
var rustWasmTargets = []string{"wasm32-wasip1", "wasm32-wasi", "wasm32-unknown-unknown"}

// rustFlags are rustc's flags for every Rust plugin, passed as the
// target's rustflags (added to any the plugin's own cargo config sets for
// the target): bulk memory, so that copies the plugin and the SDK compile
// (Vec::extend_from_slice, copy_from_slice) are one memory.copy
// instruction instead of a call to wasi-libc's byte-and-word memcpy, as
// the C plugins' -mbulk-memory does. The profile (opt-level, lto,
// codegen-units, panic) is the plugin's Cargo.toml's.
var rustFlags = []string{"-C", "target-feature=+bulk-memory"}

// rustFlagsConfig is the --config value that sets rustFlags for target.
func rustFlagsConfig(target string) string {
	q := make([]string, len(rustFlags))
	for i, f := range rustFlags {
		q[i] = strconv.Quote(f)
	}
	return "target." + target + ".rustflags=[" + strings.Join(q, ", ") + "]"
}

func init() {
	register(LangRust, builder{hash: rustHash, build: rustBuild})
}

// rustTools is the Rust toolchain a build uses. It is a plain value.
type rustTools struct {
	cargo, rustc, rustdoc string
	target                string // the Wasm target
	debian                bool   // Debian's toolchain, with its offline crates
	why                   string // why this toolchain, for the log
	versions              string // rustc -vV and cargo -V
}

// rustFound caches rustToolchain's answers by the environment it read.
var rustFound struct {
	sync.Mutex
	m map[string]rustTools
}

// rustToolchain finds the Rust toolchain, in the order above.
func rustToolchain(ctx context.Context) (rustTools, error) {
	key := os.Getenv("WEIR_CARGO") + "\x00" + os.Getenv("WEIR_RUSTC") + "\x00" + os.Getenv("PATH") + "\x00" + rustCargo
	rustFound.Lock()
	defer rustFound.Unlock()
	if tc, ok := rustFound.m[key]; ok {
		return tc, nil
	}
	tc, err := rustFind(ctx)
	if err != nil {
		return tc, err
	}
	if rustFound.m == nil {
		rustFound.m = map[string]rustTools{}
	}
	rustFound.m[key] = tc
	return tc, nil
}

func rustFind(ctx context.Context) (rustTools, error) {
	if cargo := os.Getenv("WEIR_CARGO"); cargo != "" {
		tc, err := rustCandidate(ctx, cargo, os.Getenv("WEIR_RUSTC"))
		if err != nil {
			return tc, fmt.Errorf("$WEIR_CARGO=%s: %w", cargo, err)
		}
		tc.why = "$WEIR_CARGO"
		return tc, nil
	}
	var skipped string
	if cargo, err := exec.LookPath("cargo"); err == nil && filepath.Clean(cargo) != rustCargo {
		tc, err := rustCandidate(ctx, cargo, "")
		if err == nil {
			tc.why = "the cargo on PATH, which has the " + tc.target + " target"
			return tc, nil
		}
		skipped = "; the cargo on PATH (" + cargo + ") was not used: " + err.Error()
	}
	if _, err := os.Stat(rustCargo); err != nil {
		return rustTools{}, fmt.Errorf("building Rust plugins needs a cargo with a Wasm target: none on PATH and no Debian cargo at %s (%s, or set $WEIR_CARGO)%s", rustCargo, rustInstall, skipped)
	}
	if _, err := os.Stat(rustRustc); err != nil {
		return rustTools{}, fmt.Errorf("building Rust plugins needs Debian's rustc at %s (%s): %w", rustRustc, rustInstall, err)
	}
	tc := rustTools{cargo: rustCargo, rustc: rustRustc, rustdoc: rustRustdoc, target: rustTarget, debian: true,
		why: "Debian's cargo, with the offline crates of " + rustCrates + skipped}
	v, err := rustVersionsOf(ctx, tc.cargo, tc.rustc)
	tc.versions = v
	return tc, err
}

// rustCandidate checks a cargo (and its rustc: rustc, or the one beside
// cargo, or the one on PATH) for a Wasm target.
func rustCandidate(ctx context.Context, cargo, rustc string) (rustTools, error) {
	if rustc == "" {
		rustc = filepath.Join(filepath.Dir(cargo), "rustc")
		if _, err := os.Stat(rustc); err != nil {
			if rustc, err = exec.LookPath("rustc"); err != nil {
				return rustTools{}, errors.New("no rustc beside it or on PATH")
			}
		}
	}
	out, err := exec.CommandContext(ctx, rustc, "--print", "sysroot").Output()
	if err != nil {
		return rustTools{}, fmt.Errorf("%s --print sysroot: %w", rustc, err)
	}
	sysroot := strings.TrimSpace(string(out))
	tc := rustTools{cargo: cargo, rustc: rustc, rustdoc: filepath.Join(filepath.Dir(rustc), "rustdoc")}
	for _, t := range rustWasmTargets {
		if _, err := os.Stat(filepath.Join(sysroot, "lib", "rustlib", t, "lib")); err == nil {
			tc.target = t
			break
		}
	}
	if tc.target == "" {
		return tc, fmt.Errorf("its rustc has no Wasm target (%s; with rustup: rustup target add wasm32-wasip1)", strings.Join(rustWasmTargets, ", "))
	}
	tc.debian = filepath.Clean(cargo) == rustCargo
	tc.versions, err = rustVersionsOf(ctx, cargo, rustc)
	return tc, err
}

// rustVersionsOf returns the versions of cargo and rustc, which are part
// of the build's hash.
func rustVersionsOf(ctx context.Context, cargo, rustc string) (string, error) {
	var out strings.Builder
	for _, c := range [][]string{{rustc, "-vV"}, {cargo, "-V"}} {
		b, err := exec.CommandContext(ctx, c[0], c[1:]...).Output()
		if err != nil {
			return "", fmt.Errorf("%s %s: %w (%s)", c[0], c[1], err, rustInstall)
		}
		out.Write(b)
	}
	return out.String(), nil
}

// rustEnv is the environment of Debian's cargo commands: Debian's tools,
// the offline registry config in cargoHome, and no flags from the
// caller's environment that the hash would not see.
func rustEnv(cargoHome, targetDir string) []string {
	return rustToolEnv(rustTools{cargo: rustCargo, rustc: rustRustc, rustdoc: rustRustdoc, debian: true}, cargoHome, targetDir)
}

// rustToolEnv is the environment of tc's cargo commands: for Debian's
// toolchain as rustEnv says; for another, the user's CARGO_HOME.
func rustToolEnv(tc rustTools, cargoHome, targetDir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "CARGO_HOME" && tc.debian, name == "RUSTC", name == "RUSTDOC", name == "CARGO_TARGET_DIR",
			name == "RUSTFLAGS", name == "RUSTC_WRAPPER",
			name == "RUSTUP_TOOLCHAIN" && tc.debian,
			strings.HasPrefix(name, "CARGO_BUILD_"), strings.HasPrefix(name, "CARGO_PROFILE_"),
			name == "CARGO_ENCODED_RUSTFLAGS", name == "PATH":
			continue
		}
		env = append(env, kv)
	}
	if tc.debian {
		env = append(env, "CARGO_HOME="+cargoHome)
	}
	return append(env,
		"RUSTC="+tc.rustc,
		"RUSTDOC="+tc.rustdoc,
		"CARGO_TARGET_DIR="+targetDir,
		"CARGO_TERM_COLOR=never",
		"PATH="+filepath.Dir(tc.cargo)+string(os.PathListSeparator)+os.Getenv("PATH"),
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
func rustHash(ctx context.Context, dir, cacheDir string) (string, error) {
	tc, err := rustToolchain(ctx)
	if err != nil {
		return "", fmt.Errorf("plugin %s is Rust source: %w", dir, err)
	}
	if dir, err = rustSourceDir(dir, cacheDir); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "Cargo.lock")); errors.Is(err, os.ErrNotExist) {
		if err := rustLockfile(ctx, tc, dir); err != nil {
			return "", fmt.Errorf("plugin %s: %w", dir, err)
		}
	}
	roots, err := rustRoots(dir)
	if err != nil {
		return "", fmt.Errorf("plugin %s: %w", dir, err)
	}
	h, err := HashFiles([]string{tc.versions, tc.target, strconv.FormatBool(tc.debian), rustCrates, rustFlagsConfig(tc.target)}, []string{"target", ".git"}, roots...)
	if err != nil {
		return "", fmt.Errorf("plugin %s: %w", dir, err)
	}
	return h, nil
}

// rustLockfile creates dir's Cargo.lock, resolving against the offline
// registry. It uses the default cache directory's CARGO_HOME: the hash
// step does not know the build's.
func rustLockfile(ctx context.Context, tc rustTools, dir string) error {
	cargoHome, targetDir, err := rustWorkDir(DefaultCacheDir(), dir)
	if err != nil {
		return err
	}
	args := []string{"generate-lockfile"}
	if tc.debian {
		args = append(args, "--offline")
	}
	cmd := exec.CommandContext(ctx, tc.cargo, args...)
	cmd.Dir = dir
	cmd.Env = rustToolEnv(tc, cargoHome, targetDir)
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
	tc, err := rustToolchain(ctx)
	if err != nil {
		return err
	}
	if dir, err = rustSourceDir(dir, outCacheDir(out)); err != nil {
		return err
	}
	cargoHome, targetDir, err := rustWorkDir(outCacheDir(out), dir)
	if err != nil {
		return err
	}
	args := []string{"build", "--release", "--target", tc.target, "--config", rustFlagsConfig(tc.target), "--message-format=json-render-diagnostics"}
	if tc.debian {
		args = append(args, "--offline")
	}
	cmd := exec.CommandContext(ctx, tc.cargo, args...)
	cmd.Dir = dir
	cmd.Env = rustToolEnv(tc, cargoHome, targetDir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if runErr != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = runErr.Error()
		}
		if strings.Contains(msg, "can't find crate for `std`") || strings.Contains(msg, "target may not be installed") {
			msg += "\n(the " + tc.target + " standard library is missing: " + rustInstall + ")"
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
