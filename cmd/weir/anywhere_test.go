package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// anywhere is a weir binary copied out of the checkout into an empty
// folder, with the environment of a user who has only it and their
// toolchains: a fresh HOME (so a fresh weir cache), no weir variables,
// and Go and cargo forbidden the network.
type anywhere struct {
	bin  string   // the copied binary
	env  []string // its environment
	work string   // an empty folder outside the checkout to work in
}

// newAnywhere sets up an anywhere. The go build cache stays the
// machine's, to keep the test's builds of the standard library fast: it
// holds only compiled packages, never sources or modules.
func newAnywhere(t *testing.T) *anywhere {
	t.Helper()
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	home := filepath.Join(root, "home")
	work := filepath.Join(root, "work")
	for _, d := range []string{bin, home, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(weirtest.Weir(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "weir"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	// The AssemblyScript compiler, where a user's `npm install -g` puts it:
	// on PATH.
	if asc := checkoutAsc(t); asc != "" {
		if err := os.Symlink(asc, filepath.Join(bin, "asc")); err != nil {
			t.Fatal(err)
		}
	}
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{
		"HOME=" + home,
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"GOFLAGS=-mod=mod",
		"GOPROXY=off",
		"GOCACHE=" + strings.TrimSpace(string(gocache)),
		"GOPATH=" + filepath.Join(home, "go"),
		"CARGO_NET_OFFLINE=true",
	}
	return &anywhere{bin: filepath.Join(bin, "weir"), env: env, work: work}
}

// checkoutAsc returns the AssemblyScript compiler that
// scripts/install-toolchains.sh installs, or $WEIR_ASC, or "".
func checkoutAsc(t *testing.T) string {
	if env := os.Getenv("WEIR_ASC"); env != "" {
		return env
	}
	asc := filepath.Join(weirtest.Root(t), "guest-sdk", "assemblyscript", "node_modules", ".bin", "asc")
	if _, err := os.Stat(asc); err != nil {
		return ""
	}
	return asc
}

// weir runs the copied binary in dir and requires exit code 0.
func (a *anywhere) weir(t *testing.T, dir string, args ...string) weirtest.Result {
	t.Helper()
	res := weirtest.RunBinary(t, a.bin, dir, a.env, "", args...)
	if res.Code != 0 {
		t.Fatalf("weir %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), res.Code, res.Stdout, res.Stderr)
	}
	return res
}

// TestPluginsAnywhere makes, tests, inspects and runs a plugin of every
// kind in every language with a binary that has no checkout to lean on,
// offline, and builds each language's map project again after moving it
// elsewhere, with an empty cache. The languages run in parallel.
func TestPluginsAnywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin per language and kind")
	}
	a := newAnywhere(t)
	const noFields = "fields:  none"
	kinds := []struct {
		kind   string
		ops    string // what inspect says it implements
		fields string // what inspect says it declares
		want   string // the output of the template's pipeline
	}{
		{"map", "map", "fields:\n  name: string, required, strict\n",
			`{"name":"ADA","n":1}` + "\n" + `{"name":"GRACE","n":2}` + "\n"},
		{"flat_map", "flat_map", noFields, "the\nquick\nbrown\nfox\njumps\nover\n"},
		{"filter", "filter", noFields, `{"n":2}` + "\n" + `{"n":4}` + "\n"},
		{"aggregate", "aggregate", noFields,
			`{"avg":2.0,"count":2}` + "\n" + `{"avg":10.0,"count":1}` + "\n" + `{"avg":8.0,"count":1}` + "\n"},
		{"stateful", "map", noFields,
			`{"key":"ada","count":1}` + "\n" + `{"key":"bob","count":1}` + "\n" + `{"key":"ada","count":2}` + "\n"},
	}
	version := a.weir(t, a.work, "version")
	for _, want := range []string{"abi:     v1", "\n  go ", "\n  rust ", "\n  c ", "\n  assemblyscript "} {
		if !strings.Contains(version.Stdout, want) {
			t.Errorf("weir version lacks %q:\n%s", want, version.Stdout)
		}
	}
	for _, lang := range []string{"go", "rust", "c", "assemblyscript"} {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			weirtest.NeedToolchain(t, lang)
			for _, k := range kinds {
				t.Run(k.kind, func(t *testing.T) {
					name := "p-" + strings.ReplaceAll(k.kind, "_", "-")
					dir := filepath.Join(a.work, lang, name)
					if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
						t.Fatal(err)
					}
					a.weir(t, filepath.Dir(dir), "plugin", "new", "--lang", lang, "--kind", k.kind, name)
					if res := a.weir(t, dir, "plugin", "test", "."); !strings.HasPrefix(res.Stdout, "ok ") {
						t.Fatalf("plugin test: %s", res.Stdout)
					}
					inspect := a.weir(t, dir, "plugin", "inspect", ".")
					if !strings.Contains(inspect.Stdout, "ops:     "+k.ops+"\n") || !strings.Contains(inspect.Stdout, k.fields) {
						t.Fatalf("plugin inspect: want ops %s and %q\n%s", k.ops, k.fields, inspect.Stdout)
					}
					if res := a.weir(t, dir, "run", "pipeline.yaml"); res.Stdout != k.want {
						t.Fatalf("weir run pipeline.yaml: got\n%s\nwant\n%s\nstderr:\n%s", res.Stdout, k.want, res.Stderr)
					}
				})
			}
			t.Run("moved", func(t *testing.T) {
				moved := filepath.Join(a.work, "elsewhere", lang, "deeper", "renamed")
				if err := os.MkdirAll(filepath.Dir(moved), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(filepath.Join(a.work, lang, "p-map"), moved); err != nil {
					t.Fatal(err)
				}
				a.weir(t, a.work, "--cache-dir", t.TempDir(), "plugin", "build", moved)
			})
		})
	}
}
