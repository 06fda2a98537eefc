package pluginbuild_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/plugintool"
)

// TestCTemplate renders the template of `weir plugin new --lang c` as the
// command does (every file's name and content through text/template), adds
// the vendored SDK (weir.h and weir.c, which the command copies from
// guest-sdk/c), builds the plugin and runs its weir-test.jsonl.
func TestCTemplate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a C plugin")
	}
	weirtest.NeedToolchain(t, "c")
	root := repoRoot(t)
	tmpl := filepath.Join(root, "cmd", "weir", "templates", "c")
	dir := filepath.Join(t.TempDir(), "shout")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data := struct{ Name string }{Name: "shout"}
	entries, err := os.ReadDir(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := render(t, e.Name(), e.Name(), data)
		content := render(t, e.Name(), mustRead(t, filepath.Join(tmpl, e.Name())), data)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"weir.h", "weir.c"} {
		b := mustRead(t, filepath.Join(root, "guest-sdk", "c", f))
		if err := os.WriteFile(filepath.Join(dir, f), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runTestFile(t, dir, filepath.Join(dir, "weir-test.jsonl"))
}

func render(t *testing.T, name, text string, data any) string {
	t.Helper()
	tp, err := template.New(name).Parse(text)
	if err != nil {
		t.Fatalf("template %s: %v", name, err)
	}
	var b bytes.Buffer
	if err := tp.Execute(&b, data); err != nil {
		t.Fatalf("template %s: %v", name, err)
	}
	return b.String()
}

// runTestFile runs a weir-test.jsonl file against the plugin in dir, as
// weir plugin test does.
func runTestFile(t *testing.T, dir, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tf, err := plugintool.ParseTestFile(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	res, err := plugintool.Test(context.Background(), dir, tf, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.OK {
			t.Errorf("case %d (%q): got %q, want %q", i+1, r.Case.Value, r.Got, r.Case.Want)
		}
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
