package wasm

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/weir-stream/weir/abi"
)

// Signature is a function's parameter and result types.
type Signature struct {
	Params  []api.ValueType
	Results []api.ValueType
}

// String renders s as "(i32, i32) -> (i64)".
func (s Signature) String() string {
	var b strings.Builder
	writeTypes := func(ts []api.ValueType) {
		b.WriteByte('(')
		for i, t := range ts {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(api.ValueTypeName(t))
		}
		b.WriteByte(')')
	}
	writeTypes(s.Params)
	b.WriteString(" -> ")
	writeTypes(s.Results)
	return b.String()
}

// Equal reports whether s and o have the same types.
func (s Signature) Equal(o Signature) bool {
	return bytes.Equal(s.Params, o.Params) && bytes.Equal(s.Results, o.Results)
}

func signatureOf(d api.FunctionDefinition) Signature {
	return Signature{Params: d.ParamTypes(), Results: d.ResultTypes()}
}

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// The export signatures of ABI v1.
var (
	sigVoid  = Signature{}
	sigAlloc = Signature{Params: []api.ValueType{i32}, Results: []api.ValueType{i32}}
	sigCall  = Signature{Params: []api.ValueType{i32, i32}, Results: []api.ValueType{i64}}
	// sigCreate is weir_agg_create's: no input, a packed accumulator out.
	sigCreate = Signature{Results: []api.ValueType{i64}}
	// sigOps is weir_ops's: no input, an abi.OpSet out.
	sigOps = Signature{Results: []api.ValueType{i32}}
)

// exportSignature returns the signature ABI v1 requires of the export
// name, and whether name is an export the ABI defines.
func exportSignature(name string) (Signature, bool) {
	switch name {
	case abi.ExportVersion, abi.ExportGC, abi.ExportInitialize:
		return sigVoid, true
	case abi.ExportAlloc:
		return sigAlloc, true
	case abi.ExportInit, abi.ExportMap, abi.ExportFlatMap, abi.ExportFilter,
		abi.ExportAggAdd, abi.ExportAggMerge, abi.ExportAggResult, abi.ExportAggResultCtx,
		abi.ExportTypedMap, abi.ExportTypedFlatMap, abi.ExportTypedFilter, abi.ExportTypedAggAdd:
		return sigCall, true
	case abi.ExportAggCreate, abi.ExportFields:
		return sigCreate, true
	case abi.ExportOps:
		return sigOps, true
	}
	return Signature{}, false
}

// wasmMagic starts every WebAssembly binary, followed by the version
// wasmVersion.
var (
	wasmMagic   = []byte("\x00asm")
	wasmVersion = []byte{1, 0, 0, 0}
)

// checkBinary explains why b is not a WebAssembly binary, or returns "".
func checkBinary(b []byte) string {
	switch {
	case len(b) == 0:
		return "not a WebAssembly module: the file is empty"
	case len(b) < 8 || !bytes.HasPrefix(b, wasmMagic):
		return "not a WebAssembly module: it does not start with the \\0asm header"
	case !bytes.Equal(b[4:8], wasmVersion):
		return fmt.Sprintf("not a WebAssembly module weir can run: binary format version %d, want 1",
			uint32(b[4])|uint32(b[5])<<8|uint32(b[6])<<16|uint32(b[7])<<24)
	}
	return ""
}

// shape is what validation needs to know of a compiled module.
type shape struct {
	exports    map[string]Signature // exported functions
	imports    []Import             // imported functions and memories, in order
	versions   []int                // ABI versions declared by marker exports, sorted
	hasVersion bool                 // whether abi.ExportVersion is among them
	memoryMin  uint32               // the initial pages of its exported memory
	// fields is whether it exports abi.ExportFields: it may then use the
	// typed convention (ABI.md §14), which Load learns by calling it, so
	// each of its operations may be implemented by its raw or its typed
	// exports.
	fields bool
}

func shapeOf(c wazero.CompiledModule) *shape {
	s := &shape{exports: make(map[string]Signature)}
	for name, d := range c.ExportedFunctions() {
		s.exports[name] = signatureOf(d)
		if v, ok := abi.ParseVersionExport(name); ok {
			s.versions = append(s.versions, v)
			if name == abi.ExportVersion {
				s.hasVersion = true
			}
		}
	}
	sort.Ints(s.versions)
	_, s.fields = s.exports[abi.ExportFields]
	for _, d := range c.ImportedFunctions() {
		mod, name, _ := d.Import()
		s.imports = append(s.imports, Import{Module: mod, Name: name, Kind: ImportFunction, Signature: signatureOf(d)})
	}
	for _, d := range c.ImportedMemories() {
		mod, name, _ := d.Import()
		s.imports = append(s.imports, Import{Module: mod, Name: name, Kind: ImportMemory})
	}
	for _, d := range c.ExportedMemories() {
		s.memoryMin = max(s.memoryMin, d.Min())
	}
	return s
}

