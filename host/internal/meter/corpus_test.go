package meter_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/weir-stream/weir/host/internal/meter"
)

// TestCorpus instruments the modules it can find: the repository's, the
// plugins weir built into its cache, a Go guest, and those wazero's own
// tests ship (the spec tests among them). For each module that wazero
// compiles, the instrumented one must compile too; for those that import
// nothing, every exported function without parameters is called on both,
// and must return the same results or trap the same way.
//
// By default it takes a fixed sample of the plugin cache and of wazero's
// modules, light enough for CI; with WEIR_METER_CORPUS=all, all of them.
func TestCorpus(t *testing.T) {
	groups := []struct {
		name  string
		files func(t *testing.T) []string
		opts  meter.Options
	}{
		{"repository", repositoryModules, meter.Options{}},
		{"plugin-cache", pluginCacheModules, meter.Options{}},
		{"go-guest", goGuestFile, meter.Options{}},
		// Dense checks, to try placements in many more places.
		{"wazero", wazeroModules, meter.Options{Fuel: 97, MaxStraight: 5}},
	}
	var total corpusStats
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			files := g.files(t)
			if len(files) == 0 {
				t.Skip("no modules found")
			}
			c := newCorpusRun(t, g.opts)
			for _, f := range files {
				c.check(t, f)
			}
			t.Logf("%s", c.stats)
			total.add(c.stats)
		})
	}
	t.Logf("total: %s", total)
}

type corpusStats struct {
	files      int // distinct modules read
	compiled   int // modules wazero compiles, as they are and instrumented
	rejected   int // modules wazero does not compile, which Instrument may refuse too
	refused    int // of those, how many Instrument refused
	already    int // modules that import from weir_sandbox already
	run        int // modules whose functions were called on both
	calls      int // functions called on both, with the same outcome
	unfinished int // calls stopped by the yield budget or the deadline
}

func (s *corpusStats) add(o corpusStats) {
	s.files += o.files
	s.compiled += o.compiled
	s.rejected += o.rejected
	s.refused += o.refused
	s.already += o.already
	s.run += o.run
	s.calls += o.calls
	s.unfinished += o.unfinished
}

func (s corpusStats) String() string {
	return fmt.Sprintf("%d modules: %d compiled as they are and instrumented, "+
		"%d rejected by wazero (%d refused by Instrument too), %d already instrumented, "+
		"%d run on both with %d calls alike, %d calls unfinished",
		s.files, s.compiled, s.rejected, s.refused, s.already, s.run, s.calls, s.unfinished)
}

// corpusRun compiles originals in a runtime that closes modules when the
// context is done, as a guard against originals that never return, and
// instrumented modules in a plain one, whose yield stops runaway calls.
type corpusRun struct {
	opts       meter.Options
	orig, inst wazero.Runtime
	y          *yielder
	seen       map[[32]byte]bool // modules checked, by content
	stats      corpusStats
}

// checkBudget is about how many checks a call may run before its yield
// stops it: enough for the spec tests' loops, and few enough that a
// runaway recursion (a check at each entry) stops long before wazero's
// 400 MB call stack ceiling.
const checkBudget = 1_000_000

// memoryLimit, in pages, caps each memory in both runtimes alike, so that
// modules that grow memories by gigabytes (wazero's fuzz case 733) fail
// to on both instead of taking that much RSS.
const memoryLimit = 1024

func newCorpusRun(t *testing.T, opts meter.Options) *corpusRun {
	c := &corpusRun{opts: opts, y: &yielder{fuel: opts.Fuel}, seen: map[[32]byte]bool{}}
	if c.y.fuel == 0 {
		c.y.fuel = meter.DefaultFuel
	}
	cfg := wazero.NewRuntimeConfig().WithMemoryLimitPages(memoryLimit)
	c.orig = wazero.NewRuntimeWithConfig(ctx, cfg.WithCloseOnContextDone(true))
	t.Cleanup(func() { c.orig.Close(ctx) })
	c.inst = wazero.NewRuntimeWithConfig(ctx, cfg)
	t.Cleanup(func() { c.inst.Close(ctx) })
	_, err := c.inst.NewHostModuleBuilder(meter.ImportModule).NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(c.y.yield), nil, []api.ValueType{api.ValueTypeI32}).
		Export(meter.ImportName).Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *corpusRun) check(t *testing.T, file string) {
	bin, err := os.ReadFile(file)
	if err != nil {
		t.Error(err)
		return
	}
	sum := sha256.Sum256(bin)
	if c.seen[sum] {
		return
	}
	c.seen[sum] = true
	c.stats.files++
	out, ierr := meter.Instrument(bin, c.opts)
	orig, err := c.orig.CompileModule(ctx, bin)
	if err != nil {
		c.stats.rejected++
		if ierr != nil {
			c.stats.refused++
		}
		return
	}
	defer orig.Close(ctx)
	if ierr != nil {
		if strings.Contains(ierr.Error(), "already imports from "+meter.ImportModule) {
			c.stats.already++
		} else {
			t.Errorf("%s: wazero compiles it, Instrument fails: %v", file, ierr)
		}
		return
	}
	inst, err := c.inst.CompileModule(ctx, out)
	if err != nil {
		t.Errorf("%s: the instrumented module does not compile: %v", file, err)
		return
	}
	defer inst.Close(ctx)
	c.stats.compiled++
	if len(orig.ImportedFunctions()) == 0 && len(orig.ImportedMemories()) == 0 {
		c.run(t, file, orig, inst)
	}
}

