package plugintool

import (
	"context"
	"fmt"
	"os"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host"
	"github.com/weir-stream/weir/host/internal/pluginbuild"
	"github.com/weir-stream/weir/host/internal/wasm"
)

// Build builds the Go SDK plugin in dir, or finds it in the cache
// under cacheDir (empty for the default), and returns the module's path and
// whether the cache had it.
func Build(ctx context.Context, dir, cacheDir string) (path string, cached bool, err error) {
	src, err := pluginbuild.Build(ctx, dir, pluginbuild.Options{CacheDir: cacheDir})
	if err != nil {
		return "", false, fmt.Errorf("%w: %w", host.ErrPlugin, err)
	}
	return src.Path, src.Cached, nil
}

// Info describes a module without running it. It is a plain value.
type Info struct {
	Path string `json:"path"`
	// Source is the plugin folder the module was built from, and Lang its
	// language, for InspectPlugin of a folder; empty otherwise.
	Source     string   `json:"source,omitempty"`
	Lang       string   `json:"lang,omitempty"`
	Size       int      `json:"size"`
	ABIVersion int      `json:"abi_version"` // 0 when the module declares none
	Ops        []string `json:"ops"`         // batch operations it implements: map, flat_map, filter
	Exports    []string `json:"exports"`     // "name (params) -> (results)", sorted
	Imports    []string `json:"imports"`     // "module.name (params) -> (results)", in module order
	Memory     string   `json:"memory"`      // memory 0's limits in 64 KiB pages, or ""
	// Fields are the fields a typed module declares (abi/ABI.md §14), as
	// "path: type" followed by ", required" and ", strict" when flagged;
	// none for a raw module.
	Fields []string `json:"fields,omitempty"`
	// Problems says why weir would refuse to load the module; empty for a
	// valid plugin.
	Problems []string `json:"problems"`
}

// InspectPlugin describes the plugin at path: a .wasm file, as Inspect
// does, or a source folder, which it builds first (or finds in the cache
// under cacheDir, empty for the default).
func InspectPlugin(ctx context.Context, path, cacheDir string) (Info, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Info{}, err
	}
	if !fi.IsDir() {
		return Inspect(path)
	}
	src, err := pluginbuild.Build(ctx, path, pluginbuild.Options{CacheDir: cacheDir})
	if err != nil {
		return Info{}, fmt.Errorf("%w: %w", host.ErrPlugin, err)
	}
	info, err := Inspect(src.Path)
	info.Source, info.Lang = path, string(src.Lang)
	return info, err
}

// Inspect describes the .wasm file at path. It fails only when the
// file cannot be read or is not WebAssembly; a module that is not a valid
// weir plugin is described, with Problems saying why.
func Inspect(path string) (Info, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Info{}, err
	}
	info, err := wasm.Inspect(b)
	if err != nil {
		return Info{}, fmt.Errorf("%s: %w: %w", path, host.ErrPlugin, err)
	}
	pi := Info{Path: path, Size: info.Size, ABIVersion: info.ABIVersion, Problems: info.Problems,
		Ops: []string{}, Exports: []string{}, Imports: []string{}}
	for _, op := range info.Ops {
		pi.Ops = append(pi.Ops, op.String())
	}
	for _, f := range info.Fields {
		s := f.Path + ": " + f.Type.String()
		if f.Flags&abi.FieldRequired != 0 {
			s += ", required"
		}
		if f.Flags&abi.FieldStrict != 0 {
			s += ", strict"
		}
		pi.Fields = append(pi.Fields, s)
	}
	for _, e := range info.Exports {
		pi.Exports = append(pi.Exports, e.Name+" "+e.Signature.String())
	}
	for _, im := range info.Imports {
		s := im.Module + "." + im.Name
		if im.Kind == wasm.ImportFunction {
			s += " " + im.Signature.String()
		} else {
			s += " (" + string(im.Kind) + ")"
		}
		pi.Imports = append(pi.Imports, s)
	}
	if m := info.Memory; m != nil {
		pi.Memory = fmt.Sprintf("min %d pages", m.Min)
		if m.HasMax {
			pi.Memory += fmt.Sprintf(", max %d", m.Max)
		}
		if m.Imported {
			pi.Memory += ", imported"
		}
	}
	return pi, nil
}