// memoryProblem explains why the module's memory cannot start within
// limit pages, or returns "".
func (s *shape) memoryProblem(limit uint32) string {
	if s.memoryMin <= limit {
		return ""
	}
	return fmt.Sprintf("its memory starts at %d pages (%s), over its limit of %s (memory_limit_pages: %d)",
		s.memoryMin, sizeString(uint64(s.memoryMin)*pageSize), sizeString(uint64(limit)*pageSize), limit)
}

// versionProblem explains why the module is not an ABI v1 module at all,
// returning the message and the error kind, or ("", nil) when it declares
// ABI v1.
func (s *shape) versionProblem() (msg string, kind error) {
	if s.hasVersion {
		return "", nil
	}
	if len(s.versions) > 0 {
		v := s.versions[len(s.versions)-1]
		return fmt.Sprintf("speaks weir ABI v%d; this weir supports v%d", v, abi.Version), ErrABIVersion
	}
	return fmt.Sprintf("not a weir ABI v%d module: missing export %s", abi.Version, abi.ExportVersion), ErrInvalidModule
}

// problems lists what keeps an ABI v1 module from running as each op in
// ops; with no ops, as any operation (it must implement at least one). It
// checks the required exports, the signature of every export the ABI
// defines, and that weir provides every import as typed; provided maps an
// import module to the functions weir provides there.
func (s *shape) problems(provided map[string]map[string]Signature, ops ...abi.Op) []string {
	var ps []string
	for _, name := range s.missing(abi.ExportAlloc, abi.ExportInit) {
		ps = append(ps, "missing export "+name)
	}
	for _, op := range ops {
		if p := s.opProblem(op); p != "" {
			ps = append(ps, p)
		}
	}
	if len(ops) == 0 && len(s.implementedOps()) == 0 {
		ps = append(ps, fmt.Sprintf("exports none of %s, %s, %s, nor all of the aggregate exports %s",
			abi.ExportMap, abi.ExportFlatMap, abi.ExportFilter, strings.Join(abi.AggregateExports[:], ", ")))
	}
	names := make([]string, 0, len(s.exports))
	for name := range s.exports {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		want, ok := exportSignature(name)
		if !ok {
			continue
		}
		if got := s.exports[name]; !got.Equal(want) {
			ps = append(ps, fmt.Sprintf("export %s has type %s, want %s", name, got, want))
		}
	}
	for _, im := range s.imports {
		if p := importProblem(provided, im); p != "" {
			ps = append(ps, p)
		}
	}
	return ps
}

// implementedOps returns the operations s exports with the right
// signatures (opExports): the batch operations, then aggregate; for a
// module exporting abi.ExportFields, by its raw or its typed exports.
func (s *shape) implementedOps() []abi.Op {
	var ops []abi.Op
	for _, op := range append(abi.Ops[:], abi.OpAggregate) {
		if s.exportsAll(opExports(op, false)) || s.fields && s.exportsAll(opExports(op, true)) {
			ops = append(ops, op)
		}
	}
	return ops
}

// exportsAll reports whether s exports every one of names, each with its
// ABI signature.
func (s *shape) exportsAll(names []string) bool {
	for _, name := range names {
		want, _ := exportSignature(name)
		if sig, ok := s.exports[name]; !ok || !sig.Equal(want) {
			return false
		}
	}
	return true
}

// missing returns those of names that s does not export.
func (s *shape) missing(names ...string) []string {
	var m []string
	for _, name := range names {
		if _, ok := s.exports[name]; !ok {
			m = append(m, name)
		}
	}
	return m
}

// opProblem explains why s does not implement op, by its exports, or
// returns "": "the plugin implements filter, not map (missing export
// weir_map)".
func (s *shape) opProblem(op abi.Op) string {
	m := s.missing(opExports(op, false)...)
	if len(m) == 0 {
		return ""
	}
	what := exportList(m)
	if s.fields {
		t := s.missing(opExports(op, true)...)
		if len(t) == 0 {
			return ""
		}
		what += ", or for the typed convention " + exportList(t)
	}
	return fmt.Sprintf("%s (missing %s)", notImplemented(abi.OpSetOf(s.implementedOps()...), op), what)
}

// exportList names exports in prose: "export weir_map", "exports a, b".
func exportList(names []string) string {
	if len(names) == 1 {
		return "export " + names[0]
	}
	return "exports " + strings.Join(names, ", ")
}

