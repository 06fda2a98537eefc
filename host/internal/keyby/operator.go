package keyby

import (
	"bytes"
	"context"
	"strings"

	"github.com/weir-stream/weir/abi/wjson"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/record"
)

// keyBy sets each record's key from a JSON field of its value. A string
// field's key is its text without quotes; any other value's key is its JSON
// text. A record whose value is not a JSON object with that field goes to the
// dead-letter output.
type keyBy struct {
	name     string
	path     []string
	field    string
	bySource map[string][]string // per source, a path other than path
	fields   map[string]string   // bySource's paths, dotted
	scratch  []byte
}

// New returns the key_by operator for the dotted field path; the records
// of the sources bySource names (it may be nil) are keyed by the path it
// gives instead. It belongs to one worker.
func New(name string, path []string, bySource map[string][]string) engine.Operator {
	k := &keyBy{name: name, path: path, field: strings.Join(path, "."), bySource: bySource, fields: map[string]string{}}
	for src, p := range bySource {
		k.fields[src] = strings.Join(p, ".")
	}
	return k
}

func (k *keyBy) Name() string                { return k.name }
func (k *keyBy) Close(context.Context) error { return nil }
func (k *keyBy) Process(_ context.Context, in []record.Record, out *record.Output) error {
	for i := range in {
		rec := in[i]
		path, field := k.path, k.field
		if p, ok := k.bySource[rec.Origin.Source]; ok {
			path, field = p, k.fields[rec.Origin.Source]
		}
		v, err := wjson.Get(rec.Value, path...)
		switch {
		case err != nil:
			out.Dead = append(out.Dead, record.DeadLetter{Record: rec, Stage: k.name,
				Reason: "key_by " + field + ": value is not JSON: " + err.Error()})
			continue
		case !v.Exists():
			out.Dead = append(out.Dead, record.DeadLetter{Record: rec, Stage: k.name,
				Reason: "key_by " + field + ": field not found"})
			continue
		}
		switch raw := v.Raw; {
		case v.Kind != wjson.String:
			rec.Key = raw
		case bytes.IndexByte(raw, '\\') < 0:
			rec.Key = raw[1 : len(raw)-1] // no escapes: the text as it stands
		default:
			k.scratch = v.AppendString(k.scratch[:0])
			rec.Key = out.Arena.Copy(k.scratch)
		}
		out.Records = append(out.Records, rec)
	}
	return nil
}
