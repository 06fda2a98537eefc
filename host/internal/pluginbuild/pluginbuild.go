package pluginbuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Options configure Build and Load.
type Options struct {
	// CacheDir is the directory holding built modules. Empty means
	// DefaultCacheDir().
	CacheDir string
}

// Source says where a module's bytes came from.
type Source struct {
	Path   string // the .wasm file read, or the built module in the cache
	Built  bool   // true when Path was built from Go source
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
// or the module built from the Go source when path is a directory.
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

// Build compiles the Go SDK plugin in dir, or finds it in the cache, and
// returns where the module is. Compiler output is part of the error.
func Build(ctx context.Context, dir string, opts Options) (Source, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Source{}, err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return Source{}, fmt.Errorf("plugin %s is Go source, and building it needs the Go toolchain on PATH: %w", dir, err)
	}
	hash, err := sourceHash(ctx, goBin, dir)
	if err != nil {
		return Source{}, err
	}
	cacheDir := opts.CacheDir
	if cacheDir == "" {
		cacheDir = DefaultCacheDir()
	}
	cacheDir = filepath.Join(cacheDir, "plugins")
	out := filepath.Join(cacheDir, filepath.Base(dir)+"-"+hash[:24]+".wasm")
	if _, err := os.Stat(out); err == nil {
		return Source{Path: out, Built: true, Cached: true}, nil
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
	if _, err := goCmd(ctx, goBin, dir, "build", "-buildmode=c-shared", "-trimpath", "-o", tmp.Name(), "."); err != nil {
		return Source{}, fmt.Errorf("plugin %s: go build failed:\n%w", dir, err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return Source{}, fmt.Errorf("plugin %s: %w", dir, err)
	}
	return Source{Path: out, Built: true}, nil
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