// run instantiates both and calls their exported functions without
// parameters, in the order of their names: the instrumented one first, so
// that a function that does not return is stopped by the yield budget and
// not called on the original.
func (c *corpusRun) run(t *testing.T, file string, orig, inst wazero.CompiledModule) {
	var names []string
	for name, def := range orig.ExportedFunctions() {
		if len(def.ParamTypes()) == 0 {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return
	}
	slices.Sort(names)
	octx, cancel := context.WithTimeout(ctx, time.Minute) // a guard, not an assertion
	defer cancel()
	config := wazero.NewModuleConfig().WithName("").WithStartFunctions()
	c.y.calls, c.y.stopAt = 0, 1+checkBudget/int(c.y.fuel)
	im, ierr := c.inst.InstantiateModule(ctx, inst, config)
	if errors.Is(ierr, errStopped) {
		c.unfinished(t, file, "the start function")
		return
	}
	om, oerr := c.orig.InstantiateModule(octx, orig, config)
	defer closeAll(om, im)
	if firstLine(oerr) != firstLine(ierr) {
		t.Errorf("%s: instantiate: %v, want %v", file, ierr, oerr)
	}
	if oerr != nil || ierr != nil {
		return
	}
	c.stats.run++
	for _, name := range names {
		c.y.calls = 0
		got, gerr := im.ExportedFunction(name).Call(ctx)
		if errors.Is(gerr, errStopped) {
			c.unfinished(t, file, name+"()")
			return // the instances' states differ from here on
		}
		want, werr := om.ExportedFunction(name).Call(octx)
		if octx.Err() != nil { // the guard: this machine is slow, or the original never returns
			c.unfinished(t, file, name+"() as it is")
			return
		}
		def := orig.ExportedFunctions()[name]
		if firstLine(werr) != firstLine(gerr) || !sameResults(def.ResultTypes(), got, want) {
			t.Errorf("%s: %s() = %v, %v; want %v, %v", file, name, got, gerr, want, werr)
			return
		}
		c.stats.calls++
	}
}

func (c *corpusRun) unfinished(t *testing.T, file, what string) {
	c.stats.unfinished++
	t.Logf("%s: %s was stopped", file, what)
}

func closeAll(ms ...api.Module) {
	for _, m := range ms {
		if m != nil {
			m.Close(ctx)
		}
	}
}

// wasmFiles returns the .wasm files under dir.
func wasmFiles(dir string) []string {
	var files []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".wasm") {
			files = append(files, path)
		}
		return nil
	})
	return files
}

// repositoryModules: the modules git tracks, and those under the folders
// that hold plugins and their test modules.
func repositoryModules(t *testing.T) []string {
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git work tree: %v", err)
	}
	dir := strings.TrimSpace(string(root))
	tracked, _ := exec.Command("git", "-C", dir, "ls-files", "*.wasm").Output()
	var files []string
	for _, f := range strings.Fields(string(tracked)) {
		files = append(files, filepath.Join(dir, f))
	}
	for _, sub := range []string{"host/internal/wasm/testdata", "plugins", "examples"} {
		files = append(files, wasmFiles(filepath.Join(dir, sub))...)
	}
	slices.Sort(files)
	return slices.Compact(files)
}

// pluginCacheModules: the modules weir built from plugin sources, in the
// cache that pluginbuild.DefaultCacheDir names, or a sample of them.
func pluginCacheModules(*testing.T) []string {
	if fullCorpus() {
		return pluginCacheFiles()
	}
	return onePerPlugin(pluginCacheFiles())
}

func pluginCacheFiles() []string {
	dir := os.Getenv("WEIR_CACHE_DIR")
	if dir == "" {
		if d, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(d, "weir")
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "plugins", "*.wasm"))
	return files
}

// fullCorpus reports whether WEIR_METER_CORPUS=all asks for every module.
func fullCorpus() bool { return os.Getenv("WEIR_METER_CORPUS") == "all" }

// onePerPlugin returns, of the modules of the plugin cache (named
// <plugin>-<hash>.wasm, in sorted order), the first of each plugin, leaving
// out those of more than a megabyte: the Go plugins, which the go-guest
// group stands for.
func onePerPlugin(files []string) []string {
	var some []string
	seen := map[string]bool{}
	for _, f := range files {
		base := filepath.Base(f)
		name := base[:max(strings.LastIndexByte(base, '-'), 0)]
		if fi, err := os.Stat(f); seen[name] || err != nil || fi.Size() > 1<<20 {
			continue
		}
		seen[name] = true
		some = append(some, f)
	}
	return some
}

func goGuestFile(t *testing.T) []string {
	if testing.Short() {
		t.Skip("builds a Go program")
	}
	f := filepath.Join(t.TempDir(), "goguest.wasm")
	if err := os.WriteFile(f, goGuestModule(t), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{f}
}

// wazeroModules: every module in wazero's source in the module cache.
func wazeroModules(t *testing.T) []string {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/tetratelabs/wazero").Output()
	if err != nil {
		t.Skipf("cannot find wazero's source: %v", err)
	}
	files := wasmFiles(strings.TrimSpace(string(dir)))
	if fullCorpus() {
		return files
	}
	return everyNth(files, 4)
}

func everyNth(files []string, n int) []string {
	var some []string
	for i := 0; i < len(files); i += n {
		some = append(some, files[i])
	}
	return some
}
