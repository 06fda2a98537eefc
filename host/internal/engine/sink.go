package engine

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"unicode/utf8"

	"github.com/weir-stream/weir/guest-sdk/go/wjson"
	"github.com/weir-stream/weir/host/internal/record"
)

// Sink consumes the pipeline's output. Write is called with each batch's
// records, in order, by one goroutine; it returns records it rejects (for
// example a value that is not JSON for a JSON sink) as dead letters appended
// to dead. A synchronous sink makes everything written so far durable in
// Flush. An asynchronous one (a Kafka producer) registers its pending work
// on ack before Write returns and finishes it when the records are durable
// (see Ack); the records' bytes stay valid until then. Close waits for
// pending work, flushes and releases the sink.
type Sink interface {
	Name() string
	Write(recs []record.Record, dead []record.DeadLetter, ack *Ack) ([]record.DeadLetter, error)
	Flush() error
	Close() error
}

// DeadLetterSink is where rejected records go: a file, standard error, or a
// Kafka topic. Write is called by one goroutine; durability follows the same
// rules as for a Sink.
type DeadLetterSink interface {
	Write(dl *record.DeadLetter, ack *Ack) error
	Flush() error
	Close() error
}

// SinkFormat is how a writer sink renders each record.
type SinkFormat int

const (
	// SinkJSON writes each value, which must be JSON, on a line of its own.
	// Values spanning several lines are compacted.
	SinkJSON SinkFormat = iota
	// SinkRaw writes each value's bytes followed by a newline.
	SinkRaw
)

type writerSink struct {
	name   string
	label  string
	w      *bufio.Writer
	closer io.Closer
	format SinkFormat
	tmp    bytes.Buffer
	count  int64
}

// NewWriterSink returns a sink writing to w, which it closes on Close when w
// is an io.Closer and closeW is true. label names the destination in errors.
func NewWriterSink(name, label string, w io.Writer, format SinkFormat, closeW bool) Sink {
	s := &writerSink{name: name, label: label, w: bufio.NewWriterSize(w, 64<<10), format: format}
	if c, ok := w.(io.Closer); ok && closeW {
		s.closer = c
	}
	return s
}

// NewFileSink creates (or truncates) path and returns a sink writing to it.
func NewFileSink(name, path string, format SinkFormat) (Sink, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("sink %q: %w", name, err)
	}
	return NewWriterSink(name, path, f, format, true), nil
}

func (s *writerSink) Name() string { return s.name }

func (s *writerSink) Write(recs []record.Record, dead []record.DeadLetter, _ *Ack) ([]record.DeadLetter, error) {
	for i := range recs {
		v := recs[i].Value
		if s.format == SinkJSON {
			if !json.Valid(v) {
				dead = append(dead, record.DeadLetter{Record: recs[i], Stage: s.name,
					Reason: "sink " + strconv.Quote(s.name) + " writes JSON, and the value is not JSON: " + jsonError(v)})
				continue
			}
			if bytes.IndexByte(v, '\n') >= 0 {
				s.tmp.Reset()
				json.Compact(&s.tmp, v)
				v = s.tmp.Bytes()
			}
		}
		s.w.Write(v)
		if err := s.w.WriteByte('\n'); err != nil {
			return dead, fmt.Errorf("sink %q: writing %s: %w", s.name, s.label, err)
		}
		s.count++
	}
	return dead, nil
}

func (s *writerSink) Flush() error {
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("sink %q: writing %s: %w", s.name, s.label, err)
	}
	return nil
}

func (s *writerSink) Close() error {
	err := s.Flush()
	if s.closer != nil {
		if cerr := s.closer.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("sink %q: closing %s: %w", s.name, s.label, cerr)
		}
	}
	return err
}

type discardSink struct{ name string }

// NewDiscardSink returns a sink that drops everything; for benchmarks and
// for pipelines run only for their side effects.
func NewDiscardSink(name string) Sink { return discardSink{name} }

