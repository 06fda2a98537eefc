package tablejoin

import (
	"bytes"
	"context"
	"strconv"
	"strings"

	"github.com/weir-stream/weir/abi/wjson"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/kafka"
	"github.com/weir-stream/weir/host/internal/record"
)

// Config configures a table join. It is a plain value; New keeps a copy.
type Config struct {
	Name  string       // the operator's name, for dead letters
	Table *kafka.Table // shared by every instance; the caller closes it
	// KeyPath is the JSON field of the record value whose value is the
	// table key: a string's text without quotes, any other value's JSON
	// text, as key_by makes keys. A null field matches nothing. Without a
	// KeyPath the record's own key is the table key (from key_by, or the
	// Kafka key); a record without one matches nothing.
	KeyPath []string
	// Into is the field of the record that receives the table's value (or
	// null, in a left join without a match): a field of that name is given
	// it where it stands, otherwise it is added at the end.
	Into string
	// Left keeps the records that match nothing, with null in Into.
	// Otherwise (an inner join) they are dropped.
	Left bool
}

// join is one instance of the operator, used by one goroutine.
type join struct {
	cfg   Config
	field string // KeyPath dotted, for messages
	what  string // `table_join "name"`, for messages
	bad   []kafka.TableRecord
	buf   []byte
	key   []byte
}

// New returns an instance of the table join for one worker. Records whose
// value is not a JSON object, or lacks the key field, become dead letters;
// so do the table's own bad records (records of its topic without a key or
// with a value that is not JSON), once, with the next batch an instance
// processes.
func New(cfg Config) engine.Operator {
	return &join{cfg: cfg, field: strings.Join(cfg.KeyPath, "."), what: "table_join " + strconv.Quote(cfg.Name)}
}

func (j *join) Name() string                { return j.cfg.Name }
func (j *join) Close(context.Context) error { return nil }

func (j *join) Process(_ context.Context, in []record.Record, out *record.Output) error {
	j.bad = j.cfg.Table.TakeBad(j.bad[:0])
	for _, b := range j.bad {
		out.Dead = append(out.Dead, record.DeadLetter{
			Record: record.Record{Key: b.Key, Value: b.Value, Origin: record.Origin{Source: j.cfg.Name, Topic: b.Topic, Partition: b.Partition, Offset: b.Offset}},
			Stage:  j.cfg.Name,
			Reason: j.what + ": table topic " + strconv.Quote(b.Topic) + " partition " + strconv.Itoa(int(b.Partition)) +
				" offset " + strconv.FormatInt(b.Offset, 10) + ": " + b.Reason + "; the table keeps its earlier value for the key",
		})
	}
	view := j.cfg.Table.View()
	defer view.Release()
	for i := range in {
		rec := in[i]
		key, ok, reason := j.keyOf(&rec)
		if reason != "" {
			out.Dead = append(out.Dead, record.DeadLetter{Record: rec, Stage: j.cfg.Name, Reason: j.what + ": " + reason})
			continue
		}
		var val []byte
		if ok {
			val, ok = view.Get(key)
		}
		if !ok && !j.cfg.Left {
			continue
		}
		j.buf = j.enrich(j.buf[:0], rec.Value, val)
		rec.Value = out.Arena.Copy(j.buf)
		out.Records = append(out.Records, rec)
	}
	return nil
}

// keyOf returns the table key of rec (ok false: a null or missing key,
// which matches nothing), or why rec cannot be joined. The key is valid
// until the next call.
func (j *join) keyOf(rec *record.Record) (key []byte, ok bool, reason string) {
	var v wjson.Value
	var err error
	if j.cfg.KeyPath == nil {
		_, err = wjson.Parse(rec.Value)
	} else {
		v, err = wjson.Get(rec.Value, j.cfg.KeyPath...)
	}
	switch {
	case err != nil:
		return nil, false, "value is not JSON: " + err.Error()
	case !wjson.IsObject(rec.Value):
		return nil, false, "value is not a JSON object"
	case j.cfg.KeyPath == nil:
		return rec.Key, rec.Key != nil, ""
	case !v.Exists():
		return nil, false, "field " + j.field + " not found"
	case v.Kind == wjson.Null:
		return nil, false, ""
	case v.Kind != wjson.String:
		return v.Raw, true, ""
	case bytes.IndexByte(v.Raw, '\\') < 0:
		return v.Raw[1 : len(v.Raw)-1], true, ""
	}
	j.key = v.AppendString(j.key[:0])
	return j.key, true, ""
}

// enrich appends to dst the object value with the field Into set to val, or
// to null for a nil val: where a field of that name stands, or else at the
// end. A repeated field of that name is dropped.
func (j *join) enrich(dst, value, val []byte) []byte {
	if val == nil {
		val = []byte("null")
	}
	dst = append(dst, '{')
	n, done := 0, false
	wjson.Each(value, func(k, v wjson.Value) bool {
		into := k.StringEquals(j.cfg.Into)
		if into && done {
			return true
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, k.Raw...)
		dst = append(dst, ':')
		if into {
			done = true
			dst = append(dst, val...)
		} else {
			dst = append(dst, v.Raw...)
		}
		return true
	})
	if !done {
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = wjson.AppendQuote(dst, j.cfg.Into)
		dst = append(dst, ':')
		dst = append(dst, val...)
	}
	return append(dst, '}')
}
