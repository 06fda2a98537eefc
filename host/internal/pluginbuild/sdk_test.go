package pluginbuild

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteSDK lays out each embedded SDK and checks that it holds the
// repository's files at the places a project's weir-sdk folder has them,
// and no Go test files.
func TestWriteSDK(t *testing.T) {
	root := moduleRoot(t)
	tests := []struct {
		lang  Lang
		files map[string]string // path in the laid-out SDK -> path in the repository
	}{
		{LangGo, map[string]string{
			"guest-sdk/go/register.go":    "guest-sdk/go/register.go",
			"guest-sdk/go/pyfmt/pyfmt.go": "guest-sdk/go/pyfmt/pyfmt.go",
			"abi/names.go":                "abi/names.go",
			"abi/wjson/value.go":          "abi/wjson/value.go",
			"abi/ABI.md":                  "abi/ABI.md",
		}},
		{LangRust, map[string]string{"Cargo.toml": "guest-sdk/rust/Cargo.toml", "src/lib.rs": "guest-sdk/rust/src/lib.rs"}},
		{LangC, map[string]string{"weir.h": "guest-sdk/c/weir.h", "weir.c": "guest-sdk/c/weir.c"}},
		{LangAssemblyScript, map[string]string{
			"asconfig.plugin.json": "guest-sdk/assemblyscript/asconfig.plugin.json",
			"exports.ts":           "guest-sdk/assemblyscript/exports.ts",
			"lib/weir/index.ts":    "guest-sdk/assemblyscript/lib/weir/index.ts",
		}},
	}
	for _, tt := range tests {
		t.Run(string(tt.lang), func(t *testing.T) {
			dir := t.TempDir()
			if err := WriteSDK(tt.lang, dir); err != nil {
				t.Fatal(err)
			}
			for got, want := range tt.files {
				if a, b := mustRead(t, filepath.Join(dir, got)), mustRead(t, filepath.Join(root, want)); a != b {
					t.Errorf("%s differs from the repository's %s", got, want)
				}
			}
			if stamp := mustRead(t, filepath.Join(dir, "WEIR-SDK")); !strings.Contains(stamp, SDKVersion()) {
				t.Errorf("WEIR-SDK %q does not name the version %s", stamp, SDKVersion())
			}
			filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && strings.HasSuffix(p, "_test.go") {
					t.Errorf("%s: a test file in the SDK", p)
				}
				return err
			})
		})
	}
}

// TestExtractedGoSDKStandsAlone checks that the Go SDK, extracted, is a
// module needing nothing beyond the standard library: the go command
// lists its packages offline, with no module cache to read.
func TestExtractedGoSDKStandsAlone(t *testing.T) {
	cache := t.TempDir()
	dir, err := ExtractedSDK(cache, LangGo)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := ExtractedSDK(cache, LangGo); err != nil || again != dir {
		t.Fatalf("second extraction: %s, %v; want %s", again, err, dir)
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./guest-sdk/go/...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOMODCACHE="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list in the extracted SDK: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if !strings.HasPrefix(p, sdkModule+"/") {
			t.Errorf("the Go SDK depends on %s", p)
		}
	}
	if mod := mustRead(t, filepath.Join(dir, "go.mod")); strings.Contains(mod, "require") {
		t.Errorf("the SDK's go.mod has requirements:\n%s", mod)
	}
}
