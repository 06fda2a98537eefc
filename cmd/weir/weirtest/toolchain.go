package weirtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// RequireToolchains names the environment variable that makes a missing
// guest toolchain fail a test instead of skipping it: set (to anything but
// "" or "0") where the toolchains are meant to be installed, as .ci/run
// does.
const RequireToolchains = "WEIR_REQUIRE_TOOLCHAINS"

// NeedToolchain skips the test when the toolchain that builds plugins in
// lang is missing, saying what is missing and how to install it, or fails
// it when RequireToolchains is set. lang is a plugin language as the
// SDK folders name them: "c" needs clang with wasi-libc and the wasm32
// compiler runtime, "rust" Debian's cargo and rustc with the wasm32-wasi
// standard library, "assemblyscript" the asc of guest-sdk/assemblyscript
// (or $WEIR_ASC, or asc on PATH) and Node.js; "go" and "wat" need nothing
// more than the Go toolchain running the test.
// scripts/install-toolchains.sh installs all three.
func NeedToolchain(t testing.TB, lang string) {
	t.Helper()
	missing, known := toolchainMissing(lang)
	switch {
	case !known:
		t.Fatalf("NeedToolchain: unknown plugin language %q", lang)
	case missing == "":
		return
	}
	name := map[string]string{"c": "C", "rust": "Rust", "assemblyscript": "AssemblyScript"}[lang]
	msg := fmt.Sprintf("building %s plugins needs %s: run scripts/install-toolchains.sh", name, missing)
	if v := os.Getenv(RequireToolchains); v != "" && v != "0" {
		t.Fatalf("%s (%s=%s: toolchains are required here, so a missing one fails the test)", msg, RequireToolchains, v)
	}
	t.Skip(msg)
}

var toolchains = struct {
	sync.Mutex
	missing map[string]string // by language: what is missing, "" for nothing
}{missing: map[string]string{}}

// toolchainMissing returns what the toolchain of lang lacks, "" when it is
// complete, once per language and process, and whether lang is known.
func toolchainMissing(lang string) (missing string, known bool) {
	check, known := map[string]func() string{
		"c":              missingClang,
		"rust":           missingRust,
		"assemblyscript": missingAsc,
		"go":             func() string { return "" },
		"wat":            func() string { return "" },
	}[lang]
	if !known {
		return "", false
	}
	toolchains.Lock()
	defer toolchains.Unlock()
	m, done := toolchains.missing[lang]
	if !done {
		m = check()
		toolchains.missing[lang] = m
	}
	return m, true
}

func missingClang() string {
	clang, err := exec.LookPath("clang")
	if err != nil {
		return "clang on PATH, which is missing"
	}
	for what, arg := range map[string]string{
		"wasi-libc (libc.a for wasm32-wasi)":                     "-print-file-name=libc.a",
		"the wasm32 compiler runtime (libclang-rt-*-dev-wasm32)": "-print-libgcc-file-name",
	} {
		out, err := exec.Command(clang, "--target=wasm32-wasi", arg).Output()
		p := strings.TrimSpace(string(out))
		if err != nil || !filepath.IsAbs(p) {
			return what + ", which clang does not find"
		}
		if _, err := os.Stat(p); err != nil {
			return what + ", which is missing at " + p
		}
	}
	return ""
}

func missingRust() string {
	for _, tool := range []string{"/usr/bin/cargo", "/usr/bin/rustc"} {
		if _, err := os.Stat(tool); err != nil {
			return tool + ", which is missing"
		}
	}
	out, err := exec.Command("/usr/bin/rustc", "--print", "sysroot").Output()
	if err != nil {
		return "a working /usr/bin/rustc (rustc --print sysroot: " + err.Error() + ")"
	}
	std := filepath.Join(strings.TrimSpace(string(out)), "lib", "rustlib", "wasm32-wasi")
	if _, err := os.Stat(std); err != nil {
		return "the wasm32-wasi standard library (libstd-rust-dev-wasm32), which is missing at " + std
	}
	return ""
}

func missingAsc() string {
	root, err := moduleRoot()
	if err != nil {
		return "the weir module root, to find asc (" + err.Error() + ")"
	}
	candidates := []string{filepath.Join(root, "guest-sdk", "assemblyscript", "node_modules", ".bin", "asc")}
	if env := os.Getenv("WEIR_ASC"); env != "" {
		candidates = append(candidates, env)
	}
	if p, err := exec.LookPath("asc"); err == nil {
		candidates = append(candidates, p)
	}
	found := false
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			found = true
		}
	}
	if !found {
		return "the AssemblyScript compiler, which is missing (looked for " + strings.Join(candidates, ", ") + ")"
	}
	if _, err := exec.LookPath("node"); err != nil {
		return "Node.js on PATH for the AssemblyScript compiler, which is missing"
	}
	return ""
}
