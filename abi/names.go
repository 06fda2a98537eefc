package abi

import (
	"strconv"
	"strings"
)

// Version is the ABI version this package defines.
const Version = 1

// VersionExportPrefix is the prefix of the marker export that names the ABI
// version a module implements: a module implementing version N exports a
// function named VersionExportPrefix + N, taking and returning nothing.
const VersionExportPrefix = "weir_abi_v"

// Exports a guest module provides. ExportVersion and ExportAlloc and
// ExportInit are required of every module; an operator additionally requires
// the export for its kind (ExportMap, ExportFlatMap or ExportFilter, or all
// four AggregateExports for an aggregate operator). ExportGC and ExportOps
// are optional.
const (
	// ExportVersion is the version marker: () -> ().
	ExportVersion = "weir_abi_v1"
	// ExportAlloc is the module's only allocator: (size u32) -> (ptr u32).
	// It returns a guest-owned region of at least size bytes that the host
	// writes call input into. The region stays valid until the next
	// ExportAlloc call; the host reuses it for every call until it needs a
	// bigger one. A return of 0 means the guest could not allocate.
	ExportAlloc = "weir_alloc"
	// ExportInit receives the operator's config: (ptr u32, len u32) -> (u64).
	// The result packs a message (see Pack); length 0 means success, anything
	// else is the UTF-8 error text and the module is rejected.
	ExportInit = "weir_init"
	// ExportMap, ExportFlatMap and ExportFilter each take one batch:
	// (ptr u32, len u32) -> (u64), the result packing the output frame.
	ExportMap     = "weir_map"
	ExportFlatMap = "weir_flat_map"
	ExportFilter  = "weir_filter"
	// ExportGC is an optional hook, () -> (), that the host calls at least
	// once every GCEveryCalls batch calls, between batches. Guests whose
	// runtime needs a scheduling point to collect garbage (Go's wasip1 port)
	// use it.
	ExportGC = "weir_gc"
	// ExportOps is optional: () -> (i32), the OpSet of the operations the
	// module registered. It is for modules whose exports do not say what
	// they implement, such as a Go SDK module, which exports every batch
	// export and dispatches to the functions the plugin registered. The
	// host calls it once, at load, after ExportInit succeeds, and refuses
	// the module for an operator whose operation is not in the set. A
	// module without it is judged by its exports alone.
	ExportOps = "weir_ops"
	// ExportInitialize is the WASI reactor initialiser. The host runs it
	// first when a module exports it.
	ExportInitialize = "_initialize"
)

// The exports of the aggregate operation (see aggregate.go for their
// frames). A module implements aggregate when it exports all four; it may
// implement map, flat_map or filter as well, or none of them.
const (
	// ExportAggCreate returns a fresh accumulator: () -> (u64), the result
	// packing the accumulator's bytes. It must be pure: the host calls it
	// once per worker and copies its bytes for every new group.
	ExportAggCreate = "weir_agg_create"
	// ExportAggAdd folds records into accumulators: (ptr u32, len u32) ->
	// (u64), taking an add frame and returning an add output frame.
	ExportAggAdd = "weir_agg_add"
	// ExportAggMerge merges pairs of accumulators: (ptr u32, len u32) ->
	// (u64), taking a merge frame and returning a value output frame.
	ExportAggMerge = "weir_agg_merge"
	// ExportAggResult turns accumulators into result values: (ptr u32,
	// len u32) -> (u64), taking a result frame and returning a value output
	// frame.
	ExportAggResult = "weir_agg_result"
	// ExportAggResultCtx is optional: it turns accumulators into result
	// values, each given its group's context (AggContext: the key and the
	// window): (ptr u32, len u32) -> (u64), taking a result context frame
	// and returning a value output frame. A host that knows it calls it
	// instead of ExportAggResult when the module exports it; a module
	// exports ExportAggResult too, for hosts that predate it.
	ExportAggResultCtx = "weir_agg_result_ctx"
)

// AggregateExports lists the exports the aggregate operation requires, in
// the order of its lifecycle. ExportAggResultCtx, optional, is not among
// them.
var AggregateExports = [...]string{ExportAggCreate, ExportAggAdd, ExportAggMerge, ExportAggResult}

// GCEveryCalls is the largest number of batch calls the host makes between
// two ExportGC calls.
const GCEveryCalls = 32

// ImportModule is the module name of the host functions weir provides.
const ImportModule = "weir_v1"

// Host functions in ImportModule. Pointers and lengths are u32 offsets into
// the guest's memory 0.
const (
	// ImportLog writes a log line: (level i32, ptr u32, len u32) -> ().
	// Lines longer than MaxLogLine bytes are truncated, and the host drops
	// lines beyond its rate limit, counting them.
	ImportLog = "log"
	// ImportStateGet reads keyed state:
	// (index u32, kptr u32, klen u32, vptr u32, vcap u32) -> (i32).
	// index is the position in the current batch of the record whose key
	// scopes the state. The result is StatusNotFound, another negative
	// status, or the value's full length; min(length, vcap) bytes are copied
	// to vptr, so a result larger than vcap means "grow and call again".
	ImportStateGet = "state_get"
	// ImportStatePut writes keyed state:
	// (index u32, kptr u32, klen u32, vptr u32, vlen u32) -> (i32 status).
	ImportStatePut = "state_put"
	// ImportStateDelete deletes keyed state:
	// (index u32, kptr u32, klen u32) -> (i32 status).
	ImportStateDelete = "state_delete"
)

