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
// depending on assemblyscript) and its sources, normally index.ts or
// assembly/index.ts, using the SDK, which `weir plugin new` writes into the
// plugin's weir-sdk folder and its asconfig.json extends. The compiler,
// asc, is the npm package assemblyscript, found in the order Toolchain
// gives; scripts/install-toolchains.sh installs it in
// guest-sdk/assemblyscript/node_modules, and `npm install -g
// assemblyscript` puts it on PATH.

func init() {
	register(LangAssemblyScript, builder{hash: func(ctx context.Context, dir, _ string) (string, error) { return asHash(ctx, dir) }, build: asBuild})
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
	why     string   // which rule found it
	version string   // asc's version
	sdks    []string // SDK folders the plugin's sources may read
}

// ascCandidate is a place asc may be, and the rule that names it.
type ascCandidate struct{ path, why string }

// findAsToolchain finds asc for the plugin in dir (empty for none), in the
// order Toolchain gives.
func findAsToolchain(ctx context.Context, dir string) (asToolchain, error) {
	var tc asToolchain
	var cands []ascCandidate
	if env := os.Getenv("WEIR_ASC"); env != "" {
		if fi, err := os.Stat(env); err != nil || fi.IsDir() {
			return tc, fmt.Errorf("$WEIR_ASC=%s is not the AssemblyScript compiler (node_modules/.bin/asc of the assemblyscript package)", env)
		}
		cands = append(cands, ascCandidate{env, "$WEIR_ASC"})
	}
	if dir != "" {
		if ext := asconfigExtends(dir); ext != "" {
			tc.sdks = append(tc.sdks, ext)
		}
		if root := weirRoot(dir); root != "" && !containsPath(tc.sdks, filepath.Join(root, asSDKDir)) {
			tc.sdks = append(tc.sdks, filepath.Join(root, asSDKDir))
		}
		cands = append(cands, ascCandidate{filepath.Join(dir, ascBin), "the plugin's node_modules"})
		for _, sdk := range tc.sdks {
			cands = append(cands, ascCandidate{filepath.Join(sdk, ascBin), "the SDK's node_modules"})
		}
	}
	if p, err := exec.LookPath("asc"); err == nil {
		cands = append(cands, ascCandidate{p, "asc on PATH"})
	}
	for _, c := range cands {
		if fi, err := os.Stat(c.path); err == nil && !fi.IsDir() {
			tc.asc, tc.why = c.path, c.why
			break
		}
	}
	if tc.asc == "" {
		looked := "$WEIR_ASC and asc on PATH"
		if dir != "" {
			looked = "$WEIR_ASC, the plugin's node_modules/.bin/asc, its SDK's and asc on PATH"
		}
		return tc, fmt.Errorf("no AssemblyScript compiler found (looked at %s): npm install -g assemblyscript, or npm install assemblyscript in the plugin folder, or set $WEIR_ASC (in a weir checkout, scripts/install-toolchains.sh installs one)", looked)
	}
	if _, err := exec.LookPath("node"); err != nil {
		return tc, fmt.Errorf("the AssemblyScript compiler %s needs Node.js on PATH: %w", tc.asc, err)
	}
	v, err := ascVersion(ctx, tc.asc)
	if err != nil {
		return tc, err
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
		return "", fmt.Errorf("plugin %s is AssemblyScript: %w", dir, err)
	}
	roots := append([]string{dir}, tc.sdks...)
	h, err := HashFiles([]string{"assemblyscript", tc.version, tc.asc, SDKVersion()}, asSkip, roots...)
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
		return fmt.Errorf("plugin %s is AssemblyScript: %w", dir, err)
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
			sdk, err := ExtractedSDK(outCacheDir(out), LangAssemblyScript)
			if err != nil {
				return err
			}
			base = filepath.Join(sdk, "asconfig.plugin.json")
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
