package pluginbuild

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// AssemblyScript plugins: a folder with an asconfig.json (or a package.json
// depending on assemblyscript) and its sources, normally assembly/index.ts,
// using the SDK in guest-sdk/assemblyscript. The compiler, asc, is the npm
// package assemblyscript, which scripts/install-toolchains.sh installs in
// guest-sdk/assemblyscript/node_modules; plugins do not need their own.

func init() {
	register(LangAssemblyScript, builder{hash: asHash, build: asBuild})
}

// asSDKDir is the SDK's folder, relative to the weir module root.
var asSDKDir = filepath.Join("guest-sdk", "assemblyscript")

// asSkip are the folders whose contents are not build input: installed
// packages and build outputs.
var asSkip = []string{"node_modules", "build", ".git"}

// ascBin is where the AssemblyScript compiler lives inside an npm package
// folder.
var ascBin = filepath.Join("node_modules", ".bin", "asc")

// asToolchain is what building one AssemblyScript plugin uses.
type asToolchain struct {
	asc     string   // the asc executable
	version string   // asc's version
	sdks    []string // SDK folders the plugin's sources may read
}

// findAsToolchain finds asc for the plugin in dir: the plugin's own
// node_modules/.bin/asc, else the SDK's (guest-sdk/assemblyscript in the
// weir checkout holding dir, or the SDK folder the plugin's asconfig.json
// extends), else $WEIR_ASC.
func findAsToolchain(ctx context.Context, dir string) (asToolchain, error) {
	var tc asToolchain
	if root := weirRoot(dir); root != "" {
		tc.sdks = append(tc.sdks, filepath.Join(root, asSDKDir))
	}
	if ext := asconfigExtends(dir); ext != "" && !containsPath(tc.sdks, ext) {
		tc.sdks = append(tc.sdks, ext)
	}
	candidates := []string{filepath.Join(dir, ascBin)}
	for _, sdk := range tc.sdks {
		candidates = append(candidates, filepath.Join(sdk, ascBin))
	}
	if env := os.Getenv("WEIR_ASC"); env != "" {
		candidates = append(candidates, env)
	}
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			tc.asc = c
			break
		}
	}
	if tc.asc == "" {
		return tc, fmt.Errorf("plugin %s is AssemblyScript, and no AssemblyScript compiler was found (looked for %s; set $WEIR_ASC to use another): run scripts/install-toolchains.sh",
			dir, strings.Join(candidates, ", "))
	}
	if _, err := exec.LookPath("node"); err != nil {
		return tc, fmt.Errorf("plugin %s is AssemblyScript, and its compiler %s needs Node.js on PATH: run scripts/install-toolchains.sh: %w", dir, tc.asc, err)
	}
	v, err := ascVersion(ctx, tc.asc)
	if err != nil {
		return tc, fmt.Errorf("plugin %s: %w", dir, err)
	}
	tc.version = v
	return tc, nil
}

// ascVersion returns the version of the asc at path: from the package.json
// of the assemblyscript package it belongs to, or else by running it.
func ascVersion(ctx context.Context, asc string) (string, error) {
	if real, err := filepath.EvalSymlinks(asc); err == nil {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(real)), "package.json"))
		if err == nil {
			var pkg struct{ Name, Version string }
			if json.Unmarshal(b, &pkg) == nil && pkg.Name == "assemblyscript" && pkg.Version != "" {
				return "assemblyscript " + pkg.Version, nil
			}
		}
	}
	out, err := runTool(ctx, "", asc, "--version")
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", asc, err)
	}
	return strings.TrimSpace(out), nil
}

// weirRoot returns the directory at or above dir holding the weir module's
// go.mod, or "".
func weirRoot(dir string) string {
	for d := dir; ; {
		if isWeirModule(filepath.Join(d, "go.mod")) {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

func isWeirModule(gomod string) bool {
	f, err := os.Open(gomod)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "module ") {
			return strings.Trim(strings.TrimSpace(strings.TrimPrefix(line, "module")), `"`) == "github.com/weir-stream/weir"
		}
	}
	return false
}

// asconfigExtends returns the folder of the config dir's asconfig.json
// extends, when it exists: the SDK, for plugins made from the template.
func asconfigExtends(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "asconfig.json"))
	if err != nil {
		return ""
	}
	var cfg struct {
		Extends string `json:"extends"`
	}
	if json.Unmarshal(b, &cfg) != nil || cfg.Extends == "" {
		return ""
	}
	p := cfg.Extends
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return filepath.Dir(p)
}

func containsPath(list []string, p string) bool {
	for _, q := range list {
		if filepath.Clean(q) == filepath.Clean(p) {
			return true
		}
	}
	return false
}

// asHash hashes what an AssemblyScript build reads: the plugin folder, the
// SDK's sources and asc's version.
func asHash(ctx context.Context, dir string) (string, error) {
	tc, err := findAsToolchain(ctx, dir)
	if err != nil {
		return "", err
	}
	roots := append([]string{dir}, tc.sdks...)
	h, err := HashFiles([]string{"assemblyscript", tc.version, tc.asc}, asSkip, roots...)
	if err != nil {
		return "", fmt.Errorf("plugin %s: %w", dir, err)
	}
	return h, nil
}

// asBuild compiles the plugin in dir to out with asc: with the plugin's
// asconfig.json when it has one, else its assembly/index.ts with the SDK's
// asconfig.plugin.json.
func asBuild(ctx context.Context, dir, out string) error {
	tc, err := findAsToolchain(ctx, dir)
	if err != nil {
		return err
	}
	var args []string
	if _, err := os.Stat(filepath.Join(dir, "asconfig.json")); err == nil {
		args = []string{"--config", "asconfig.json"}
	} else {
		entry := filepath.Join("assembly", "index.ts")
		if _, err := os.Stat(filepath.Join(dir, entry)); err != nil {
			return fmt.Errorf("no asconfig.json and no %s", entry)
		}
		var base string
		for _, sdk := range tc.sdks {
			if c := filepath.Join(sdk, "asconfig.plugin.json"); fileExists(c) {
				base = c
				break
			}
		}
		if base == "" {
			return errors.New("no asconfig.json, and the weir AssemblyScript SDK (guest-sdk/assemblyscript) was not found to build with")
		}
		args = []string{entry, "--config", base}
	}
	args = append(args, "--outFile", out)
	_, err = runTool(ctx, dir, tc.asc, args...)
	return err
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// runTool runs a tool in dir and returns its standard output; on failure
// the error holds its output.
func runTool(ctx context.Context, dir, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String() + "\n" + stdout.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", errors.New(msg)
	}
	return stdout.String(), nil
}
