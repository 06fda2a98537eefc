package pluginbuild

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// C plugins are built with clang for wasm32-wasi as a WASI reactor: every
// *.c file of the plugin folder, together with the C SDK's weir.c, with
// the SDK's weir.h on the include path. The SDK is found, in order:
//
//  1. in the plugin folder itself, when it holds weir.h and weir.c (a
//     vendored SDK, as `weir plugin new --lang c` writes it);
//  2. in guest-sdk/c of the weir module holding the plugin folder (found by
//     walking up to the go.mod of module github.com/weir-stream/weir);
//  3. in $WEIR_C_SDK.
//
// The cache key hashes the plugin folder, the SDK files, the compiler's
// version and the flags.

func init() {
	register(LangC, builder{hash: cHash, build: cBuild})
}

// CSDKEnv names the environment variable giving the C SDK's directory, the
// last place a C plugin build looks for weir.h and weir.c.
const CSDKEnv = "WEIR_C_SDK"

// weirModule is the module path of this repository, which holds the C SDK
// in guest-sdk/c.
const weirModule = "github.com/weir-stream/weir"

// cFlags are clang's flags for every C plugin, before the include path: a
// WASI reactor (the host runs _initialize, which runs the SDK's and the
// plugin's constructors); link-time optimisation, so that the SDK's batch
// loop calls (and inlines) the plugin's function directly; bulk memory, so
// that memcpy is one memory.copy instruction; no debug sections (wasi-libc
// ships them); and a 1 MiB stack.
var cFlags = []string{
	"--target=wasm32-wasi",
	"-mexec-model=reactor",
	"-O2",
	"-flto",
	"-mbulk-memory",
	"-Wl,--strip-debug",
	"-Wl,-z,stack-size=1048576",
}

// cToolchainHint ends every error about a missing C toolchain.
const cToolchainHint = "run scripts/install-toolchains.sh (it installs clang, lld, wasi-libc and libclang-rt-14-dev-wasm32)"

// cSDK is where a C plugin's SDK files are.
type cSDK struct {
	dir      string
	vendored bool // dir is the plugin folder itself
}

// findCSDK locates the C SDK for the plugin folder dir.
func findCSDK(dir string) (cSDK, error) {
	has := func(d string) bool {
		for _, f := range []string{"weir.h", "weir.c"} {
			if fi, err := os.Stat(filepath.Join(d, f)); err != nil || !fi.Mode().IsRegular() {
				return false
			}
		}
		return true
	}
	if has(dir) {
		return cSDK{dir: dir, vendored: true}, nil
	}
	if root, ok := weirModuleRoot(dir); ok {
		if sdk := filepath.Join(root, "guest-sdk", "c"); has(sdk) {
			return cSDK{dir: sdk}, nil
		}
	}
	if env := os.Getenv(CSDKEnv); env != "" {
		abs, err := filepath.Abs(env)
		if err == nil && has(abs) {
			return cSDK{dir: abs}, nil
		}
		return cSDK{}, fmt.Errorf("plugin %s: $%s=%s does not hold the weir C SDK (weir.h and weir.c)", dir, CSDKEnv, env)
	}
	return cSDK{}, fmt.Errorf("plugin %s: cannot find the weir C SDK (weir.h and weir.c): copy them into the plugin folder, or set $%s to a directory holding them (guest-sdk/c in the weir repository)", dir, CSDKEnv)
}

// weirModuleRoot walks up from dir to the directory whose go.mod declares
// the weir module.
func weirModuleRoot(dir string) (string, bool) {
	for d := dir; ; {
		if isWeirGoMod(filepath.Join(d, "go.mod")) {
			return d, true
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", false
		}
		d = parent
	}
}

func isWeirGoMod(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "module"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			mod := strings.Trim(strings.TrimSpace(rest), `"`)
			return mod == weirModule
		}
	}
	return false
}

// clangOK caches, per process, the clang that clangPath found working and
// its version.
var clangOK struct {
	sync.Mutex
	path, version string
}