func (d discardSink) Name() string { return d.name }
func (d discardSink) Write(_ []record.Record, dead []record.DeadLetter, _ *Ack) ([]record.DeadLetter, error) {
	return dead, nil
}
func (discardSink) Flush() error { return nil }
func (discardSink) Close() error { return nil }

// DeadLetterWriter writes dead letters as JSON lines, one object each:
//
//	{"stage":…,"reason":…,"source":…,"topic":…,"partition":…,"offset":…,"line":…,
//	 "timestamp":…,"key":…,"value":…,"headers":{…}}
//
// key, value and header values are JSON strings when they are valid UTF-8;
// otherwise the field is named key_base64, value_base64 (or the header value
// is {"base64": …}) and holds standard base64, so the original bytes are
// always recoverable. topic and partition are omitted for sources without
// them, and line when unknown. A DeadLetterWriter is used by one goroutine.
type DeadLetterWriter struct {
	w      *bufio.Writer
	closer io.Closer
	label  string
	buf    []byte
	count  int64
}

// NewDeadLetterWriter returns a writer to w; Close closes w if closeW.
func NewDeadLetterWriter(label string, w io.Writer, closeW bool) *DeadLetterWriter {
	d := &DeadLetterWriter{w: bufio.NewWriter(w), label: label}
	if c, ok := w.(io.Closer); ok && closeW {
		d.closer = c
	}
	return d
}

// Write writes one dead letter; it is durable after Flush.
func (d *DeadLetterWriter) Write(dl *record.DeadLetter, _ *Ack) error {
	b := d.buf[:0]
	b = append(b, `{"stage":`...)
	b = wjson.AppendQuote(b, dl.Stage)
	b = append(b, `,"reason":`...)
	b = wjson.AppendQuote(b, dl.Reason)
	o := dl.Record.Origin
	b = append(b, `,"source":`...)
	b = wjson.AppendQuote(b, o.Source)
	if o.Topic != "" {
		b = append(b, `,"topic":`...)
		b = wjson.AppendQuote(b, o.Topic)
	}
	if o.Partition >= 0 {
		b = append(b, `,"partition":`...)
		b = strconv.AppendInt(b, int64(o.Partition), 10)
	}
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, o.Offset, 10)
	if o.Line > 0 {
		b = append(b, `,"line":`...)
		b = strconv.AppendInt(b, o.Line, 10)
	}
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, dl.Record.Timestamp, 10)
	b = appendBytesField(b, "key", dl.Record.Key)
	b = appendBytesField(b, "value", dl.Record.Value)
	if len(dl.Record.Headers) > 0 {
		b = append(b, `,"headers":{`...)
		for i, h := range dl.Record.Headers {
			if i > 0 {
				b = append(b, ',')
			}
			b = wjson.AppendQuote(b, h.Key)
			b = append(b, ':')
			if utf8.Valid(h.Value) {
				b = wjson.AppendQuoteBytes(b, h.Value)
			} else {
				b = append(b, `{"base64":"`...)
				b = base64.StdEncoding.AppendEncode(b, h.Value)
				b = append(b, `"}`...)
			}
		}
		b = append(b, '}')
	}
	b = append(b, "}\n"...)
	d.buf = b
	if _, err := d.w.Write(b); err != nil {
		return fmt.Errorf("dead-letter output %s: %w", d.label, err)
	}
	d.count++
	return nil
}

func appendBytesField(b []byte, name string, v []byte) []byte {
	if v == nil {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	if utf8.Valid(v) {
		b = append(b, `":`...)
		return wjson.AppendQuoteBytes(b, v)
	}
	b = append(b, `_base64":"`...)
	b = base64.StdEncoding.AppendEncode(b, v)
	return append(b, '"')
}

// Flush writes buffered dead letters out.
func (d *DeadLetterWriter) Flush() error {
	if err := d.w.Flush(); err != nil {
		return fmt.Errorf("dead-letter output %s: %w", d.label, err)
	}
	return nil
}

// Close flushes and closes the output.
func (d *DeadLetterWriter) Close() error {
	err := d.Flush()
	if d.closer != nil {
		if cerr := d.closer.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
