package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// TestPluginNewAndTest creates a plugin in every template language and
// runs its test cases; a wrong expectation fails with the case shown.
func TestPluginNewAndTest(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a plugin per language")
	}
	root := weirtest.Root(t)
	entries, err := os.ReadDir(filepath.Join(root, "cmd", "weir", "templates"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		lang := e.Name()
		t.Run(lang, func(t *testing.T) {
			weirtest.NeedToolchain(t, lang)
			dir := t.TempDir()
			res := weirtest.Run(t, dir, "", "plugin", "new", "--lang", lang, "--weir-root", root, "shout")
			if res.Code != 0 {
				t.Fatalf("plugin new: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
			}
			res = weirtest.Run(t, dir, "", "plugin", "test", "shout")
			if res.Code != 0 || !strings.HasPrefix(res.Stdout, "ok shout:") {
				t.Fatalf("plugin test: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
			}
			// Break one expectation: the test must say so.
			cases := filepath.Join(dir, "shout", "weir-test.jsonl")
			b, err := os.ReadFile(cases)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			lines = append(lines, `{"value":"{\"name\":\"x\"}","want":["{\"name\":\"x\"}"]}`)
			if err := os.WriteFile(cases, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			res = weirtest.Run(t, dir, "", "plugin", "test", "shout")
			if res.Code != 1 || !strings.Contains(res.Stdout, "FAIL") || !strings.Contains(res.Stderr, "1 of") {
				t.Fatalf("a wrong expectation: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
			}
			res = weirtest.Run(t, dir, "", "plugin", "new", "--lang", lang, "--weir-root", root, "shout")
			if res.Code != 1 || !strings.Contains(res.Stderr, "already exists") {
				t.Fatalf("plugin new over an existing folder: exit %d\n%s", res.Code, res.Stderr)
			}
		})
	}
	res := weirtest.Run(t, t.TempDir(), "", "plugin", "new", "--lang", "cobol", "x")
	if res.Code != 2 {
		t.Fatalf("unknown language: exit %d\n%s", res.Code, res.Stderr)
	}
}
