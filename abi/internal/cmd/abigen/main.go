// Command abigen writes the files package abigen generates: the C, Rust
// and AssemblyScript SDKs' copies of package abi's names and constants,
// and the JSON test vectors every SDK's tests read. Run it as
// "go generate ./abi" from the repository root; -root names the
// repository's root directory (by default the parent of the working
// directory, which go generate sets to abi/).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/weir-stream/weir/abi/internal/abigen"
)

func main() {
	root := flag.String("root", "..", "the repository's root directory")
	flag.Parse()
	files, err := abigen.Generate(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "abigen:", err)
		os.Exit(1)
	}
	for _, f := range files {
		path := filepath.Join(*root, filepath.FromSlash(f.Path))
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, f.Content) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "abigen:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(path, f.Content, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "abigen:", err)
			os.Exit(1)
		}
		fmt.Println("abigen: wrote", f.Path)
	}
}
