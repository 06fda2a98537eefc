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
	"sync"
	"unicode/utf8"

	"github.com/weir-stream/weir/abi/wjson"
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

// SinkFormat is how a writer sink renders each record; a plain value.
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

// NewFileSink returns a sink appending to path, which it creates if
// missing. What the file already holds is kept until the run starts: a
// run continuing from a checkpoint keeps it, cut back to the checkpoint's
// length when the checkpoint recorded one (exactly-once) or to its last
// complete line; any other run truncates the file before it writes
// anything, or at its first flush or checkpoint (see FileOutput).
func NewFileSink(name, path string, format SinkFormat) (Sink, error) {
	f, err := openOutFile(path)
	if err != nil {
		return nil, fmt.Errorf("sink %q: %w", name, err)
	}
	return &fileSink{writerSink: NewWriterSink(name, path, f, format, true).(*writerSink), file: f}, nil
}

// fileSink is a writer sink on an outFile, a FileOutput.
type fileSink struct {
	*writerSink
	file *outFile
}

// Flush positions the file for a fresh run if nothing has, so that a run
// that writes nothing still leaves it empty, then writes out the buffer.
func (s *fileSink) Flush() error {
	if err := s.file.begin(); err != nil {
		return fmt.Errorf("sink %q: %w", s.name, err)
	}
	return s.writerSink.Flush()
}

// Sync implements FileOutput.
func (s *fileSink) Sync() (int64, error) {
	n, err := s.file.sync()
	if err != nil {
		return 0, fmt.Errorf("sink %q: %w", s.name, err)
	}
	return n, nil
}

// Resume implements FileOutput.
func (s *fileSink) Resume(length int64) error {
	if err := s.file.resume(length); err != nil {
		return fmt.Errorf("sink %q: %w", s.name, err)
	}
	return nil
}

func (s *writerSink) Name() string { return s.name }

func (s *writerSink) Write(recs []record.Record, dead []record.DeadLetter, _ *Ack) ([]record.DeadLetter, error) {
	for i := range recs {
		v := recs[i].Value
		if s.format == SinkJSON {
			if !wjson.Valid(v) {
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

// NewDeadLetterFile returns a dead-letter output appending to path, which
// it creates if missing, and keeps or truncates as NewFileSink does. It is
// a FileOutput, used by one goroutine but for Sync (see FileOutput).
func NewDeadLetterFile(path string) (DeadLetterSink, error) {
	f, err := openOutFile(path)
	if err != nil {
		return nil, err
	}
	return &deadLetterFile{DeadLetterWriter: NewDeadLetterWriter(path, f, true), file: f}, nil
}

// deadLetterFile is a DeadLetterWriter on an outFile.
type deadLetterFile struct {
	*DeadLetterWriter
	file *outFile
}

// Flush positions the file for a fresh run if nothing has, then writes out
// the buffer.
func (d *deadLetterFile) Flush() error {
	if err := d.file.begin(); err != nil {
		return fmt.Errorf("dead-letter output: %w", err)
	}
	return d.DeadLetterWriter.Flush()
}

// Sync implements FileOutput.
func (d *deadLetterFile) Sync() (int64, error) {
	n, err := d.file.sync()
	if err != nil {
		return 0, fmt.Errorf("dead-letter output: %w", err)
	}
	return n, nil
}

// Resume implements FileOutput.
func (d *deadLetterFile) Resume(length int64) error {
	if err := d.file.resume(length); err != nil {
		return fmt.Errorf("dead-letter output: %w", err)
	}
	return nil
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

// outFile is the file of a file sink or dead-letter output, opened for
// appending. It is positioned once per run, before its first byte is
// written: by resume, for a run continuing from a checkpoint, or else
// truncated (a fresh run) by begin, by its first write or by sync. Its
// output's goroutine writes to it; sync and resume come from the engine
// while that goroutine is idle (a checkpoint, the start of a run), and mu
// guards what they share.
type outFile struct {
	f      *os.File
	path   string
	mu     sync.Mutex
	placed bool  // positioned for this run
	length int64 // the file's length: where it was positioned, plus what was written since
}

// openOutFile opens path for appending, creating it if missing, and leaves
// its contents alone until the file is positioned.
func openOutFile(path string) (*outFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o666)
	if err != nil {
		return nil, err
	}
	return &outFile{f: f, path: path}, nil
}

// Write appends b, positioning the file first for a fresh run if nothing
// has.
func (o *outFile) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.placeFresh(); err != nil {
		return 0, err
	}
	n, err := o.f.Write(b)
	o.length += int64(n)
	return n, err
}

// begin positions the file for a fresh run if nothing has.
func (o *outFile) begin() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.placeFresh()
}

// placeFresh truncates the file for a run that does not continue from a
// checkpoint, unless it is positioned already. o.mu is held.
func (o *outFile) placeFresh() error {
	if o.placed {
		return nil
	}
	return o.truncate(0)
}

// truncate cuts the file to n bytes and positions it there. o.mu is held.
func (o *outFile) truncate(n int64) error {
	if err := o.f.Truncate(n); err != nil {
		return err
	}
	o.placed, o.length = true, n
	return nil
}

// resume positions the file for a run continuing from a checkpoint: cut to
// length, what the checkpoint recorded, or, with length < 0 (it recorded
// none), after its last complete line, dropping a line a crash cut short.
func (o *outFile) resume(length int64) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.placed {
		return fmt.Errorf("%s: resumed after it was written", o.path)
	}
	fi, err := o.f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	switch {
	case length > size:
		return fmt.Errorf("%s holds %d bytes, fewer than the %d the last checkpoint recorded: it was truncated or replaced since then, "+
			"and resuming would lose what it held: put the file back, or start the pipeline from scratch", o.path, size, length)
	case length < 0:
		if length, err = lastLineEnd(o.f, size); err != nil {
			return fmt.Errorf("%s: %w", o.path, err)
		}
	}
	return o.truncate(length)
}

// lastLineEnd returns the offset after the last newline among the first
// size bytes of f, or 0 if there is none.
func lastLineEnd(f *os.File, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(end-int64(len(buf)), 0)
		chunk := buf[:end-start]
		if _, err := f.ReadAt(chunk, start); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// sync makes what was written durable and returns the file's length. A
// file nothing has positioned yet is positioned for a fresh run first: a
// checkpoint covers the run's output, empty so far.
func (o *outFile) sync() (int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.placeFresh(); err != nil {
		return 0, err
	}
	if err := o.f.Sync(); err != nil {
		return 0, fmt.Errorf("%s: %w", o.path, err)
	}
	return o.length, nil
}

// Close closes the file.
func (o *outFile) Close() error { return o.f.Close() }
