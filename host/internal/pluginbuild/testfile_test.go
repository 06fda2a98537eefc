package pluginbuild_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-stream/weir/host/plugintool"
)

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