// clangPath finds clang, checks that it can build for wasm32-wasi, and
// returns it and its version.
func clangPath(ctx context.Context) (path, version string, err error) {
	clangOK.Lock()
	defer clangOK.Unlock()
	if clangOK.path != "" {
		return clangOK.path, clangOK.version, nil
	}
	path, err = checkClang(ctx)
	if err != nil {
		return "", "", err
	}
	v, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return "", "", fmt.Errorf("%s --version: %w", path, err)
	}
	clangOK.path, clangOK.version = path, string(v)
	return path, string(v), nil
}

func checkClang(ctx context.Context) (string, error) {
	clang, err := exec.LookPath("clang")
	if err != nil {
		return "", fmt.Errorf("building C plugins needs clang on PATH, which is missing: %s", cToolchainHint)
	}
	// wasi-libc: clang prints the bare name of a file it cannot find.
	for _, f := range []string{"crt1-reactor.o", "libc.a"} {
		out, err := exec.CommandContext(ctx, clang, "--target=wasm32-wasi", "-print-file-name="+f).Output()
		p := strings.TrimSpace(string(out))
		if err != nil || !filepath.IsAbs(p) {
			return "", fmt.Errorf("building C plugins needs wasi-libc (clang finds no %s for wasm32-wasi): %s", f, cToolchainHint)
		}
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("building C plugins needs wasi-libc (%s is missing): %s", p, cToolchainHint)
		}
	}
	out, err := exec.CommandContext(ctx, clang, "--target=wasm32-wasi", "-print-libgcc-file-name").Output()
	if p := strings.TrimSpace(string(out)); err != nil || p == "" {
		return "", fmt.Errorf("building C plugins needs the wasm32 compiler runtime: %s", cToolchainHint)
	} else if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("building C plugins needs the wasm32 compiler runtime (%s is missing; package libclang-rt-14-dev-wasm32): %s", p, cToolchainHint)
	}
	if _, err := exec.LookPath("wasm-ld"); err != nil {
		out, _ := exec.CommandContext(ctx, clang, "--target=wasm32-wasi", "-print-prog-name=wasm-ld").Output()
		if p := strings.TrimSpace(string(out)); !filepath.IsAbs(p) {
			return "", fmt.Errorf("building C plugins needs the wasm-ld linker (lld): %s", cToolchainHint)
		}
	}
	return clang, nil
}

// cSources lists the plugin's *.c files, and the SDK's weir.c when it is
// not among them.
func cSources(dir string, sdk cSDK) ([]string, error) {
	srcs, err := filepath.Glob(filepath.Join(dir, "*.c"))
	if err != nil {
		return nil, err
	}
	if len(srcs) == 0 {
		return nil, fmt.Errorf("plugin %s: no .c files", dir)
	}
	sort.Strings(srcs)
	if !sdk.vendored {
		srcs = append(srcs, filepath.Join(sdk.dir, "weir.c"))
	}
	return srcs, nil
}

// cHash hashes everything a C plugin's build reads.
func cHash(ctx context.Context, dir string) (string, error) {
	sdk, err := findCSDK(dir)
	if err != nil {
		return "", err
	}
	_, version, err := clangPath(ctx)
	if err != nil {
		return "", fmt.Errorf("plugin %s is C source: %w", dir, err)
	}
	extra := []string{"c", version, strings.Join(cFlags, " ")}
	roots := []string{dir}
	if !sdk.vendored {
		roots = append(roots, filepath.Join(sdk.dir, "weir.h"), filepath.Join(sdk.dir, "weir.c"))
	}
	h, err := HashFiles(extra, []string{".git"}, roots...)
	if err != nil {
		return "", fmt.Errorf("plugin %s: %w", dir, err)
	}
	return h, nil
}

// cBuild compiles a C plugin to out.
func cBuild(ctx context.Context, dir, out string) error {
	sdk, err := findCSDK(dir)
	if err != nil {
		return err
	}
	clang, _, err := clangPath(ctx)
	if err != nil {
		return err
	}
	srcs, err := cSources(dir, sdk)
	if err != nil {
		return err
	}
	args := append(append([]string{}, cFlags...), "-I", sdk.dir, "-o", out)
	args = append(args, srcs...)
	cmd := exec.CommandContext(ctx, clang, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return errors.New(msg)
	}
	return nil
}
