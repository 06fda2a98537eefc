package wasm

import (
	"cmp"
	"context"
	"crypto/rand"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/fields"
	"github.com/weir-stream/weir/state"
)

// DefaultMemoryLimitPages is the per-instance memory limit used when
// PluginConfig.MemoryLimitPages is 0: 1024 pages of 64 KiB, 64 MiB.
const DefaultMemoryLimitPages = 1024

// maxMemoryLimitPages is the most a 32-bit Wasm memory can have: 4 GiB.
const maxMemoryLimitPages = 65536

// PluginConfig describes one operator's plugin.
type PluginConfig struct {
	// Operator is the operator's name from the pipeline. It is in every
	// error, log line and dead letter about the plugin, and scopes its
	// state. Required.
	Operator string
	// Path says where the module came from, for errors. Optional.
	Path string
	// Wasm is the module's binary.
	Wasm []byte
	// Op is the batch operation the operator calls.
	Op abi.Op
	// InitConfig is the operator's config, passed to weir_init (JSON by
	// convention; the host does not look inside).
	InitConfig []byte
	// MemoryLimitPages limits each instance's memory, in 64 KiB pages.
	// 0 means DefaultMemoryLimitPages.
	MemoryLimitPages uint32
	// Timeout bounds each guest call: _initialize and weir_init (so Load
	// and every instance made after a trap), each batch, each record of a
	// failed batch run again alone, each aggregate call. A call that runs
	// over is interrupted and handled as a trap: its record goes to the
	// dead letters with "deadline exceeded after …". 0 means
	// DefaultTimeout; NoTimeout means none.
	Timeout time.Duration
	// Limits bound what one call can make the host hold; zero fields
	// take the defaults of DefaultLimits.
	Limits Limits
	// Store keeps the operator's state. Nil means a private in-memory store
	// shared by the plugin's workers.
	Store state.Store
	// Logger receives the plugin's log lines and the guest's output. Nil
	// means the Runtime's logger. Every line carries the operator.
	Logger *slog.Logger
	// StateTTL, when positive, expires the operator's state values that
	// were not written for this long (see ttl.go); it must be a whole
	// number of milliseconds. StateTTLEventTime measures it in event time
	// instead of processing time. Clock is the wall clock for processing
	// time; nil means time.Now.
	StateTTL          time.Duration
	StateTTLEventTime bool
	Clock             func() time.Time
	// ObserveCall, if set, is called after every guest batch call with its
	// duration, on the worker's goroutine (metrics).
	ObserveCall func(time.Duration)
	// ObserveLimit, if set, is called on the worker's goroutine each time
	// a call hits one of the sandbox's bounds, named by its config key:
	// timeout, memory_limit_pages, max_state_value, max_batch_state or
	// max_batch_output (metrics).
	ObserveLimit func(limit string)
}

// Limits bound what one guest call can make the host hold, beside the
// guest's own memory. A call over a limit has no effect (its outputs and
// state writes are discarded, as for a trap); its batch is run again a
// record at a time, and a record over the limit alone goes to the dead
// letters with a reason naming the limit.
type Limits struct {
	// StateValue bounds one state value, in bytes; at most (and by
	// default) abi.MaxStateValue.
	StateValue int
	// StateBytes bounds the state one call writes: the bytes of its keys
	// and values, a record's rewrite of a key replacing its earlier write.
	StateBytes int
	// OutputBytes bounds the output of one call: the bytes copied for its
	// records and dead letters plus, for each, the size of a record.
	OutputBytes int
}

// DefaultLimits are the Limits a plugin gets for the fields its config
// leaves zero.
var DefaultLimits = Limits{StateValue: abi.MaxStateValue, StateBytes: 32 << 20, OutputBytes: 32 << 20}

// Plugin is a compiled, validated module, ready to run as one operator. It
// is safe for concurrent use; each worker goroutine makes its own Worker
// with NewWorker.
type Plugin struct {
	rt       *Runtime
	eng      *engine
	cfg      PluginConfig // with defaults applied
	store    state.Store
	ttl      ttlConfig
	log      *slog.Logger
	compiled wazero.CompiledModule
	modCfg   wazero.ModuleConfig
	// decl is the module's field declaration when it exports
	// abi.ExportFields (the typed convention, typed.go), or nil. Load sets
	// it before the plugin is shared.
	decl *fields.Decl

	mu     sync.Mutex
	spare  *Worker // the worker Load instantiated to validate, until taken
	closed bool
}

