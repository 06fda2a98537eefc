package pluginbuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Go plugins are main packages built with the go command for wasip1 as a
// c-shared module. Where the folder's go.mod (or the weir module holding
// the folder) says how to resolve the SDK, the build runs in the folder
// itself. A folder with only its .go files, or with a go.mod of its own
// that does not replace the weir module, is built from a copy under the
// cache directory (go-src/) whose go.mod requires the weir module and
// replaces it by the SDK extracted from the binary: weir supplies the
// module file and the SDK, and nothing is written into the folder.

func init() {
	register(LangGo, builder{hash: goHash, build: goBuild})
}

// goBuild builds a Go SDK plugin.
func goBuild(ctx context.Context, dir, out string) error {
	tc, err := goToolchain(ctx)
	if err != nil {
		return err
	}
	src, err := goSourceDir(ctx, tc.Path, dir, outCacheDir(out))
	if err != nil {
		return err
	}
	_, err = goCmd(ctx, tc.Path, src, "build", "-buildmode=c-shared", "-trimpath", "-o", out, ".")
	return err
}

// goHash hashes everything a Go plugin's build reads.
func goHash(ctx context.Context, dir, cacheDir string) (string, error) {
	tc, err := goToolchain(ctx)
	if err != nil {
		return "", fmt.Errorf("plugin %s is Go source: %w", dir, err)
	}
	src, err := goSourceDir(ctx, tc.Path, dir, cacheDir)
	if err != nil {
		return "", err
	}
	return sourceHash(ctx, tc.Path, src)
}

// goSourceDir returns the folder to build the Go plugin in dir from: dir
// itself, or its copy with a go.mod that resolves the SDK.
func goSourceDir(ctx context.Context, goBin, dir, cacheDir string) (string, error) {
	gomod, err := goCmd(ctx, goBin, dir, "env", "GOMOD")
	if err != nil {
		return "", fmt.Errorf("plugin %s: %w", dir, err)
	}
	gomod = strings.TrimSpace(gomod)
	own := filepath.Join(dir, "go.mod")
	switch {
	case gomod != "" && gomod != os.DevNull && filepath.Clean(gomod) != own:
		return dir, nil // a module around the folder says how to build it
	case gomod == own:
		replaced, err := goReplacesWeir(ctx, goBin, dir)
		if err != nil || replaced {
			return dir, err
		}
	}
	sdk, err := ExtractedSDK(cacheDir, LangGo)
	if err != nil {
		return "", fmt.Errorf("plugin %s: %w", dir, err)
	}
	return goStage(ctx, goBin, dir, sdk, cacheDir)
}

// goReplacesWeir reports whether the go.mod in dir replaces the weir
// module, as the projects `weir plugin new` writes do.
func goReplacesWeir(ctx context.Context, goBin, dir string) (bool, error) {
	out, err := goCmd(ctx, goBin, dir, "mod", "edit", "-json")
	if err != nil {
		return false, fmt.Errorf("plugin %s: go.mod: %w", dir, err)
	}
	var mod struct {
		Replace []struct{ Old struct{ Path string } }
	}
	if err := json.Unmarshal([]byte(out), &mod); err != nil {
		return false, fmt.Errorf("plugin %s: go.mod: %w", dir, err)
	}
	for _, r := range mod.Replace {
		if r.Old.Path == weirModule {
			return true, nil
		}
	}
	return false, nil
}

// goStage copies the plugin in dir to its folder under cacheDir/go-src,
// with a go.mod requiring the weir module and replacing it by sdk, and
// returns that folder.
func goStage(ctx context.Context, goBin, dir, sdk, cacheDir string) (string, error) {
	files, err := stageFiles(dir)
	if err != nil {
		return "", fmt.Errorf("plugin %s: %w", dir, err)
	}
	mod, err := goStageMod(ctx, goBin, dir, files["go.mod"], sdk)
	if err != nil {
		return "", err
	}
	files["go.mod"] = mod
	return stage(cacheDir, "go-src", dir, files)
}

// stageLock serialises staging within the process; staging the same
// sources twice writes nothing the second time.
var stageLock sync.Mutex

// stage makes the folder for dir under cacheDir/kind hold exactly files,
// writing only those that differ, and returns it.
func stage(cacheDir, kind, dir string, files map[string][]byte) (string, error) {
	stageLock.Lock()
	defer stageLock.Unlock()
	st := stageDirFor(cacheDir, kind, dir)
	if err := syncTree(st, files); err != nil {
		return "", fmt.Errorf("plugin %s: staging its build: %w", dir, err)
	}
	return st, nil
}

// stageDirFor is the folder under cacheDir/kind where dir is staged.
func stageDirFor(cacheDir, kind, dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(cacheDir, kind, filepath.Base(dir)+"-"+hex.EncodeToString(sum[:8]))
}

// stageSkip are the folders of a plugin folder a staged build leaves out:
// version control, an SDK copy and build outputs.
var stageSkip = []string{".git", SDKDirName, "target", "node_modules"}

// stageFiles reads the files of the plugin folder dir, by slash path,
// skipping the folders of stageSkip.
func stageFiles(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != dir && slices.Contains(stageSkip, d.Name()) {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	return files, err
}

// goModuleNameRE matches what is not allowed in the module path weir
// makes up for a folder without a go.mod.
var goModuleNameRE = regexp.MustCompile(`[^A-Za-z0-9._~-]+`)

// goStageMod returns the go.mod of a staged build: the plugin's own (mod,
// nil for none) or a new one, requiring the weir module and replacing it
// by sdk.
func goStageMod(ctx context.Context, goBin, dir string, mod []byte, sdk string) ([]byte, error) {
	if mod == nil {
		name := strings.Trim(goModuleNameRE.ReplaceAllString(filepath.Base(dir), "-"), "-.")
		if name == "" {
			name = "plugin"
		}
		mod = []byte("module " + name + "\n\ngo " + SDKGoDirective + "\n")
	}
	tmp, err := os.MkdirTemp("", "weir-gomod-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), mod, 0o644); err != nil {
		return nil, err
	}
	if _, err := goCmd(ctx, goBin, tmp, "mod", "edit", "-require="+weirModule+"@v0.0.0", "-replace="+weirModule+"="+sdk); err != nil {
		return nil, fmt.Errorf("plugin %s: go.mod: %w", dir, err)
	}
	return os.ReadFile(filepath.Join(tmp, "go.mod"))
}

// syncTree makes root hold exactly files (slash paths to contents),
// writing only those that differ.
func syncTree(root string, files map[string][]byte) error {
	for rel, b := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, b) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if _, ok := files[filepath.ToSlash(rel)]; !ok {
			return os.Remove(p)
		}
		return nil
	})
}
