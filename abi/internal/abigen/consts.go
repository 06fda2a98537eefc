package abigen

import (
	"strings"

	"github.com/weir-stream/weir/abi"
)

// typ is the type of a generated constant, which each language spells its
// own way.
type typ int

const (
	tString typ = iota // text
	tI32               // a signed 32-bit number
	tU32               // an unsigned 32-bit number
	tU8                // a byte
	tSize              // a byte count
	tChar              // a byte that is a printable ASCII character
)

// constant is one generated constant. name is in upper snake case without
// a language's prefix (C adds WEIR_).
type constant struct {
	name string
	from string // the Go expression of package abi it is read from
	typ  typ
	str  string // for tString
	num  int64  // for the others
}

// group is a run of constants with the comment they share.
type group struct {
	doc    string
	consts []constant
}

func str(name, from, s string) constant {
	return constant{name: name, from: from, typ: tString, str: s}
}

func num[T ~int | ~int32 | ~uint32 | ~uint8](name, from string, t typ, v T) constant {
	return constant{name: name, from: from, typ: t, num: int64(v)}
}

// groups lists every generated constant, each read from package abi.
func groups() []group {
	return []group{
		{"The ABI version, and the export that declares it (ABI.md §2).", []constant{
			num("ABI_VERSION", "abi.Version", tU32, abi.Version),
		}},
		{"The names of the module's exports (ABI.md §2).", []constant{
			str("EXPORT_VERSION", "abi.ExportVersion", abi.ExportVersion),
			str("EXPORT_ALLOC", "abi.ExportAlloc", abi.ExportAlloc),
			str("EXPORT_INIT", "abi.ExportInit", abi.ExportInit),
			str("EXPORT_MAP", "abi.ExportMap", abi.ExportMap),
			str("EXPORT_FLAT_MAP", "abi.ExportFlatMap", abi.ExportFlatMap),
			str("EXPORT_FILTER", "abi.ExportFilter", abi.ExportFilter),
			str("EXPORT_AGG_CREATE", "abi.ExportAggCreate", abi.ExportAggCreate),
			str("EXPORT_AGG_ADD", "abi.ExportAggAdd", abi.ExportAggAdd),
			str("EXPORT_AGG_MERGE", "abi.ExportAggMerge", abi.ExportAggMerge),
			str("EXPORT_AGG_RESULT", "abi.ExportAggResult", abi.ExportAggResult),
			str("EXPORT_AGG_RESULT_CTX", "abi.ExportAggResultCtx", abi.ExportAggResultCtx),
			str("EXPORT_OPS", "abi.ExportOps", abi.ExportOps),
			str("EXPORT_GC", "abi.ExportGC", abi.ExportGC),
			str("EXPORT_INITIALIZE", "abi.ExportInitialize", abi.ExportInitialize),
		}},
		{"The host functions' module and names (ABI.md §6).", []constant{
			str("IMPORT_MODULE", "abi.ImportModule", abi.ImportModule),
			str("IMPORT_LOG", "abi.ImportLog", abi.ImportLog),
			str("IMPORT_STATE_GET", "abi.ImportStateGet", abi.ImportStateGet),
			str("IMPORT_STATE_PUT", "abi.ImportStatePut", abi.ImportStatePut),
			str("IMPORT_STATE_DELETE", "abi.ImportStateDelete", abi.ImportStateDelete),
		}},
		{"The statuses of the host functions (ABI.md §6): zero or positive is success.", []constant{
			num("STATUS_OK", "abi.StatusOK", tI32, abi.StatusOK),
			num("STATUS_NOT_FOUND", "abi.StatusNotFound", tI32, abi.StatusNotFound),
			num("STATUS_NO_CONTEXT", "abi.StatusNoContext", tI32, abi.StatusNoContext),
			num("STATUS_BAD_INDEX", "abi.StatusBadIndex", tI32, abi.StatusBadIndex),
			num("STATUS_TOO_LARGE", "abi.StatusTooLarge", tI32, abi.StatusTooLarge),
			num("STATUS_BAD_MEMORY", "abi.StatusBadMemory", tI32, abi.StatusBadMemory),
		}},
		{"The texts of the statuses, as package abi's StatusText words them.", []constant{
			str("STATUS_TEXT_OK", "abi.StatusText(abi.StatusOK)", abi.StatusText(abi.StatusOK)),
			str("STATUS_TEXT_NOT_FOUND", "abi.StatusText(abi.StatusNotFound)", abi.StatusText(abi.StatusNotFound)),
			str("STATUS_TEXT_NO_CONTEXT", "abi.StatusText(abi.StatusNoContext)", abi.StatusText(abi.StatusNoContext)),
			str("STATUS_TEXT_BAD_INDEX", "abi.StatusText(abi.StatusBadIndex)", abi.StatusText(abi.StatusBadIndex)),
			str("STATUS_TEXT_TOO_LARGE", "abi.StatusText(abi.StatusTooLarge)", abi.StatusText(abi.StatusTooLarge)),
			str("STATUS_TEXT_BAD_MEMORY", "abi.StatusText(abi.StatusBadMemory)", abi.StatusText(abi.StatusBadMemory)),
		}},
		{"The levels of the log host function, and the longest line the host keeps, in bytes.", []constant{
			num("LOG_DEBUG", "abi.LogDebug", tI32, abi.LogDebug),
			num("LOG_INFO", "abi.LogInfo", tI32, abi.LogInfo),
			num("LOG_WARN", "abi.LogWarn", tI32, abi.LogWarn),
			num("LOG_ERROR", "abi.LogError", tI32, abi.LogError),
			num("MAX_LOG_LINE", "abi.MaxLogLine", tSize, abi.MaxLogLine),
		}},
		{"The largest state key and value the host accepts, in bytes.", []constant{
			num("MAX_STATE_KEY", "abi.MaxStateKey", tSize, abi.MaxStateKey),
			num("MAX_STATE_VALUE", "abi.MaxStateValue", tSize, abi.MaxStateValue),
		}},
		{"Framing (ABI.md §5, §12): the length that marks an absent key, value or accumulator, and the largest count a batch or aggregate frame may declare.", []constant{
			num("ABSENT", "abi.Absent", tU32, abi.Absent),
			num("MAX_BATCH_RECORDS", "abi.MaxBatchRecords", tU32, abi.MaxBatchRecords),
			num("MAX_AGG_COUNT", "abi.MaxAggCount", tU32, abi.MaxAggCount),
		}},
		{"The kinds of an output frame's entries (ABI.md §5.2).", []constant{
			num("ENTRY_KEEP", "abi.KindKeep", tU8, abi.KindKeep),
			num("ENTRY_RECORD", "abi.KindRecord", tU8, abi.KindRecord),
			num("ENTRY_ERROR", "abi.KindError", tU8, abi.KindError),
		}},
		{"The flags of a record entry: the fields it sets (ABI.md §5.2).", []constant{
			num("FLAG_KEY", "abi.FlagKey", tU8, abi.FlagKey),
			num("FLAG_TIMESTAMP", "abi.FlagTimestamp", tU8, abi.FlagTimestamp),
			num("FLAG_HEADERS", "abi.FlagHeaders", tU8, abi.FlagHeaders),
		}},
		{"The statuses of a value output frame's entries (ABI.md §12.4).", []constant{
			num("AGG_OK", "abi.AggOK", tU8, abi.AggOK),
			num("AGG_ERROR", "abi.AggError", tU8, abi.AggError),
		}},
		{"The flags byte of an accumulator's context in a weir_agg_result_ctx frame (ABI.md §12.5): the group is a window's.", []constant{
			num("AGG_CONTEXT_WINDOWED", "abi.AggContextWindowed", tU8, abi.AggContextWindowed),
		}},
		{"The bits of the weir_ops export's answer, one per operation (ABI.md §4.1).", []constant{
			num("OP_MAP", "abi.OpMap.Bit()", tU32, abi.OpMap.Bit()),
			num("OP_FLAT_MAP", "abi.OpFlatMap.Bit()", tU32, abi.OpFlatMap.Bit()),
			num("OP_FILTER", "abi.OpFilter.Bit()", tU32, abi.OpFilter.Bit()),
			num("OP_AGGREGATE", "abi.OpAggregate.Bit()", tU32, abi.OpAggregate.Bit()),
		}},
		{"The exports of the typed-field convention (ABI.md §14): the field declaration, whose presence selects the convention, and the typed batch exports the host then calls instead of the raw ones.", []constant{
			str("EXPORT_FIELDS", "abi.ExportFields", abi.ExportFields),
			str("EXPORT_TYPED_MAP", "abi.ExportTypedMap", abi.ExportTypedMap),
			str("EXPORT_TYPED_FLAT_MAP", "abi.ExportTypedFlatMap", abi.ExportTypedFlatMap),
			str("EXPORT_TYPED_FILTER", "abi.ExportTypedFilter", abi.ExportTypedFilter),
			str("EXPORT_TYPED_AGG_ADD", "abi.ExportTypedAggAdd", abi.ExportTypedAggAdd),
		}},
		{"The typed convention's version and limits (ABI.md §14): the most fields a declaration holds, the longest field path in bytes, the most operations of a patch, and the alignment of a typed batch frame's column regions.", []constant{
			num("TYPED_VERSION", "abi.TypedVersion", tU32, abi.TypedVersion),
			num("MAX_TYPED_FIELDS", "abi.MaxTypedFields", tU32, abi.MaxTypedFields),
			num("MAX_FIELD_PATH", "abi.MaxFieldPath", tSize, abi.MaxFieldPath),
			num("MAX_PATCH_OPS", "abi.MaxPatchOps", tU32, abi.MaxPatchOps),
			num("TYPED_ALIGN", "abi.TypedAlign", tSize, abi.TypedAlign),
		}},
		{"Field paths (ABI.md §14.1): the byte between segments, and the escape byte.", []constant{
			num("PATH_SEPARATOR", "abi.PathSeparator", tChar, abi.PathSeparator),
			num("PATH_ESCAPE", "abi.PathEscape", tChar, abi.PathEscape),
		}},
		{"The field types (ABI.md §14.2); TYPE_NULL is only the type of a patch value.", []constant{
			num("TYPE_NULL", "abi.TypeNull", tU8, abi.TypeNull),
			num("TYPE_INT", "abi.TypeInt", tU8, abi.TypeInt),
			num("TYPE_FLOAT", "abi.TypeFloat", tU8, abi.TypeFloat),
			num("TYPE_BOOL", "abi.TypeBool", tU8, abi.TypeBool),
			num("TYPE_STRING", "abi.TypeString", tU8, abi.TypeString),
			num("TYPE_RAW", "abi.TypeRaw", tU8, abi.TypeRaw),
		}},
		{"A declared field's flags (ABI.md §14.2): dead-letter a record whose field is missing or null, or of another type.", []constant{
			num("FIELD_REQUIRED", "abi.FieldRequired", tU8, abi.FieldRequired),
			num("FIELD_STRICT", "abi.FieldStrict", tU8, abi.FieldStrict),
		}},
		{"The status byte of a value in a typed batch column (ABI.md §14.3).", []constant{
			num("VALUE_PRESENT", "abi.ValuePresent", tU8, abi.ValuePresent),
			num("VALUE_NULL", "abi.ValueNull", tU8, abi.ValueNull),
			num("VALUE_MISSING", "abi.ValueMissing", tU8, abi.ValueMissing),
			num("VALUE_MISMATCH", "abi.ValueMismatch", tU8, abi.ValueMismatch),
		}},
		{"The layout of a typed batch frame (ABI.md §14.3): the size of its counts and of a column table entry, and the columns of the timestamps, the keys and declared field 0.", []constant{
			num("TYPED_HEADER_SIZE", "abi.TypedHeaderSize", tSize, abi.TypedHeaderSize),
			num("TYPED_COLUMN_SIZE", "abi.TypedColumnSize", tSize, abi.TypedColumnSize),
			num("TYPED_TIMESTAMP_COLUMN", "abi.TypedTimestampColumn", tU32, abi.TypedTimestampColumn),
			num("TYPED_KEY_COLUMN", "abi.TypedKeyColumn", tU32, abi.TypedKeyColumn),
			num("TYPED_FIRST_FIELD_COLUMN", "abi.TypedFirstFieldColumn", tU32, abi.TypedFirstFieldColumn),
		}},
		{"Typed output (ABI.md §14.4): the kind of a patch entry, the flags of a patch, and the kinds of its operations.", []constant{
			num("ENTRY_PATCH", "abi.KindPatch", tU8, abi.KindPatch),
			num("PATCH_FLAG_NEW", "abi.PatchFlagNew", tU8, abi.PatchFlagNew),
			num("PATCH_FLAG_KEY", "abi.PatchFlagKey", tU8, abi.PatchFlagKey),
			num("PATCH_FLAG_TIMESTAMP", "abi.PatchFlagTimestamp", tU8, abi.PatchFlagTimestamp),
			num("PATCH_OP_SET", "abi.PatchOpSet", tU8, abi.PatchOpSet),
			num("PATCH_OP_REMOVE", "abi.PatchOpRemove", tU8, abi.PatchOpRemove),
		}},
		{"The state slot convention (ABI.md §6, abi/state.go): the first byte of a slot key of each kind of state, the length of a list element's big-endian index suffix, and the length of a stored number.", []constant{
			num("STATE_KIND_VALUE", "abi.ValueStateKind", tChar, abi.ValueStateKind),
			num("STATE_KIND_MAP", "abi.MapStateKind", tChar, abi.MapStateKind),
			num("STATE_KIND_LIST", "abi.ListStateKind", tChar, abi.ListStateKind),
			num("STATE_LIST_INDEX_SIZE", "abi.StateListIndexSize", tSize, abi.StateListIndexSize),
			num("STATE_NUMBER_SIZE", "abi.StateNumberSize", tSize, abi.StateNumberSize),
		}},
	}
}