// Log levels for ImportLog.
const (
	LogDebug int32 = 0
	LogInfo  int32 = 1
	LogWarn  int32 = 2
	LogError int32 = 3
)

// MaxLogLine is the longest log line the host keeps, in bytes.
const MaxLogLine = 4096

// Status codes returned by host functions. Zero or positive means success.
const (
	StatusOK        int32 = 0
	StatusNotFound  int32 = -1 // state_get: no value under this key
	StatusNoContext int32 = -2 // state call outside a batch call (in init)
	StatusBadIndex  int32 = -3 // index is not a record of the current batch
	StatusTooLarge  int32 = -4 // key or value over the host's size limit
	StatusBadMemory int32 = -5 // a pointer/length pair is outside guest memory
)

// StatusText describes a host function status code.
func StatusText(s int32) string {
	switch {
	case s >= 0:
		return "ok"
	case s == StatusNotFound:
		return "not found"
	case s == StatusNoContext:
		return "no record context (state is only available during a batch call)"
	case s == StatusBadIndex:
		return "record index out of range for the current batch"
	case s == StatusTooLarge:
		return "key or value too large"
	case s == StatusBadMemory:
		return "pointer or length outside guest memory"
	}
	return "unknown status " + strconv.Itoa(int(s))
}

// Limits on state keys and values, in bytes.
const (
	MaxStateKey   = 64 << 10
	MaxStateValue = 16 << 20
)

// Op is the kind of a batch call.
type Op uint8

const (
	OpMap Op = iota + 1
	OpFlatMap
	OpFilter
	// OpAggregate is the aggregate operation. It is not a batch operation
	// and not in Ops: its calls take the frames of aggregate.go, not batch
	// and output frames, and CheckOrder does not apply to it. Its Export is
	// ExportAggAdd, the call that carries records; the operation needs all
	// of AggregateExports.
	OpAggregate
)

// String returns the operator name used in pipeline config.
func (o Op) String() string {
	switch o {
	case OpMap:
		return "map"
	case OpFlatMap:
		return "flat_map"
	case OpFilter:
		return "filter"
	case OpAggregate:
		return "aggregate"
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// Export returns the name of the guest export implementing o.
func (o Op) Export() string {
	switch o {
	case OpMap:
		return ExportMap
	case OpFlatMap:
		return ExportFlatMap
	case OpFilter:
		return ExportFilter
	case OpAggregate:
		return ExportAggAdd
	}
	return ""
}

// Ops lists every batch operation, in a stable order. OpAggregate is not a
// batch operation and is not listed.
var Ops = [...]Op{OpMap, OpFlatMap, OpFilter}

// OpSet is a set of operations, as ExportOps reports it: bit o-1 for each
// Op o, so 1 map, 2 flat_map, 4 filter and 8 aggregate. The other bits are
// reserved for operations of later ABI revisions; a host ignores the bits
// it does not know.
type OpSet uint32

// Bit returns the OpSet holding only o, or 0 when o is not an operation.
func (o Op) Bit() OpSet {
	if o < OpMap || o > OpAggregate {
		return 0
	}
	return 1 << (o - 1)
}

// OpSetOf returns the OpSet holding ops.
func OpSetOf(ops ...Op) OpSet {
	var s OpSet
	for _, op := range ops {
		s |= op.Bit()
	}
	return s
}

// Has reports whether s holds the operation op.
func (s OpSet) Has(op Op) bool { return op.Bit() != 0 && s&op.Bit() != 0 }

// Ops returns the operations s holds, in the order of their bits
// (OpAggregate last); reserved bits are left out.
func (s OpSet) Ops() []Op {
	var ops []Op
	for op := OpMap; op <= OpAggregate; op++ {
		if s.Has(op) {
			ops = append(ops, op)
		}
	}
	return ops
}

// String lists the operations s holds, "map,filter", or "none".
func (s OpSet) String() string {
	ops := s.Ops()
	if len(ops) == 0 {
		return "none"
	}
	names := make([]string, len(ops))
	for i, op := range ops {
		names[i] = op.String()
	}
	return strings.Join(names, ",")
}

// ParseVersionExport reports whether name is a version marker export and,
// if so, the version it declares.
func ParseVersionExport(name string) (version int, ok bool) {
	rest, found := strings.CutPrefix(name, VersionExportPrefix)
	if !found || rest == "" {
		return 0, false
	}
	v, err := strconv.Atoi(rest)
	if err != nil || v <= 0 || strconv.Itoa(v) != rest {
		return 0, false
	}
	return v, true
}

// Pack packs a guest pointer and length into the u64 a call returns: the
// pointer in the high 32 bits, the length in the low 32 bits.
func Pack(ptr, length uint32) uint64 { return uint64(ptr)<<32 | uint64(length) }

// Unpack is the inverse of Pack.
func Unpack(v uint64) (ptr, length uint32) { return uint32(v >> 32), uint32(v) }
