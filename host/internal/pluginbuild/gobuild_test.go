package pluginbuild

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestBuildGoFolderAlone builds Go plugin folders that do not say how to
// find the SDK, outside the weir tree and offline: weir supplies the
// module file and the SDK, writing nothing into the folder.
func TestBuildGoFolderAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go plugins")
	}
	t.Setenv("GOFLAGS", "-mod=mod")
	t.Setenv("GOPROXY", "off")
	tests := []struct {
		name  string
		files map[string]string
	}{
		{"only main.go", map[string]string{"main.go": upperPlugin}},
		{"a go.mod without the SDK", map[string]string{"main.go": upperPlugin, "go.mod": "module example.com/shout\n\ngo 1.26\n"}},
		{"two files", map[string]string{"main.go": upperPlugin[:len(upperPlugin)-len("func main() {}\n")], "main2.go": "package main\n\nfunc main() {}\n"}},
	}
	cache := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "shout")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFiles(t, dir, tt.files)
			src, err := Build(context.Background(), dir, Options{CacheDir: cache})
			if err != nil {
				t.Fatal(err)
			}
			if src.Lang != LangGo || src.Cached {
				t.Fatalf("built %+v, want a fresh Go build", src)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			want := make([]string, 0, len(tt.files))
			for n := range tt.files {
				want = append(want, n)
			}
			slices.Sort(want)
			if !slices.Equal(names, want) {
				t.Fatalf("the folder holds %v after the build, want %v", names, want)
			}
			again, err := Build(context.Background(), dir, Options{CacheDir: cache})
			if err != nil || !again.Cached || again.Path != src.Path {
				t.Fatalf("second build: %+v, %v; want the cached module", again, err)
			}
		})
	}
}
