package window

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// Kind is the shape of the windows an Operator assigns records to. The zero
// Kind is not a kind: Config.Kind must be set.
type Kind uint8

// The window kinds.
const (
	// Tumbling windows are [k·Size, (k+1)·Size): fixed, aligned to the Unix
	// epoch, not overlapping.
	Tumbling Kind = iota + 1
	// Sliding (hopping) windows are [k·Slide - Size, k·Slide): Size long,
	// one starting every Slide.
	Sliding
	// Session windows group a key's records whose event times lie less than
	// Gap apart (see the package documentation for the exact rule).
	Session
	// Count windows hold Count records of one key, in arrival order.
	Count
	// Cumulate windows, as Flink SQL's CUMULATE, grow by Slide (the step)
	// from the start of each Size-long period: [p, p+Slide), [p, p+2·Slide),
	// … [p, p+Size).
	Cumulate
)

var kindNames = [...]string{"", "tumbling", "sliding", "session", "count", "cumulate"}

// String returns the kind's lower-case name, such as "sliding".
func (k Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// EmitMode says when an Operator emits a window's result.
type EmitMode uint8

// The emit modes.
const (
	// OnClose emits each window once, when the watermark closes it (count
	// windows: on their last record), and again for each update within the
	// allowed lateness.
	OnClose EmitMode = iota
	// Every emits, besides OnClose's results, early results: every
	// Config.EmitInterval of processing time, the current result of each
	// open window changed since the last early result, as Flink's
	// ContinuousProcessingTimeTrigger.
	Every
	// OnUpdate emits a window's current result after each Process call that
	// changed it, and nothing when it closes: the last result emitted is
	// the final one.
	OnUpdate
)

// String returns the mode's name: "on_close", "every" or "on_update".
func (m EmitMode) String() string {
	switch m {
	case OnClose:
		return "on_close"
	case Every:
		return "every"
	case OnUpdate:
		return "on_update"
	}
	return fmt.Sprintf("emit(%d)", uint8(m))
}

// Func is a built-in aggregate function. The zero Func is not a function.
type Func uint8

// The built-in aggregate functions.
const (
	// AggSum adds a numeric field.
	AggSum Func = iota + 1
	// AggCount counts records; with a Field, the records where the field is
	// present and not null.
	AggCount
	// AggAvg is the mean of a numeric field, always a float.
	AggAvg
	// AggMin is the smallest value of a numeric field.
	AggMin
	// AggMax is the largest value of a numeric field.
	AggMax
	// AggFirst is the field's value in the record with the earliest event time
	// (the first to arrive among equal times); with no Field, the whole
	// record value.
	AggFirst
	// AggLast is the field's value in the record with the latest event time
	// (the last to arrive among equal times); with no Field, the whole
	// record value.
	AggLast
	// AggCountDistinct counts the field's distinct values, exactly up to
	// Aggregate.Exact of them, then approximately with a HyperLogLog.
	AggCountDistinct
	// AggCustom is Config.Custom's result, written as a JSON value (as it
	// is; null when absent) among the built-in aggregates: it combines a
	// user aggregate with built-in ones. It takes no Field, and at most
	// one Aggregate has it.
	AggCustom
)

var funcNames = [...]string{"", "sum", "count", "avg", "min", "max", "first", "last", "count_distinct", "custom"}

// String returns the function's lower-case name, such as "count_distinct".
func (f Func) String() string {
	if int(f) < len(funcNames) && f != 0 {
		return funcNames[f]
	}
	return fmt.Sprintf("func(%d)", uint8(f))
}

// Aggregate is one built-in aggregate computed per window.
type Aggregate struct {
	Func Func
	// Field is the JSON path of the aggregated field in the record value:
	// {"a","b"} is field b of field a. AggCount, AggFirst and AggLast may leave it
	// empty; the other functions need it.
	Field []string
	// As names the aggregate's field in the output object.
	As string
	// Exact is, for AggCountDistinct, how many distinct values are counted
	// exactly before switching to the HyperLogLog estimate; 0 means
	// DefaultExact. Other functions must leave it 0.
	Exact int
}

// DefaultExact is the number of distinct values AggCountDistinct counts
// exactly when Aggregate.Exact is 0; MaxExact is the largest Exact allowed.
const (
	DefaultExact = 1024
	MaxExact     = 1 << 16
)

// ResultContext is what Aggregator.Result is told of the group whose
// result is due: Key, its record key (nil for the records without a key,
// valid during the call only), and its window, Windowed, [Start, End) in
// milliseconds since the Unix epoch: the bounds the operator writes as
// window_start and window_end (Start and End are 0 when not Windowed).
// It is the context a plugin aggregate's weir_agg_result_ctx gets (ABI.md
// §12.5), and a plain value.
type ResultContext = abi.AggContext

// Aggregator is a user-defined aggregate, as Flink's AggregateFunction:
// accumulators are opaque bytes that the operator stores and hands back.
//
// The operator owns the slices the methods return: they must not alias
// memory the Aggregator reuses. Add and Merge may modify and return their
// first argument; Merge must not modify b, and Result must not modify acc
// (a window's accumulator can be merged or read several times). An
// Aggregator is called by the operator's goroutine only.
type Aggregator interface {
	// Create returns an empty accumulator.
	Create() []byte
	// Add adds a record. An error rejects the record (it goes to the
	// dead-letter output) and must leave acc as it was.
	Add(acc []byte, rec *record.Record) ([]byte, error)
	// Merge returns the accumulator of the union of a's and b's records.
	Merge(a, b []byte) ([]byte, error)
	// Result returns the value of the window's output record, or with an
	// AggCustom aggregate, the JSON value of its field (nil for null). c
	// is the window's: its key and bounds.
	Result(acc []byte, c ResultContext) ([]byte, error)
}

// BatchAggregator is an Aggregator that adds many records in one call. A
// tumbling, sliding or cumulate window whose Custom aggregator implements
// it (and that keeps every key in memory: MaxKeysInMemory 0) adds the
// records of each Process call through one AddBatch call, one group per
// (key, pane), rather than one Add per record.
type BatchAggregator interface {
	Aggregator
	// AddBatch adds, for each group, its Records in order to its Acc, as
	// Add would one after the other, and sets Acc to the new accumulator
	// (Acc may be modified and reused, as Add's first argument). A record
	// it rejects gets its reason in Errs, which is as long as Records and
	// nil on entry, and must leave the accumulator as if it had not been
	// added. An error rejects every record of the call, as Add's error
	// rejects its record: it must then leave every Acc as it was.
	AddBatch(groups []AddGroup) error
}

// AddGroup is a group of records of a BatchAggregator.AddBatch call.
type AddGroup struct {
	Acc []byte
	// Records are only read, during the call.
	Records []record.Record
	Errs    []error
}

// TimeFormat is how window_start and window_end are written.
type TimeFormat uint8

// The time formats.
const (
	// SQL writes a UTC JSON string "yyyy-MM-dd HH:mm:ss" with the
	// milliseconds as a fraction only when not zero (".5", ".25", ".125"),
	// as Flink SQL's JSON format writes a TIMESTAMP(3).
	SQL TimeFormat = iota
	// EpochMillis writes an integer: milliseconds since the Unix epoch.
	EpochMillis
	// RFC3339 writes a UTC JSON string such as "2024-03-17T09:20:00Z", with
	// the milliseconds as a fraction when not zero.
	RFC3339
)

// String returns the format's name: "sql", "epoch_millis" or "rfc3339".
func (f TimeFormat) String() string {
	switch f {
	case SQL:
		return "sql"
	case EpochMillis:
		return "epoch_millis"
	case RFC3339:
		return "rfc3339"
	}
	return fmt.Sprintf("time_format(%d)", uint8(f))
}

// Config configures an Operator. Durations are event time and must be
// whole milliseconds, except EmitInterval, which is processing time.
type Config struct {
	// Name names the operator: its state namespace and the Stage of its
	// dead letters.
	Name string
	Kind Kind
	// Size is the length of tumbling and sliding windows, and the largest
	// cumulate window.
	Size time.Duration
	// Slide is the hop of sliding windows and the step of cumulate windows.
	Slide time.Duration
	// Gap is the session gap.
	Gap time.Duration
	// Count is the number of records in a count window.
	Count int64
	// AllowedLateness keeps windows open for updates this long after the
	// watermark closed them (time windows and sessions only).
	AllowedLateness time.Duration
	Emit            EmitMode
	// EmitInterval is the processing time between early results, for Emit
	// Every.
	EmitInterval time.Duration
	// Aggregates are the aggregates, output in this order. At least one of
	// Aggregates and Custom is set.
	Aggregates []Aggregate
	// Custom is a user aggregate. Without Aggregates its Result is the
	// output record value; with them, one of them must be AggCustom, the
	// field its Result is written as.
	Custom Aggregator
	// KeyField names the output field holding the record key; default
	// "key".
	KeyField   string
	TimeFormat TimeFormat
	// Store holds the operator's state.
	Store state.Store
	// Clock tells processing time, for Emit Every and ProcessingTime;
	// default time.Now.
	Clock func() time.Time
	// ProcessingTime assigns each record to windows by the time the
	// operator processes it (Clock), not by its timestamp, as Flink's
	// processing-time windows do: a record read from Kafka long after it
	// was written is not late. The watermark is then the wall clock too.
	ProcessingTime bool
	// MaxKeysInMemory bounds the record keys whose accumulators the
	// operator keeps in memory between calls; 0, the default, means no
	// bound. With a bound the Store is authoritative: the least recently
	// used keys are dropped from memory (their state is already written
	// through) and read back from the Store when next needed, and memory
	// holds, besides them, a compact index of what is open. See the
	// package documentation, # State.
	MaxKeysInMemory int
}

// millis returns d in milliseconds, or an error naming field; whether d
// is whole milliseconds is one of problems' rules.
func millis(field string, d time.Duration, required bool) (int64, error) {
	switch {
	case d < 0:
		return 0, fmt.Errorf("%s is negative (%v)", field, d)
	case d == 0 && required:
		return 0, fmt.Errorf("%s is required", field)
	}
	return d.Milliseconds(), nil
}

// reserved output field names.
const (
	fieldStart = "window_start"
	fieldEnd   = "window_end"
)

// problem is a rule of a window's settings that a Config breaks, named as
// a pipeline file names the setting: field of the operator (agg < 0; ""
// for the operator itself) or of its agg-th aggregate.
type problem struct {
	agg   int
	field string
	msg   string
}

// problems returns the window rules c breaks that a pipeline file can
// break too: the one statement of them, which both New and the config
// check (CheckWindow) apply. What only a Go caller can get wrong (a
// missing Store, an unknown kind) is validate's.
func (c *Config) problems() []problem {
	var ps []problem
	add := func(agg int, field, format string, args ...any) {
		ps = append(ps, problem{agg, field, fmt.Sprintf(format, args...)})
	}
	step := "slide"
	if c.Kind == Cumulate {
		step = "step"
	}
	for _, d := range []struct {
		field string
		d     time.Duration
	}{{"size", c.Size}, {step, c.Slide}, {"gap", c.Gap}, {"allowed_lateness", c.AllowedLateness}} {
		if d.d%time.Millisecond != 0 {
			add(-1, d.field, "%v is not a whole number of milliseconds", d.d)
		}
	}
	switch {
	case c.Kind == Sliding && c.Size > 0 && c.Slide > c.Size:
		add(-1, "slide", "slide %v is longer than size %v: records between windows would be lost", c.Slide, c.Size)
	case c.Kind == Cumulate && c.Slide > 0 && c.Size%c.Slide != 0:
		add(-1, "step", "size %v must be a whole number of steps %v", c.Size, c.Slide)
	case c.Kind == Count && c.AllowedLateness != 0:
		add(-1, "allowed_lateness", "does not apply to a count window (it closes on its last record)")
	}
	switch {
	case c.Emit == Every && c.EmitInterval <= 0:
		add(-1, "", "emit: every needs a positive %q", "emit_interval")
	case c.Emit != Every && c.EmitInterval != 0:
		add(-1, "emit_interval", "only applies with emit: every")
	}
	if len(c.Aggregates) == 0 {
		return ps // the output is the Custom aggregate's alone
	}
	key := c.KeyField
	if key == "" {
		key = "key"
	}
	names := map[string]bool{key: true, fieldStart: true, fieldEnd: true}
	custom := -1
	for i, a := range c.Aggregates {
		if a.As != "" && names[a.As] {
			add(i, "as", "output field %q is already used (by the key, window bounds or another aggregate)", a.As)
		}
		names[a.As] = true
		if a.Exact != 0 && a.Func != AggCountDistinct {
			add(i, "exact", "only applies to count_distinct")
		}
		if a.Func == AggCustom {
			if custom >= 0 {
				add(i, "plugin", "a window takes one plugin aggregate; aggregates[%d] is one already", custom)
			}
			custom = i
		}
	}
	return ps
}

// validate checks c and fills in its defaults, returning the settings in
// milliseconds.
func (c *Config) validate() (size, slide, gap, lateness int64, err error) {
	var errs []error
	check := func(e error) {
		if e != nil {
			errs = append(errs, e)
		}
	}
	if c.Name == "" {
		check(errors.New("Name is required"))
	}
	if c.Store == nil {
		check(errors.New("Store is required"))
	}
	if c.MaxKeysInMemory < 0 {
		check(fmt.Errorf("MaxKeysInMemory is negative (%d)", c.MaxKeysInMemory))
	}
	size, slide, gap, lateness = c.checkKind(check)
	switch c.Emit {
	case OnClose, OnUpdate, Every:
	default:
		check(fmt.Errorf("Emit %v is not an emit mode", c.Emit))
	}
	if c.TimeFormat > RFC3339 {
		check(fmt.Errorf("TimeFormat %v is not a time format", c.TimeFormat))
	}
	if c.KeyField == "" {
		c.KeyField = "key"
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	customs := 0
	for _, a := range c.Aggregates {
		if a.Func == AggCustom {
			customs++
		}
	}
	switch {
	case c.Custom == nil && len(c.Aggregates) == 0:
		check(errors.New("an aggregate is required: set Aggregates or Custom"))
	case c.Custom != nil && len(c.Aggregates) > 0 && customs == 0:
		check(errors.New("with Custom and Aggregates, one of Aggregates must be AggCustom, the field of Custom's result"))
	case c.Custom == nil && customs > 0:
		check(errors.New("an AggCustom aggregate needs Custom"))
	}
	for i, a := range c.Aggregates {
		check(a.check(i))
	}
	for _, p := range c.problems() {
		switch {
		case p.agg >= 0:
			check(fmt.Errorf("aggregates[%d].%s: %s", p.agg, p.field, p.msg))
		case p.field != "":
			check(fmt.Errorf("%s: %s", p.field, p.msg))
		default:
			check(errors.New(p.msg))
		}
	}
	if len(errs) > 0 {
		return 0, 0, 0, 0, fmt.Errorf("window %q: %w", c.Name, errors.Join(errs...))
	}
	return size, slide, gap, lateness, nil
}

// checkKind checks which sizes c's kind takes, returning them in ms.
func (c *Config) checkKind(check func(error)) (size, slide, gap, lateness int64) {
	// unused reports a setting that the kind does not take.
	unused := func(field string, set bool) {
		if set {
			check(fmt.Errorf("%s does not apply to %s windows", field, c.Kind))
		}
	}
	var e error
	switch c.Kind {
	case Tumbling:
		size, e = millis("Size", c.Size, true)
		check(e)
		unused("Slide", c.Slide != 0)
		unused("Gap", c.Gap != 0)
		unused("Count", c.Count != 0)
	case Sliding, Cumulate:
		size, e = millis("Size", c.Size, true)
		check(e)
		slide, e = millis("Slide", c.Slide, true)
		check(e)
		unused("Gap", c.Gap != 0)
		unused("Count", c.Count != 0)
	case Session:
		gap, e = millis("Gap", c.Gap, true)
		check(e)
		unused("Size", c.Size != 0)
		unused("Slide", c.Slide != 0)
		unused("Count", c.Count != 0)
	case Count:
		if c.Count <= 0 {
			check(fmt.Errorf("Count must be positive, not %d", c.Count))
		}
		unused("Size", c.Size != 0)
		unused("Slide", c.Slide != 0)
		unused("Gap", c.Gap != 0)
	default:
		check(fmt.Errorf("Kind %v is not a window kind", c.Kind))
	}
	lateness, e = millis("AllowedLateness", c.AllowedLateness, false)
	check(e)
	return size, slide, gap, lateness
}

// check checks one built-in aggregate, the i-th, as a Go caller may get it
// wrong; its rules a pipeline file can break too are problems'.
func (a Aggregate) check(i int) error {
	where := fmt.Sprintf("Aggregates[%d] (%s)", i, a.As)
	var errs []error
	if a.Func == 0 || int(a.Func) >= len(funcNames) {
		return fmt.Errorf("%s: Func %v is not an aggregate function", where, a.Func)
	}
	if a.As == "" {
		errs = append(errs, fmt.Errorf("Aggregates[%d] (%v): As is required", i, a.Func))
	}
	for _, p := range a.Field {
		if p == "" {
			errs = append(errs, fmt.Errorf("%s: Field %q has an empty part", where, strings.Join(a.Field, ".")))
			break
		}
	}
	switch a.Func {
	case AggSum, AggAvg, AggMin, AggMax, AggCountDistinct:
		if len(a.Field) == 0 {
			errs = append(errs, fmt.Errorf("%s: %v needs a Field", where, a.Func))
		}
	case AggCustom:
		if len(a.Field) > 0 {
			errs = append(errs, fmt.Errorf("%s: %v takes no Field", where, a.Func))
		}
	}
	if a.Exact < 0 || a.Exact > MaxExact {
		errs = append(errs, fmt.Errorf("%s: Exact %d is not within 0..%d", where, a.Exact, MaxExact))
	}
	return errors.Join(errs...)
}
