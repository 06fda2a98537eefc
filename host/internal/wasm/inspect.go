package wasm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	// Ops are the operations the module exports with the right
	// signatures. For a module that reports the operations it registered
	// (abi.ExportOps), they are those of them it reports once initialised
	// with the config {}.
	Ops []abi.Op
	// Exports are the exported functions, sorted by name.
	Exports []Function
	// Imports are the imported functions and memories, in module order.
	Imports []Import
	// Memory describes the module's memory when it exports or imports one;
	// nil when it does neither (it may still define an unexported one).
	Memory *MemoryInfo
	// Fields are the fields a typed module (one exporting
	// abi.ExportFields, ABI.md §14) declares once initialised with the
	// config {}; nil for a raw module, or one that does not start so.
	Fields []abi.FieldDecl
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

// Inspect compiles wasm and describes it. It instantiates it only when the
// module is a valid plugin that reports the operations it registered
// (abi.ExportOps) or declares fields (abi.ExportFields): it then
// initialises it in the sandbox, as Load does, with the config {}, and
// asks. It returns an error wrapping
// ErrInvalidModule only when wasm is not a valid WebAssembly module; a
// module that is valid Wasm but not a valid weir plugin is described, with
// Info.Problems saying what is wrong.
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
	_, reports := s.exports[abi.ExportOps]
	if (reports || s.fields) && len(info.Problems) == 0 {
		info.Ops, info.Fields, info.Problems = initialised(ctx, e, wasm, info.Ops, reports)
	}
	return info, nil
}

// inspectConfig is the config Inspect initialises a module with: the one
// an operator gets without a config: block.
var inspectConfig = []byte("{}")

// initialised returns what the module says once initialised with
// inspectConfig: those of ops, the operations the module exports, that it
// reports through abi.ExportOps when it does (reports), and its declared
// fields. When it does not start with that config, it returns ops, and
// the reason as a problem.
func initialised(ctx context.Context, e *engine, bin []byte, ops []abi.Op, reports bool) ([]abi.Op, []abi.FieldDecl, []string) {
	has, decls, err := loadInfo(ctx, e, bin, ops)
	if err != nil {
		msg := err.Error()
		if le, ok := err.(*Error); ok {
			msg = (&Error{Msg: le.Msg, Err: le.Err}).Error() // without the operator
		}
		return ops, nil, []string{fmt.Sprintf("with the config %s, it does not start: %s (so the operations listed are those it exports)", inspectConfig, msg)}
	}
	if !reports {
		return ops, decls, nil
	}
	var reg []abi.Op
	for _, op := range ops {
		if has.Has(op) {
			reg = append(reg, op)
		}
	}
	if len(reg) == 0 {
		return nil, nil, []string{fmt.Sprintf("with the config %s, it registers none of the operations it exports (%s)", inspectConfig, opList(ops))}
	}
	return reg, decls, nil
}

// loadInfo loads the module on e, as Load does, as an operator of the
// first of ops it registers, and returns its abi.ExportOps answer (all
// of ops for a module without the export) and its declared fields.
func loadInfo(ctx context.Context, e *engine, bin []byte, ops []abi.Op) (abi.OpSet, []abi.FieldDecl, error) {
	// A Runtime of the one engine, which Inspect closes.
	rt := &Runtime{log: slog.New(slog.DiscardHandler), eng: e}
	has := abi.OpSetOf(ops...)
	for _, op := range ops {
		if !has.Has(op) {
			continue
		}
		p, err := rt.Load(ctx, PluginConfig{Operator: "inspect", Wasm: bin, Op: op, InitConfig: inspectConfig})
		var oe *opsError
		if errors.As(err, &oe) {
			has = oe.ops // refused for op: try the first op it registers
			continue
		}
		if err != nil {
			return 0, nil, err
		}
		defer p.Close(ctx)
		reg, reports, err := p.spare.registeredOps(ctx)
		if err != nil {
			return 0, nil, err
		}
		if reports {
			has = reg
		}
		return has, p.declared(), nil
	}
	return has, nil, nil
}
