package pluginbuild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Toolchain is the compiler the plugins of one language are built with,
// and why it was chosen. It is a plain value.
//
// Each language's is found in one order, the first that fits winning:
//
//	go              $WEIR_GO; go on PATH; $GOROOT/bin/go; /usr/local/go/bin/go;
//	                /usr/lib/go/bin/go
//	rust            $WEIR_CARGO (and $WEIR_RUSTC); cargo on PATH when its rustc
//	                has a Wasm target (wasm32-wasip1, wasm32-wasi,
//	                wasm32-unknown-unknown); Debian's /usr/bin/cargo (wasm32-wasi)
//	c               $WEIR_CLANG; clang on PATH; clang-19 … clang-14 on PATH
//	assemblyscript  $WEIR_ASC; the plugin's node_modules/.bin/asc; that of the
//	                SDK folder its asconfig.json extends; that of
//	                guest-sdk/assemblyscript in a weir checkout holding it;
//	                asc on PATH
type Toolchain struct {
	Lang    Lang   `json:"lang"`
	Path    string `json:"path"`    // the tool run: go, cargo, clang or asc
	Version string `json:"version"` // the first line of its version
	Why     string `json:"why"`     // which rule of the order found it
}

// String says which tool is used and why, in one line.
func (t Toolchain) String() string {
	return fmt.Sprintf("%s (%s; %s)", t.Path, t.Version, t.Why)
}

// Langs lists the languages Build knows, in a stable order.
func Langs() []Lang { return []Lang{LangGo, LangRust, LangC, LangAssemblyScript} }

// FindToolchain finds the toolchain that builds lang's plugins, in the
// order above. dir, the plugin folder, matters to AssemblyScript only and
// may be empty.
func FindToolchain(ctx context.Context, lang Lang, dir string) (Toolchain, error) {
	switch lang {
	case LangGo:
		return goToolchain(ctx)
	case LangRust:
		tc, err := rustToolchain(ctx)
		if err != nil {
			return Toolchain{}, err
		}
		return Toolchain{Lang: lang, Path: tc.cargo, Version: firstLine(tc.versions) + ", target " + tc.target, Why: tc.why}, nil
	case LangC:
		clang, version, why, err := clangPath(ctx)
		return Toolchain{Lang: lang, Path: clang, Version: firstLine(version), Why: why}, err
	case LangAssemblyScript:
		tc, err := findAsToolchain(ctx, dir)
		return Toolchain{Lang: lang, Path: tc.asc, Version: tc.version, Why: tc.why}, err
	}
	return Toolchain{}, fmt.Errorf("unknown plugin language %q", lang)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// goToolchain finds the go command.
func goToolchain(ctx context.Context) (Toolchain, error) {
	type candidate struct{ path, why string }
	var cands []candidate
	if env := os.Getenv("WEIR_GO"); env != "" {
		cands = append(cands, candidate{env, "$WEIR_GO"})
	} else {
		if p, err := exec.LookPath("go"); err == nil {
			cands = append(cands, candidate{p, "go on PATH"})
		}
		if root := os.Getenv("GOROOT"); root != "" {
			cands = append(cands, candidate{filepath.Join(root, "bin", "go"), "$GOROOT/bin/go"})
		}
		cands = append(cands, candidate{"/usr/local/go/bin/go", "the standard install location"},
			candidate{"/usr/lib/go/bin/go", "the Debian install location"})
	}
	for _, c := range cands {
		if fi, err := os.Stat(c.path); err != nil || fi.IsDir() {
			continue
		}
		out, err := exec.CommandContext(ctx, c.path, "env", "GOVERSION").Output()
		if err != nil {
			continue
		}
		return Toolchain{Lang: LangGo, Path: c.path, Version: strings.TrimSpace(string(out)), Why: c.why}, nil
	}
	if env := os.Getenv("WEIR_GO"); env != "" {
		return Toolchain{}, fmt.Errorf("$WEIR_GO=%s is not a working go command", env)
	}
	return Toolchain{}, errors.New("building Go plugins needs the Go toolchain (1.24 or later): none on PATH, in $GOROOT, /usr/local/go or /usr/lib/go; install it from https://go.dev/dl or set $WEIR_GO")
}
