package main_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// TestPluginTestNamesFailingCases breaks one case of a new plugin's
// weir-test.yaml: the failure names it by file and line, and the rest
// still pass. The older JSON lines format still runs with --cases.
func TestPluginTestNamesFailingCases(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a Go plugin")
	}
	dir := t.TempDir()
	if res := weirtest.Run(t, dir, "", "plugin", "new", "--kind", "filter", "evens"); res.Code != 0 {
		t.Fatalf("plugin new: exit %d\n%s", res.Code, res.Stderr)
	}
	cases := filepath.Join(dir, "evens", "weir-test.yaml")
	b, err := os.ReadFile(cases)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(b), "    value: {n: 3}\n    want: []", "    value: {n: 3}\n    want: [{n: 3}]", 1)
	if broken == string(b) {
		t.Fatal("the filter template's cases changed: no case for n: 3")
	}
	line := strings.Count(broken[:strings.Index(broken, "  - name: drops an odd n")], "\n") + 1
	if err := os.WriteFile(cases, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	res := weirtest.Run(t, dir, "", "plugin", "test", "evens")
	want := "FAIL " + filepath.Join("evens", "weir-test.yaml") + ":" + strconv.Itoa(line) + `: "drops an odd n"`
	if res.Code != 1 || !strings.Contains(res.Stdout, want) || !strings.Contains(res.Stderr, "1 of 5 cases failed") {
		t.Fatalf("a wrong expectation: exit %d, want a line starting %q\n%s%s", res.Code, want, res.Stdout, res.Stderr)
	}

	jsonl := filepath.Join(dir, "old.jsonl")
	old := `{"op":"filter"}` + "\n" + `{"value":"{\"n\":2}","want":["{\"n\":2}"]}` + "\n" + `{"value":"{\"n\":1}","want":[]}` + "\n"
	if err := os.WriteFile(jsonl, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := weirtest.Run(t, dir, "", "plugin", "test", "evens", "--cases", jsonl); res.Code != 0 || !strings.HasPrefix(res.Stdout, "ok evens: 2 cases") {
		t.Fatalf("a JSON lines file: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
}

// TestPluginNewRefuses checks the mistakes plugin new refuses: an unknown
// language or kind (usage errors) and a folder that exists.
func TestPluginNewRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "taken"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown language", []string{"--lang", "cobol", "x"}, 2, `--lang "cobol"`},
		{"unknown kind", []string{"--kind", "reduce", "x"}, 2, `--kind "reduce"`},
		{"bad name", []string{"X Y"}, 2, "invalid plugin name"},
		{"existing folder", []string{"taken"}, 1, "already exists"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := weirtest.Run(t, dir, "", append([]string{"plugin", "new"}, tt.args...)...)
			if res.Code != tt.code || !strings.Contains(res.Stderr, tt.want) {
				t.Fatalf("exit %d, want %d and %q\n%s", res.Code, tt.code, tt.want, res.Stderr)
			}
		})
	}
}

// TestPluginTestCompare replays a project's input through two versions of
// its plugin: a copy agrees on every record, a changed copy differs on
// the records it treats otherwise, and says how.
func TestPluginTestCompare(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds Go plugins")
	}
	dir := t.TempDir()
	if res := weirtest.Run(t, dir, "", "plugin", "new", "--kind", "filter", "v1"); res.Code != 0 {
		t.Fatalf("plugin new: exit %d\n%s", res.Code, res.Stderr)
	}
	copyDir(t, filepath.Join(dir, "v1"), filepath.Join(dir, "same"))
	copyDir(t, filepath.Join(dir, "v1"), filepath.Join(dir, "odd"))
	main := filepath.Join(dir, "odd", "main.go")
	b, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(b), "return n%2 == 0, nil", "return n%2 != 0, nil", 1)
	if changed == string(b) {
		t.Fatal("the filter template changed: no `return n%2 == 0, nil`")
	}
	if err := os.WriteFile(main, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	records := filepath.Join("v1", "input.jsonl")
	res := weirtest.Run(t, dir, "", "plugin", "test", "v1", "--compare", "same", "--records", records)
	if res.Code != 0 || !strings.HasPrefix(res.Stdout, "same: 4 records (filter)") {
		t.Fatalf("against a copy: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	res = weirtest.Run(t, dir, "", "plugin", "test", "v1", "--compare", "odd", "--records", records)
	want := "DIFF record 2: {\"n\":2}\n  v1: [\"{\\\"n\\\":2}\"]\n  odd: []\n"
	if res.Code != 1 || !strings.Contains(res.Stdout, want) || !strings.Contains(res.Stderr, "4 of 4 records differ") {
		t.Fatalf("against a changed version: exit %d, want %q\n%s%s", res.Code, want, res.Stdout, res.Stderr)
	}
	res = weirtest.Run(t, dir, "", "plugin", "test", "v1", "--compare", "odd")
	if res.Code != 2 || !strings.Contains(res.Stderr, "--records") {
		t.Fatalf("without --records: exit %d\n%s", res.Code, res.Stderr)
	}
}

// copyDir copies the regular files under src to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
