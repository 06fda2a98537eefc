package pluginbuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// Options configure Build and Load.
type Options struct {
	// CacheDir is the directory holding built modules. Empty means
	// DefaultCacheDir().
	CacheDir string
	// Logger gets a "plugin built" line, at info level, for each build
	// from source, cached or not, with how long it took; nil means
	// slog.Default().
	Logger *slog.Logger
	// Operator names the pipeline operator the plugin is for, in the
	// log; empty for none.
	Operator string
}

// Source says where a module's bytes came from.
type Source struct {
	Path   string // the .wasm file read, or the built module in the cache
	Built  bool   // true when Path was built from source
	Lang   Lang   // the source's language, when Built
	Cached bool   // true when a build was skipped because the cache had it
	Hash   string // hex SHA-256 of the module bytes
}

// DefaultCacheDir returns $WEIR_CACHE_DIR, or "weir" under the user's cache
// directory, or a directory under the system temporary directory when the
// user has none.
func DefaultCacheDir() string {
	if d := os.Getenv("WEIR_CACHE_DIR"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "weir")
	}
	return filepath.Join(os.TempDir(), "weir-cache")
}

// Load returns the Wasm bytes for path: the file itself when path is a file,
// or the module built from the plugin source when path is a directory.
func Load(ctx context.Context, path string, opts Options) ([]byte, Source, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, Source{}, fmt.Errorf("plugin %s: %w", path, err)
	}
	src := Source{Path: path}
	if fi.IsDir() {
		src, err = Build(ctx, path, opts)
		if err != nil {
			return nil, Source{}, err
		}
	}
	b, err := os.ReadFile(src.Path)
	if err != nil {
		return nil, Source{}, fmt.Errorf("plugin %s: %w", path, err)
	}
	sum := sha256.Sum256(b)
	src.Hash = hex.EncodeToString(sum[:])
	return b, src, nil
}