// conventionProblem explains why s, loaded as op, cannot run in the
// convention its abi.ExportFields answer selected (typed, when it declared
// fields), or returns "".
func (s *shape) conventionProblem(op abi.Op, typed bool) string {
	m := s.missing(opExports(op, typed)...)
	switch {
	case len(m) == 0:
		return ""
	case typed:
		return fmt.Sprintf("its %s declares fields (the typed convention), but it is missing %s", abi.ExportFields, exportList(m))
	}
	return fmt.Sprintf("its %s declares no fields (the raw convention), but it is missing %s", abi.ExportFields, exportList(m))
}

// notImplemented says that a plugin implementing the operations in has
// does not implement op: "the plugin implements map, not filter".
func notImplemented(has abi.OpSet, op abi.Op) string {
	return fmt.Sprintf("the plugin implements %s, not %s", opList(has.Ops()), op)
}

// opList names ops in prose: "map", "map and filter", "map, flat_map and
// filter"; "nothing" for none.
func opList(ops []abi.Op) string {
	names := make([]string, len(ops))
	for i, op := range ops {
		names[i] = op.String()
	}
	switch len(names) {
	case 0:
		return "nothing"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// opsError is the Kind of the error Load returns for a module whose
// abi.ExportOps answer lacks its operator's operation. It wraps
// ErrInvalidModule, and keeps the answer for Inspect.
type opsError struct{ ops abi.OpSet }

func (e *opsError) Error() string {
	return ErrInvalidModule.Error() + ": it does not implement the operator's operation"
}

func (e *opsError) Unwrap() error { return ErrInvalidModule }

// checkOps asks the instance, when the module exports abi.ExportOps, which
// operations the plugin registered, and refuses the module when its
// operator's operation is not among them. A module without the export was
// judged by its exports alone. Load calls it after initialisation, since
// an SDK may register its functions in weir_init, by the config.
func (w *Worker) checkOps(ctx context.Context) error {
	cfg := &w.p.cfg
	ops, ok, err := w.registeredOps(ctx)
	if err != nil || !ok || ops.Has(cfg.Op) {
		return err
	}
	return cfg.errorf(&opsError{ops: ops}, nil, "%s", notImplemented(ops, cfg.Op))
}

// registeredOps calls abi.ExportOps, and reports whether the module exports
// it.
func (w *Worker) registeredOps(ctx context.Context) (abi.OpSet, bool, error) {
	fn := w.inst.mod.ExportedFunction(abi.ExportOps)
	if fn == nil {
		return 0, false, nil
	}
	w.inst.out.beginCall()
	if err := w.call(ctx, fn); err != nil {
		return 0, false, w.p.cfg.errorf(ErrInit, nil, "%s failed: %s", abi.ExportOps, w.describe(err))
	}
	return abi.OpSet(uint32(w.stack[0])), true, nil
}

// opExports returns the exports operation op requires of a module; in the
// typed convention (ABI.md §14), its typed batch export, or for aggregate
// abi.ExportTypedAggAdd in place of abi.ExportAggAdd.
func opExports(op abi.Op, typed bool) []string {
	if op == abi.OpAggregate {
		names := abi.AggregateExports
		if typed {
			for i, name := range names {
				if name == abi.ExportAggAdd {
					names[i] = abi.ExportTypedAggAdd
				}
			}
		}
		return names[:]
	}
	if typed {
		return []string{op.TypedExport()}
	}
	return []string{op.Export()}
}

const (
	envModule = "env"
	envAbort  = "abort"
)

// importProblem explains why weir cannot satisfy im, or returns "".
func importProblem(provided map[string]map[string]Signature, im Import) string {
	qual := im.Module + "." + im.Name
	if im.Kind == ImportMemory {
		return fmt.Sprintf("imports memory %s; a plugin must define its own memory", qual)
	}
	fns, ok := provided[im.Module]
	if !ok {
		return fmt.Sprintf("imports %s from module %q, which weir does not provide (plugins may import from %s, %s and %s.%s only)",
			qual, im.Module, wasi_snapshot_preview1.ModuleName, abi.ImportModule, envModule, envAbort)
	}
	want, ok := fns[im.Name]
	if !ok {
		switch im.Module {
		case envModule:
			return fmt.Sprintf("imports %s, which weir does not provide (of module %s it provides only %s)", qual, envModule, envAbort)
		case abi.ImportModule:
			return fmt.Sprintf("imports %s, which is not a weir ABI v%d host function", qual, abi.Version)
		}
		return fmt.Sprintf("imports %s, which weir does not provide", qual)
	}
	if !im.Signature.Equal(want) {
		return fmt.Sprintf("imports %s with type %s, want %s", qual, im.Signature, want)
	}
	return ""
}