// Load compiles and validates the module in cfg.Wasm, once. It checks that
// the bytes are Wasm, that the module speaks weir ABI v1 with every export
// the operator needs, correctly typed, and imports nothing weir does not
// provide; then it instantiates the module and runs its initialisation
// (_initialize, weir_init with cfg.InitConfig), so that a module that
// cannot start, or rejects its config, fails here; a module that reports
// the operations it registered (abi.ExportOps) fails here too when the
// operator's is not among them. A module exporting abi.ExportFields is
// asked for its field declaration, and fails here when it is invalid or
// when the module lacks the exports of the convention it selects (typed
// when it declares fields). That first instance becomes the first Worker
// NewWorker returns.
//
// Errors are *Error values naming the operator and path, wrapping
// ErrConfig, ErrInvalidModule (ErrABIVersion), ErrInstantiate or ErrInit.
func (r *Runtime) Load(ctx context.Context, cfg PluginConfig) (*Plugin, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	if msg := checkBinary(cfg.Wasm); msg != "" {
		return nil, cfg.errorf(ErrInvalidModule, nil, "%s", msg)
	}
	eng, err := r.engine(ctx)
	if err != nil {
		return nil, err
	}
	compiled, err := eng.compile(ctx, &cfg, !r.unmetered)
	if err != nil {
		return nil, err
	}
	s := shapeOf(compiled)
	if msg, kind := s.versionProblem(); msg != "" {
		compiled.Close(ctx)
		return nil, cfg.errorf(kind, nil, "%s", msg)
	}
	if msg := s.memoryProblem(cfg.MemoryLimitPages); msg != "" {
		compiled.Close(ctx)
		return nil, cfg.errorf(ErrInvalidModule, nil, "%s", msg)
	}
	if ps := s.problems(eng.provided, cfg.Op); len(ps) > 0 {
		compiled.Close(ctx)
		return nil, cfg.errorf(ErrInvalidModule, nil, "not a valid weir ABI v%d %s plugin: %s",
			abi.Version, cfg.Op, strings.Join(ps, "; "))
	}

	p := &Plugin{
		rt:       r,
		eng:      eng,
		cfg:      cfg,
		store:    cfg.Store,
		compiled: compiled,
		log:      cfg.Logger,
		// No start functions (Load runs _initialize itself), no
		// filesystem, no environment, no arguments but the operator name,
		// no sockets. Clocks and randomness are real.
		modCfg: wazero.NewModuleConfig().
			WithStartFunctions().
			WithArgs(cfg.Operator).
			WithSysWalltime().
			WithSysNanotime().
			WithRandSource(rand.Reader), // and each Worker's own sleep (sandbox.go)
	}
	if p.log == nil {
		p.log = r.log
	}
	p.log = p.log.With("operator", cfg.Operator)
	if p.store == nil {
		p.store = state.NewMemory()
	}
	p.ttl = ttlConfig{ttl: cfg.StateTTL.Milliseconds(), event: cfg.StateTTLEventTime, now: cfg.Clock}
	if p.ttl.now == nil {
		p.ttl.now = time.Now
	}
	w, err := p.newWorker(ctx, false)
	if err == nil {
		err = w.checkOps(ctx)
		if err == nil && s.fields {
			err = p.selectConvention(ctx, w, s)
		}
		if err != nil {
			w.Close(ctx)
		}
	}
	if err != nil {
		compiled.Close(ctx)
		return nil, err
	}
	p.spare = w
	return p, nil
}

// normalize checks cfg and applies defaults.
func (cfg *PluginConfig) normalize() error {
	switch {
	case cfg.Operator == "":
		return cfg.errorf(ErrConfig, nil, "no operator name")
	case cfg.Op.Export() == "":
		return cfg.errorf(ErrConfig, nil, "unknown operation %s", cfg.Op)
	case cfg.MemoryLimitPages > maxMemoryLimitPages:
		return cfg.errorf(ErrConfig, nil, "memory limit of %d pages is over the 4 GiB (%d pages) a Wasm memory can have",
			cfg.MemoryLimitPages, maxMemoryLimitPages)
	case cfg.Timeout < 0 && cfg.Timeout != NoTimeout:
		return cfg.errorf(ErrConfig, nil, "negative timeout %s", cfg.Timeout)
	case cfg.Limits.StateValue < 0 || cfg.Limits.StateValue > abi.MaxStateValue || cfg.Limits.StateBytes < 0 || cfg.Limits.OutputBytes < 0:
		return cfg.errorf(ErrConfig, nil, "limits out of range: %+v (state values at most %d bytes)", cfg.Limits, abi.MaxStateValue)
	case cfg.StateTTL < 0 || cfg.StateTTL%time.Millisecond != 0:
		return cfg.errorf(ErrConfig, nil, "state TTL %s is not a positive whole number of milliseconds", cfg.StateTTL)
	}
	if cfg.MemoryLimitPages == 0 {
		cfg.MemoryLimitPages = DefaultMemoryLimitPages
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	l := &cfg.Limits
	l.StateValue = cmp.Or(l.StateValue, DefaultLimits.StateValue)
	l.StateBytes = cmp.Or(l.StateBytes, DefaultLimits.StateBytes)
	l.OutputBytes = cmp.Or(l.OutputBytes, DefaultLimits.OutputBytes)
	return nil
}

// Operator returns the operator name the plugin was loaded for.
func (p *Plugin) Operator() string { return p.cfg.Operator }

// UsesState reports whether the module imports any of the keyed-state host
// functions, so that its operator keeps state per record key.
func (p *Plugin) UsesState() bool {
	for _, d := range p.compiled.ImportedFunctions() {
		mod, name, _ := d.Import()
		if mod == abi.ImportModule && (name == abi.ImportStateGet || name == abi.ImportStatePut || name == abi.ImportStateDelete) {
			return true
		}
	}
	return false
}

// NewWorker returns a Worker with its own instance of the module, fully
// initialised. The first call returns the instance Load made.
func (p *Plugin) NewWorker(ctx context.Context) (*Worker, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, p.cfg.errorf(ErrClosed, nil, "plugin closed")
	}
	if w := p.spare; w != nil {
		p.spare = nil
		p.mu.Unlock()
		return w, nil
	}
	p.mu.Unlock()
	return p.newWorker(ctx, p.decl != nil)
}

// Close releases the compiled module. Workers still open keep working
// until closed, as wazero allows; close them first.
func (p *Plugin) Close(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if p.spare != nil {
		p.spare.Close(ctx)
		p.spare = nil
	}
	return p.compiled.Close(ctx)
}