// Build compiles the plugin source in dir, in whatever language Detect
// finds there, or finds it in the cache, and returns where the module is.
// Compiler output is part of the error. A build that succeeds is logged
// to opts.Logger with its duration, and, when it compiled, the toolchain
// it used and why that one.
func Build(ctx context.Context, dir string, opts Options) (Source, error) {
	start := time.Now()
	src, err := build(ctx, dir, opts)
	if err != nil {
		return src, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	attrs := []any{"source", dir, "lang", src.Lang, "duration", time.Since(start).Round(time.Millisecond), "cached", src.Cached}
	if !src.Cached {
		if tc, err := FindToolchain(ctx, src.Lang, dir); err == nil {
			attrs = append(attrs, "toolchain", tc.String())
		}
	}
	if opts.Operator != "" {
		attrs = append([]any{"operator", opts.Operator}, attrs...)
	}
	log.Info("plugin built", attrs...)
	return src, nil
}

// build is Build without the log.
func build(ctx context.Context, dir string, opts Options) (Source, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Source{}, err
	}
	lang, err := Detect(dir)
	if err != nil {
		return Source{}, err
	}
	b := builders[lang]
	cacheRoot := opts.CacheDir
	if cacheRoot == "" {
		cacheRoot = DefaultCacheDir()
	}
	hash, err := b.hash(ctx, dir, cacheRoot)
	if err != nil {
		return Source{}, err
	}
	cacheDir := filepath.Join(cacheRoot, "plugins")
	out := filepath.Join(cacheDir, filepath.Base(dir)+"-"+string(lang)+"-"+hash[:24]+".wasm")
	if _, err := os.Stat(out); err == nil {
		return Source{Path: out, Built: true, Cached: true, Lang: lang}, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return Source{}, fmt.Errorf("plugin %s: cache directory: %w", dir, err)
	}
	tmp, err := os.CreateTemp(cacheDir, ".build-*.wasm")
	if err != nil {
		return Source{}, fmt.Errorf("plugin %s: cache directory: %w", dir, err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	if err := b.build(ctx, dir, tmp.Name()); err != nil {
		return Source{}, fmt.Errorf("plugin %s: %s build failed:\n%w", dir, lang, err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return Source{}, fmt.Errorf("plugin %s: %w", dir, err)
	}
	return Source{Path: out, Built: true, Lang: lang}, nil
}

// Lang is a plugin source language.
type Lang string

// The languages Build knows, and how Detect tells them: a Cargo.toml is
// Rust; an asconfig.json, or a package.json depending on assemblyscript,
// is AssemblyScript; a src/lib.rs (without a Cargo.toml) is Rust; Go
// files are Go; C files (and no Go files) are C.
const (
	LangGo             Lang = "go"
	LangRust           Lang = "rust"
	LangC              Lang = "c"
	LangAssemblyScript Lang = "assemblyscript"
)

// builder builds one language: hash says what a build reads (as a hex
// SHA-256, for the cache key), build writes the module to out, which lies
// in the plugins folder of the cache directory hash was given.
type builder struct {
	hash  func(ctx context.Context, dir, cacheDir string) (string, error)
	build func(ctx context.Context, dir, out string) error
}

// outCacheDir is the cache directory of a build whose module goes to out.
func outCacheDir(out string) string { return filepath.Dir(filepath.Dir(out)) }

// builders holds the languages Build supports; each language's file
// registers itself.
var builders = map[Lang]builder{}

func register(l Lang, b builder) { builders[l] = b }

// Detect tells the language of the plugin source in dir.
func Detect(dir string) (Lang, error) {
	has := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	glob := func(pattern string) bool {
		m, _ := filepath.Glob(filepath.Join(dir, pattern))
		return len(m) > 0
	}
	var lang Lang
	switch {
	case has("Cargo.toml"):
		lang = LangRust
	case has("asconfig.json") || packageUses(filepath.Join(dir, "package.json"), "assemblyscript"):
		lang = LangAssemblyScript
	case has(filepath.Join("src", "lib.rs")):
		lang = LangRust
	case glob("*.go"):
		lang = LangGo
	case glob("*.c"):
		lang = LangC
	default:
		return "", fmt.Errorf("plugin %s: no plugin source found (want Go files, C files, a Cargo.toml or src/lib.rs, or an AssemblyScript package)", dir)
	}
	if _, ok := builders[lang]; !ok {
		return "", fmt.Errorf("plugin %s: %s plugins cannot be built by this weir", dir, lang)
	}
	return lang, nil
}

// packageUses reports whether the package.json at path depends on dep.
func packageUses(path, dep string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var pkg struct {
		Deps    map[string]string `json:"dependencies"`
		DevDeps map[string]string `json:"devDependencies"`
	}
	if json.Unmarshal(b, &pkg) != nil {
		return false
	}
	_, a := pkg.Deps[dep]
	_, b2 := pkg.DevDeps[dep]
	return a || b2
}

// HashFiles hashes the contents and names of every regular file under the
// given roots (files or directories), skipping directories named in skip,
// with extra strings (tool versions) first. It serves builders whose
// inputs are a source tree.
func HashFiles(extra []string, skip []string, roots ...string) (string, error) {
	h := sha256.New()
	for _, e := range extra {
		fmt.Fprintf(h, "%s\x00", e)
	}
	var files []string
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != root && slices.Contains(skip, d.Name()) {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	sort.Strings(files)
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00", f)
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sourceHash hashes everything the build of dir reads.
func sourceHash(ctx context.Context, goBin, dir string) (string, error) {
	list, err := goCmd(ctx, goBin, dir, "list", "-deps",
		"-f", `{{if not .Standard}}{{.Dir}}{{"\t"}}{{join .GoFiles "\t"}}{{"\t"}}{{join .EmbedFiles "\t"}}{{end}}`, ".")
	if err != nil {
		return "", fmt.Errorf("plugin %s: cannot list its packages:\n%w", dir, err)
	}
	env, err := goCmd(ctx, goBin, dir, "env", "GOVERSION", "GOMOD", "GOFLAGS")
	if err != nil {
		return "", fmt.Errorf("plugin %s: %w", dir, err)
	}
	var files []string
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		parts := strings.Split(line, "\t")
		if len(parts) < 2 {
			continue
		}
		for _, f := range parts[1:] {
			if f != "" {
				files = append(files, filepath.Join(parts[0], f))
			}
		}
	}
	envLines := strings.Split(env, "\n")
	if len(envLines) > 1 && envLines[1] != "" && envLines[1] != os.DevNull {
		files = append(files, envLines[1], strings.TrimSuffix(envLines[1], ".mod")+".sum")
	}
	sort.Strings(files)
	h := sha256.New()
	io.WriteString(h, env)
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00", f)
		fh, err := os.Open(f)
		if errors.Is(err, os.ErrNotExist) {
			continue // a module without go.sum
		}
		if err != nil {
			return "", fmt.Errorf("plugin %s: %w", dir, err)
		}
		_, err = io.Copy(h, fh)
		fh.Close()
		if err != nil {
			return "", fmt.Errorf("plugin %s: %w", dir, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// goCmd runs the go command in dir targeting wasip1/wasm and returns its
// standard output; on failure the error holds its standard error.
func goCmd(ctx context.Context, goBin, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", errors.New(msg)
	}
	return stdout.String(), nil
}
