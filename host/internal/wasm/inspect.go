package wasm

import (
	"context"
	"sort"

	"github.com/tetratelabs/wazero"

	"github.com/weir-stream/weir/abi"
)

// Info describes a module without running it, for `weir plugin inspect`.
type Info struct {
	// Size is the module's size in bytes.
	Size int
	// ABIVersion is the weir ABI version the module declares: abi.Version
	// when it exports that version's marker, else the highest version it
	// declares, or 0 when it declares none.
	ABIVersion int
	// Ops are the batch operations the module exports with the right
	// signature.
	Ops []abi.Op
	// Exports are the exported functions, sorted by name.
	Exports []Function
	// Imports are the imported functions and memories, in module order.
	Imports []Import
	// Memory describes the module's memory when it exports or imports one;
	// nil when it does neither (it may still define an unexported one).
	Memory *MemoryInfo
	// Problems says why Load would reject the module, for every operation
	// in Ops; empty for a valid ABI v1 module.
	Problems []string
}

// Function is an exported function.
type Function struct {
	Name      string
	Signature Signature
}

// ImportKind says what an import is.
type ImportKind string

const (
	ImportFunction ImportKind = "func"
	ImportMemory   ImportKind = "memory"
)

// Import is an imported function or memory.
type Import struct {
	Module    string
	Name      string
	Kind      ImportKind
	Signature Signature // functions only
}

// MemoryInfo is a module's memory 0, in 64 KiB pages.
type MemoryInfo struct {
	Min      uint32
	Max      uint32 // meaningful only when HasMax
	HasMax   bool
	Imported bool
	Export   string // the export name, when exported
}

// Inspect compiles wasm, without instantiating it, and describes it. It
// returns an error wrapping ErrInvalidModule only when wasm is not a valid
// WebAssembly module; a module that is valid Wasm but not a valid weir
// plugin is described, with Info.Problems saying what is wrong.
func Inspect(wasm []byte) (Info, error) {
	info := Info{Size: len(wasm)}
	if msg := checkBinary(wasm); msg != "" {
		return info, &Error{Kind: ErrInvalidModule, Msg: msg}
	}
	ctx := context.Background()
	// The interpreter compiles quickly, and nothing runs: Inspect needs only
	// the module's structure, and host modules for checking its imports.
	e, err := newEngine(ctx, wazero.NewRuntimeConfigInterpreter())
	if err != nil {
		return info, err
	}
	defer e.rt.Close(ctx)
	c, err := e.rt.CompileModule(ctx, wasm)
	if err != nil {
		return info, &Error{Kind: ErrInvalidModule, Msg: "invalid WebAssembly", Err: err}
	}
	defer c.Close(ctx)

	s := shapeOf(c)
	switch {
	case s.hasVersion:
		info.ABIVersion = abi.Version
	case len(s.versions) > 0:
		info.ABIVersion = s.versions[len(s.versions)-1]
	}
	info.Ops = s.implementedOps()
	for name, sig := range s.exports {
		info.Exports = append(info.Exports, Function{Name: name, Signature: sig})
	}
	sort.Slice(info.Exports, func(i, j int) bool { return info.Exports[i].Name < info.Exports[j].Name })
	info.Imports = s.imports
	for _, d := range c.ImportedMemories() {
		info.Memory = &MemoryInfo{Min: d.Min(), Imported: true}
		info.Memory.Max, info.Memory.HasMax = d.Max()
	}
	if info.Memory == nil {
		for name, d := range c.ExportedMemories() {
			if info.Memory == nil || name < info.Memory.Export {
				info.Memory = &MemoryInfo{Min: d.Min(), Export: name}
				info.Memory.Max, info.Memory.HasMax = d.Max()
			}
		}
	}
	if msg, _ := s.versionProblem(); msg != "" {
		info.Problems = []string{msg}
	} else {
		info.Problems = s.problems(e.provided, info.Ops...)
	}
	return info, nil
}
