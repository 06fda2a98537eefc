package abi_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/weir-stream/weir/abi/internal/abigen"
)

// TestGeneratedFilesUpToDate regenerates, in memory, the files that
// abi/internal/abigen writes from this package (the other SDKs' ABI
// constants and the shared JSON test vectors) and fails for each
// committed file that differs.
func TestGeneratedFilesUpToDate(t *testing.T) {
	root := ".."
	files, err := abigen.Generate(root)
	if err != nil {
		t.Fatalf("generating: %v", err)
	}
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.Path)))
		if err != nil {
			t.Errorf("%s: %v; run %q from the repository root", f.Path, err, abigen.Command)
			continue
		}
		if !bytes.Equal(got, f.Content) {
			t.Errorf("%s is stale (%s): run %q from the repository root", f.Path, firstDiff(got, f.Content), abigen.Command)
		}
	}
}

// firstDiff describes the first line where a file differs from what the
// generator writes.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			const max = 120
			if len(gl) > max {
				gl = gl[:max] + "..."
			}
			if len(wl) > max {
				wl = wl[:max] + "..."
			}
			return "line " + strconv.Itoa(i+1) + " is " + strconv.Quote(gl) + ", want " + strconv.Quote(wl)
		}
	}
	return "no line differs"
}
