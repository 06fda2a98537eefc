package operator

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/kafka"
	"github.com/weir-stream/weir/state"
)

// Kind is one row of the operator table: how to load an operator of the
// kind from its validated config. Config rules are checked once, when the
// pipeline file loads: by the config package for its built-in types' fields,
// by Schema for a kind's own settings and rules. Load may refuse
// settings only the kind can judge (a query a database rejects), and its
// error is then a load error.
type Kind struct {
	// Schema decodes the fields of a kind the config package does not
	// know into config.Operator.Settings, and may check any kind's rules
	// when the pipeline file loads (config.Schema).
	Schema config.Schema
	Load   func(ctx context.Context, op *config.Operator, env Env) (Operator, error)
	// Describe says what one of the kind's stored entries is, for the
	// state tools, from its record key, user key and value; false when
	// the entry follows none of the kind's layouts. Nil for kinds that
	// keep no state.
	Describe func(recordKey, userKey, value []byte) (KeyEntry, bool)
}

// KeyEntry is what an operator kind says one of its stored entries is,
// as the state tools show it. It is a plain value that does not alias the
// entry.
type KeyEntry struct {
	// Kind names the layout: "value", "map" or "list" (a plugin's state,
	// by the slot convention of package abi), "pane", "session", "count"
	// or "window" (a window operator's), "rolling" or "rolling_row",
	// "join_left", "join_right" and their "_matched" marks, "dedupe".
	Kind string
	// Text says what the entry is, for people: `value "count"`,
	// `pane start 2024-03-17T09:20:00Z`.
	Text string
	// Attrs are the entry's decoded parts for JSON output (weir state
	// inspect --json, the admin API's state query), besides its kind and
	// value: start, end, name, map_key... JSON values, none aliasing the
	// entry.
	Attrs map[string]any
	// NilKey marks window and rolling entries of records without a key.
	NilKey bool
}

// MsTime formats ms since the Unix epoch as RFC 3339 in UTC, as KeyEntry
// texts write event times.
func MsTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

// Operator is one operator of a loaded pipeline, from Load to Close. Step
// is called once per run, by one goroutine; KeyedState and Close may be
// called from any goroutine, Close once the runs are over.
type Operator interface {
	// Step returns the operator's engine step for one run.
	Step(ctx context.Context, run Run) (engine.Step, error)
	// KeyedState reports whether the operator keeps keyed state now. A
	// plugin operator's answer follows its live version.
	KeyedState() bool
	// Close releases what Load acquired.
	Close(ctx context.Context) error
}

// Env is what a kind may use to load one operator: the pipeline's shared
// parts, passed explicitly. It is a plain value, copied per operator.
type Env struct {
	Pipeline string // the pipeline's name, for logs and results
	Index    int    // the operator's position in the pipeline
	Store    state.Store
	Logger   *slog.Logger
	// ProcessingTime is set when no source says where event time comes
	// from: windows then assign records by when they are processed.
	ProcessingTime bool
	Parallelism    int // operator instances per step, at least 1
	Plugins        *Plugins
	Metrics        Metrics
	// Counts returns the operator's counts in the current run, with the
	// run's identity (nil before the first run): probation compares a
	// plugin version's failures with the operator's before it.
	Counts func() (run any, in, dead int64)
}

// Run is what one run tells an operator's Step.
type Run struct {
	Kafka kafka.ClientConfig // the run's Kafka client; zero when it uses none
	// Unkeyed is set when the operator's records are not routed to
	// workers by key (parallelism above 1, no key_by before it, no keyed
	// operator beside it).
	Unkeyed bool
	// ScaledOut is set when the run reads Kafka and started without keyed
	// state: its instances may share their consumer group.
	ScaledOut bool
	// Defer registers a function called when the run ends.
	Defer func(func())
}

// Metrics receive what plugin operators measure. Implementations are safe
// for concurrent use.
type Metrics interface {
	// PluginSwapped records one operator instance's plugin swap pause.
	PluginSwapped(time.Duration)
	// PluginCall returns the call-time hook of an operator's plugin.
	PluginCall(operator string) func(time.Duration)
	// PluginLimit returns the sandbox-bound hook of an operator's plugin.
	PluginLimit(operator string) func(string)
}

// At prefixes err with the operator's position in the pipeline file.
func At(op *config.Operator, err error) error {
	return fmt.Errorf("%s: %s: %w", op.Pos, op.Where, err)
}

// AtPlugin is PluginAt(op, "plugin", err).
func AtPlugin(op *config.Operator, err error) error { return PluginAt(op, "plugin", err) }

// PluginAt marks err as a plugin's failure to build, compile, validate,
// initialise or instantiate, positioned at op's field (plugin, shadow).
func PluginAt(op *config.Operator, field string, err error) error {
	return &PluginError{Pos: op.At(field).String(), Path: op.FieldPath(field), Err: err}
}

// PluginError is a plugin's failure, at the position of the field that
// names it.
type PluginError struct {
	Pos, Path string
	Err       error
}

func (e *PluginError) Error() string { return fmt.Sprintf("%s: %s: %v", e.Pos, e.Path, e.Err) }
func (e *PluginError) Unwrap() error { return e.Err }

// Fixed is an Operator whose step is the same every run and needs nothing
// from it: most native kinds.
type Fixed struct {
	S     engine.Step
	Keyed bool
}

// Step implements Operator.
func (f Fixed) Step(context.Context, Run) (engine.Step, error) { return f.S, nil }

// KeyedState implements Operator.
func (f Fixed) KeyedState() bool { return f.Keyed }

// Close implements Operator.
func (Fixed) Close(context.Context) error { return nil }

// TryStep makes one instance of st and closes it, so that settings only
// the operator can judge (a query the database rejects) are a load error,
// not a failure of the first run.
func TryStep(ctx context.Context, st engine.Step) error {
	o, err := st.New(ctx)
	if err != nil {
		return err
	}
	return o.Close(ctx)
}
