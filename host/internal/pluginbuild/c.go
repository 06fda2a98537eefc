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
//     vendored SDK), or in its weir-sdk folder (as `weir plugin new --lang
//     c` writes it);
//  2. in guest-sdk/c of the weir module holding the plugin folder (found by
//     walking up to the go.mod of module github.com/weir-stream/weir);
//  3. in $WEIR_C_SDK;
//  4. in the copy of the SDK embedded in the binary, extracted into the
//     cache directory: a folder with a single .c file builds.
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

// findCSDK locates the C SDK for the plugin folder dir; cacheDir is where
// the embedded one is extracted.
func findCSDK(dir, cacheDir string) (cSDK, error) {
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
	if sdk := filepath.Join(dir, SDKDirName); has(sdk) {
		return cSDK{dir: sdk}, nil
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
	sdk, err := ExtractedSDK(cacheDir, LangC)
	if err != nil {
		return cSDK{}, fmt.Errorf("plugin %s: %w", dir, err)
	}
	return cSDK{dir: sdk}, nil
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

// clangOK caches, per process and $WEIR_CLANG and PATH, the clang that
// clangPath found working, its version and why it was chosen.
var clangOK struct {
	sync.Mutex
	key, path, version, why string
}

// clangPath finds clang ($WEIR_CLANG, else clang on PATH, else a
// versioned clang-N on PATH), checks that it can build for wasm32-wasi,
// and returns it, its version and why it was chosen.
func clangPath(ctx context.Context) (path, version, why string, err error) {
	key := os.Getenv("WEIR_CLANG") + "\x00" + os.Getenv("PATH")
	clangOK.Lock()
	defer clangOK.Unlock()
	if clangOK.key == key && clangOK.path != "" {
		return clangOK.path, clangOK.version, clangOK.why, nil
	}
	path, why, err = findClang()
	if err != nil {
		return "", "", "", err
	}
	if err := checkClang(ctx, path); err != nil {
		return "", "", "", err
	}
	v, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return "", "", "", fmt.Errorf("%s --version: %w", path, err)
	}
	clangOK.key, clangOK.path, clangOK.version, clangOK.why = key, path, string(v), why
	return path, string(v), why, nil
}

// findClang finds the clang to check, in the order clangPath says.
func findClang() (path, why string, err error) {
	if env := os.Getenv("WEIR_CLANG"); env != "" {
		if p, err := exec.LookPath(env); err == nil {
			return p, "$WEIR_CLANG", nil
		}
		return "", "", fmt.Errorf("$WEIR_CLANG=%s is not an executable", env)
	}
	if p, err := exec.LookPath("clang"); err == nil {
		return p, "clang on PATH", nil
	}
	for v := 19; v >= 14; v-- {
		if p, err := exec.LookPath(fmt.Sprintf("clang-%d", v)); err == nil {
			return p, fmt.Sprintf("clang-%d on PATH (no plain clang)", v), nil
		}
	}
	return "", "", fmt.Errorf("building C plugins needs clang on PATH, which is missing (or set $WEIR_CLANG): %s", cToolchainHint)
}

// checkClang checks that clang finds what building for wasm32-wasi needs.
func checkClang(ctx context.Context, clang string) error {
	// wasi-libc: clang prints the bare name of a file it cannot find.
	for _, f := range []string{"crt1-reactor.o", "libc.a"} {
		out, err := exec.CommandContext(ctx, clang, "--target=wasm32-wasi", "-print-file-name="+f).Output()
		p := strings.TrimSpace(string(out))
		if err != nil || !filepath.IsAbs(p) {
			return fmt.Errorf("building C plugins needs wasi-libc (clang finds no %s for wasm32-wasi): %s", f, cToolchainHint)
		}
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("building C plugins needs wasi-libc (%s is missing): %s", p, cToolchainHint)
		}
	}
	out, err := exec.CommandContext(ctx, clang, "--target=wasm32-wasi", "-print-libgcc-file-name").Output()
	if p := strings.TrimSpace(string(out)); err != nil || p == "" {
		return fmt.Errorf("building C plugins needs the wasm32 compiler runtime: %s", cToolchainHint)
	} else if _, err := os.Stat(p); err != nil {
		return fmt.Errorf("building C plugins needs the wasm32 compiler runtime (%s is missing; package libclang-rt-14-dev-wasm32): %s", p, cToolchainHint)
	}
	if _, err := exec.LookPath("wasm-ld"); err != nil {
		out, _ := exec.CommandContext(ctx, clang, "--target=wasm32-wasi", "-print-prog-name=wasm-ld").Output()
		if p := strings.TrimSpace(string(out)); !filepath.IsAbs(p) {
			return fmt.Errorf("building C plugins needs the wasm-ld linker (lld): %s", cToolchainHint)
		}
	}
	return nil
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
func cHash(ctx context.Context, dir, cacheDir string) (string, error) {
	sdk, err := findCSDK(dir, cacheDir)
	if err != nil {
		return "", err
	}
	_, version, _, err := clangPath(ctx)
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
	sdk, err := findCSDK(dir, outCacheDir(out))
	if err != nil {
		return err
	}
	clang, _, _, err := clangPath(ctx)
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
