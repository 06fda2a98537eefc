package pluginbuild

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRust writes, in a new folder, a cargo and a rustc that report a
// sysroot holding the standard library of target ("" for none), and
// returns the folder.
func fakeRust(t *testing.T, target string) string {
	t.Helper()
	bin := t.TempDir()
	sysroot := t.TempDir()
	if target != "" {
		if err := os.MkdirAll(filepath.Join(sysroot, "lib", "rustlib", target, "lib"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	scripts := map[string]string{
		"rustc": "#!/bin/sh\ncase \"$1\" in --print) echo " + sysroot + ";; *) echo rustc 9.9.9-fake;; esac\n",
		"cargo": "#!/bin/sh\necho cargo 9.9.9-fake\n",
	}
	for name, s := range scripts {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// TestRustToolchainOrder checks the order the Rust toolchain is chosen
// in: $WEIR_CARGO, then the cargo on PATH when it has a Wasm target, then
// Debian's, each saying why.
func TestRustToolchainOrder(t *testing.T) {
	withTarget := fakeRust(t, "wasm32-wasip1")
	withoutTarget := fakeRust(t, "")
	path := os.Getenv("PATH")
	tests := []struct {
		name, weirCargo, pathDir string
		wantCargo, wantWhy       string
		wantTarget, wantErr      string
		needDebian               bool
	}{
		{name: "a cargo on PATH with a Wasm target", pathDir: withTarget,
			wantCargo: filepath.Join(withTarget, "cargo"), wantTarget: "wasm32-wasip1", wantWhy: "the cargo on PATH"},
		{name: "$WEIR_CARGO first", weirCargo: filepath.Join(withTarget, "cargo"), pathDir: withoutTarget,
			wantCargo: filepath.Join(withTarget, "cargo"), wantTarget: "wasm32-wasip1", wantWhy: "$WEIR_CARGO"},
		{name: "$WEIR_CARGO without a Wasm target", weirCargo: filepath.Join(withoutTarget, "cargo"),
			wantErr: "$WEIR_CARGO=" + filepath.Join(withoutTarget, "cargo") + ": its rustc has no Wasm target"},
		{name: "a cargo on PATH without a Wasm target falls back to Debian's", pathDir: withoutTarget, needDebian: true,
			wantCargo: rustCargo, wantTarget: rustTarget, wantWhy: "the cargo on PATH (" + filepath.Join(withoutTarget, "cargo") + ") was not used: its rustc has no Wasm target"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := os.Stat(rustCargo); tt.needDebian && err != nil {
				t.Skip("Debian's cargo is not installed")
			}
			t.Setenv("WEIR_CARGO", tt.weirCargo)
			t.Setenv("WEIR_RUSTC", "")
			t.Setenv("PATH", tt.pathDir+string(os.PathListSeparator)+path)
			tc, err := rustToolchain(context.Background())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.cargo != tt.wantCargo || tc.target != tt.wantTarget || !strings.Contains(tc.why, tt.wantWhy) {
				t.Fatalf("chose %s (%s, %q), want %s (%s, %q)", tc.cargo, tc.target, tc.why, tt.wantCargo, tt.wantTarget, tt.wantWhy)
			}
			if tc.debian != (tt.wantCargo == rustCargo) {
				t.Fatalf("debian = %v for %s", tc.debian, tc.cargo)
			}
		})
	}
}

// TestToolchainOverrides checks that a WEIR_* override that is not a
// working tool is an error naming it, not a silent fallback.
func TestToolchainOverrides(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	tests := []struct {
		name, env string
		lang      Lang
	}{
		{"go", "WEIR_GO", LangGo},
		{"clang", "WEIR_CLANG", LangC},
		{"asc", "WEIR_ASC", LangAssemblyScript},
		{"cargo", "WEIR_CARGO", LangRust},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(tt.env, missing)
			_, err := FindToolchain(context.Background(), tt.lang, t.TempDir())
			if err == nil || !strings.Contains(err.Error(), "$"+tt.env) {
				t.Fatalf("err %v, want one naming $%s", err, tt.env)
			}
		})
	}
}
