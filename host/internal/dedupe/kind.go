package dedupe

import (
	"context"
	"time"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/operator"
)

// Type is the operator type a pipeline file names.
const Type config.OperatorType = "dedupe"

// Kind is the operator table's row for dedupe: its settings, how to load
// it, and how to describe its entries. A dedupe keeps keyed state always.
var Kind = operator.Kind{
	Schema:   config.Schema{Fields: []string{"within"}, Decode: decode},
	Load:     load,
	Describe: describe,
}

// Settings are a dedupe operator's settings from the pipeline file.
type Settings struct {
	// Within is how near in event time to one of its key's passed
	// records a record is a repeat; 0 (absent) means for ever.
	Within time.Duration
}

// decode reads a dedupe operator's fields: within, optional, a positive
// whole number of milliseconds.
func decode(f *config.Fields) any {
	var s Settings
	if d, ok := f.Duration("within"); ok {
		switch {
		case d == 0:
			f.Fail("within", "must be positive (leave it out to drop a key's repeats for ever)")
		case d%time.Millisecond != 0:
			f.Fail("within", "%s is not a whole number of milliseconds", d)
		default:
			s.Within = d
		}
	}
	return s
}

// load loads a dedupe operator: one instance per worker, each loading the
// entries of the keys it owns.
func load(ctx context.Context, op *config.Operator, env operator.Env) (operator.Operator, error) {
	s, _ := op.Settings.(Settings)
	cfg := Config{Name: op.Name, Within: s.Within.Milliseconds(), Store: env.Store, ProcessingTime: env.ProcessingTime}
	st := engine.Step{Name: op.Name, KeyedState: true, New: func(ctx context.Context) (engine.Operator, error) {
		c := cfg
		c.Owns = engine.KeyOwner(ctx)
		o, err := New(c)
		if err != nil {
			return nil, operator.At(op, err)
		}
		return o, nil
	}}
	if err := operator.TryStep(ctx, st); err != nil {
		return nil, err
	}
	return operator.Fixed{S: st, Keyed: true}, nil
}

// describe says what a stored entry is: the event time of one of its
// key's passed records.
func describe(_, userKey, value []byte) (operator.KeyEntry, bool) {
	t, ok := entryTime(userKey, value)
	if !ok {
		return operator.KeyEntry{}, false
	}
	return operator.KeyEntry{Kind: "dedupe", Text: "dedupe: passed a record at " + operator.MsTime(t),
		Attrs: map[string]any{"event_time": t}}, true
}
