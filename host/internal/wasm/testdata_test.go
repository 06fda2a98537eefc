package wasm

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTestdataBuilt checks that every testdata/*.wat has its .wasm beside
// it and, where wat2wasm is installed, that the .wasm is current (run
// testdata/gen.sh after editing a .wat).
func TestTestdataBuilt(t *testing.T) {
	wats, err := filepath.Glob(filepath.Join("testdata", "*.wat"))
	if err != nil || len(wats) == 0 {
		t.Fatalf("no testdata/*.wat: %v", err)
	}
	var tmp string
	if _, err := exec.LookPath("wat2wasm"); err == nil && !testing.Short() {
		tmp = t.TempDir()
		for _, f := range append(wats, "gen.sh") {
			copyFile(t, filepath.Join("testdata", filepath.Base(f)), filepath.Join(tmp, filepath.Base(f)))
		}
		if err := os.CopyFS(filepath.Join(tmp, "lib"), os.DirFS(filepath.Join("testdata", "lib"))); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("sh", filepath.Join(tmp, "gen.sh")).CombinedOutput(); err != nil {
			t.Fatalf("gen.sh: %v\n%s", err, out)
		}
	}
	for _, wat := range wats {
		name := strings.TrimSuffix(filepath.Base(wat), ".wat") + ".wasm"
		committed, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Errorf("%s has no built module: run testdata/gen.sh", wat)
			continue
		}
		if tmp == "" {
			continue
		}
		fresh, err := os.ReadFile(filepath.Join(tmp, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(committed, fresh) {
			t.Errorf("testdata/%s is stale: run testdata/gen.sh", name)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