// exportKey is the short name of an export constant that the Rust
// export-name macro takes: EXPORT_FLAT_MAP is flat_map.
func exportKey(c constant) (string, bool) {
	k, ok := strings.CutPrefix(c.name, "EXPORT_")
	return strings.ToLower(k), ok
}

// pkind is the kind of a host function's parameter.
type pkind int

const (
	pI32    pkind = iota // a signed number (the log level)
	pIndex               // a record index, unsigned
	pPtr                 // a pointer to bytes the host reads
	pMutPtr              // a pointer to bytes the host writes
	pLen                 // a length or capacity
)

type param struct {
	name string
	kind pkind
}

// hostFunc is a host function of module abi.ImportModule, with its
// signature from ABI.md §6 and the names the SDKs give it.
type hostFunc struct {
	name     string // the import name, from package abi
	rustName string
	asName   string
	params   []param
	status   bool // returns an i32 status; otherwise nothing
}

var hostFuncs = []hostFunc{
	{abi.ImportLog, "host_log", "hostLog", []param{{"level", pI32}, {"ptr", pPtr}, {"len", pLen}}, false},
	{abi.ImportStateGet, "host_state_get", "hostStateGet", []param{{"index", pIndex}, {"kptr", pPtr}, {"klen", pLen}, {"vptr", pMutPtr}, {"vcap", pLen}}, true},
	{abi.ImportStatePut, "host_state_put", "hostStatePut", []param{{"index", pIndex}, {"kptr", pPtr}, {"klen", pLen}, {"vptr", pPtr}, {"vlen", pLen}}, true},
	{abi.ImportStateDelete, "host_state_delete", "hostStateDelete", []param{{"index", pIndex}, {"kptr", pPtr}, {"klen", pLen}}, true},
}

// hostModule is the module the host functions are imported from.
func hostModule() string { return abi.ImportModule }
