package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/weir-stream/weir/abi/wjson"
	"github.com/weir-stream/weir/host/internal/record"
)

// Format is how a text input is split into records; a plain value.
type Format int

const (
	// FormatAuto reads a JSON array when the first non-space byte is '[',
	// and JSON lines otherwise.
	FormatAuto Format = iota
	// FormatJSONLines reads one JSON document per line; blank lines are
	// skipped.
	FormatJSONLines
	// FormatJSONArray reads the elements of one top-level JSON array.
	FormatJSONArray
	// FormatLines reads each line as a raw value, without decoding.
	FormatLines
)

// readerSource reads records from a file or from standard input.
type readerSource struct {
	name   string
	path   string // for messages; "-" for stdin
	open   func() (io.ReadCloser, error)
	format Format
	now    func() int64
	// blocking marks inputs whose reads may block indefinitely (a terminal,
	// a pipe); they are read on a separate goroutine so a stop is honoured.
	blocking bool
}

// NewFileSource returns a source reading path in the given format.
func NewFileSource(name, path string, format Format) Source {
	return &readerSource{name: name, path: path, format: format, now: nowMillis,
		open: func() (io.ReadCloser, error) { return os.Open(path) }}
}

// NewReaderSource returns a source reading r, which it closes when done (for
// standard input, pass a reader whose Close does not close the descriptor).
// label names the input in messages.
func NewReaderSource(name, label string, r io.Reader, format Format) Source {
	return &readerSource{name: name, path: label, format: format, now: nowMillis, blocking: true,
		open: func() (io.ReadCloser, error) { return io.NopCloser(r), nil }}
}

func nowMillis() int64 { return time.Now().UnixMilli() }

func (s *readerSource) Name() string { return s.name }

// Replayable implements Replayable: a file reads the same every time,
// standard input does not.
func (s *readerSource) Replayable() bool { return !s.blocking }

const readBufferSize = 256 << 10

// Run implements Source. Records get the time they were read as their
// timestamp. Before a read that could block, Run flushes the batch it is
// filling, so records from a slow input (a terminal, a pipe) move on at once
// while a fast input still fills whole batches.
func (s *readerSource) Run(ctx context.Context, out *Out) error {
	rc, err := s.open()
	if err != nil {
		return fmt.Errorf("source %q: %w", s.name, err)
	}
	defer rc.Close()
	var in io.Reader = rc
	if s.blocking {
		ir := newInterruptibleReader(ctx, rc)
		defer ir.Close()
		in = ir
	}
	br := bufio.NewReaderSize(in, readBufferSize)
	sc := &scanner{r: br, line: 1, flush: out.Flush}
	stop := context.AfterFunc(ctx, func() { sc.stopped.Store(true) })
	defer stop()
	format := s.format
	if format == FormatAuto {
		format = FormatJSONLines
		if c, err := sc.peekNonSpace(); err == nil && c == '[' {
			format = FormatJSONArray
		}
	}
	switch format {
	case FormatJSONArray:
		err = s.readArray(sc, out)
	default:
		err = s.readLines(sc, out, format == FormatJSONLines)
	}
	if errors.Is(err, errInterrupted) {
		err = nil
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	return err
}

func (s *readerSource) readLines(sc *scanner, out *Out, decode bool) error {
	var offset int64
	ts := s.now()
	for {
		line, lineNo, err := sc.readLine()
		if len(line) > 0 {
			origin := record.Origin{Partition: -1, Offset: offset, Line: lineNo}
			offset++
			if out.Pending() == 0 {
				ts = s.now()
			}
			rec := record.Record{Value: line, Timestamp: ts, Origin: origin}
			if decode {
				trimmed := bytes.TrimSpace(line)
				if len(trimmed) == 0 {
					offset--
					goto next
				}
				rec.Value = trimmed
				if !wjson.Valid(trimmed) {
					if derr := out.Dead(rec, fmt.Sprintf("%s:%d: not JSON: %s", s.path, lineNo, jsonError(trimmed))); derr != nil {
						return derr
					}
					goto next
				}
			}
			if aerr := out.Add(rec); aerr != nil {
				return aerr
			}
		}
	next:
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("source %q: reading %s: %w", s.name, s.path, err)
		}
	}
}

func (s *readerSource) readArray(sc *scanner, out *Out) error {
	c, err := sc.nextNonSpace()
	if err != nil || c != '[' {
		return fmt.Errorf("source %q: %s:%d: expected a JSON array", s.name, s.path, sc.line)
	}
	var offset int64
	ts := s.now()
	for first := true; ; first = false {
		c, err := sc.peekNonSpace()
		if err != nil {
			return fmt.Errorf("source %q: %s:%d: the JSON array is not closed", s.name, s.path, sc.line)
		}
		if c == ']' && first {
			sc.r.ReadByte()
			break
		}
		line := sc.line
		elem, err := sc.readValue()
		if err != nil {
			return fmt.Errorf("source %q: %s:%d: %v", s.name, s.path, line, err)
		}
		if out.Pending() == 0 {
			ts = s.now()
		}
		rec := record.Record{Value: elem, Timestamp: ts, Origin: record.Origin{Partition: -1, Offset: offset, Line: line}}
		offset++
		if !wjson.Valid(elem) {
			err = out.Dead(rec, fmt.Sprintf("%s:%d: not JSON: %s", s.path, line, jsonError(elem)))
		} else {
			err = out.Add(rec)
		}
		if err != nil {
			return err
		}
		c, err = sc.nextNonSpace()
		if err != nil {
			return fmt.Errorf("source %q: %s:%d: the JSON array is not closed", s.name, s.path, sc.line)
		}
		if c == ']' {
			break
		}
		if c != ',' {
			return fmt.Errorf("source %q: %s:%d: expected ',' or ']' after array element, found %q", s.name, s.path, sc.line, c)
		}
	}
	if c, err := sc.nextNonSpace(); err == nil {
		return fmt.Errorf("source %q: %s:%d: unexpected %q after the JSON array", s.name, s.path, sc.line, c)
	}
	return nil
}

// jsonError describes why b is not JSON. It runs only on the error path.
func jsonError(b []byte) string {
	var v json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil {
		return err.Error()
	}
	return "invalid JSON"
}

// scanner splits a buffered input into lines or JSON values, tracking line
// numbers. It calls flush before any read that may block.
type scanner struct {
	r     *bufio.Reader
	line  int64
	flush func() error
	buf   []byte
	// stopped is set when the source is asked to stop; checked before
	// each read instead of ctx.Err, which takes a lock.
	stopped atomic.Bool
}

func (s *scanner) fill() error {
	if s.stopped.Load() {
		return errInterrupted
	}
	if s.r.Buffered() == 0 {
		if err := s.flush(); err != nil {
			return err
		}
	}
	return nil
}

// readLine returns the next line without its terminator and the line's
// number. The slice is valid until the next call.
func (s *scanner) readLine() ([]byte, int64, error) {
	if err := s.fill(); err != nil {
		return nil, 0, err
	}
	n := s.line
	line, err := s.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.buf = append(s.buf[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = s.r.ReadSlice('\n')
			s.buf = append(s.buf, line...)
		}
		line = s.buf
	}
	if len(line) > 0 && line[len(line)-1] == '\n' {
		line = line[:len(line)-1]
		s.line++
	}
	line = bytes.TrimSuffix(line, []byte{'\r'})
	return line, n, err
}

func (s *scanner) readByte() (byte, error) {
	if err := s.fill(); err != nil {
		return 0, err
	}
	c, err := s.r.ReadByte()
	if c == '\n' {
		s.line++
	}
	return c, err
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *scanner) nextNonSpace() (byte, error) {
	for {
		c, err := s.readByte()
		if err != nil || !isSpace(c) {
			return c, err
		}
	}
}

func (s *scanner) peekNonSpace() (byte, error) {
	c, err := s.nextNonSpace()
	if err == nil {
		s.r.UnreadByte()
	}
	return c, err
}

// readValue reads one JSON value's bytes: an object or array up to its
// matching close, a string, or a scalar up to the next delimiter. It checks
// only the nesting; the caller validates the value.
func (s *scanner) readValue() ([]byte, error) {
	s.buf = s.buf[:0]
	depth := 0
	inString, escaped := false, false
	for {
		c, err := s.readByte()
		if err != nil {
			if err == io.EOF && depth == 0 && !inString && len(s.buf) > 0 {
				return s.buf, nil
			}
			if err == io.EOF {
				return nil, errors.New("the input ends inside a JSON value")
			}
			return nil, err
		}
		if inString {
			s.buf = append(s.buf, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
				if depth == 0 {
					return s.buf, nil
				}
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				s.r.UnreadByte()
				return s.buf, nil
			}
			depth--
			if depth == 0 {
				s.buf = append(s.buf, c)
				return s.buf, nil
			}
		case ',':
			if depth == 0 {
				s.r.UnreadByte()
				return s.buf, nil
			}
		default:
			if depth == 0 && isSpace(c) {
				if c == '\n' {
					s.line--
				}
				s.r.UnreadByte()
				return s.buf, nil
			}
		}
		s.buf = append(s.buf, c)
	}
}

// errInterrupted reports a read abandoned because the source was stopped.
var errInterrupted = errors.New("read interrupted by stop")

// interruptibleReader performs reads on a goroutine of its own so that Read
// returns errInterrupted as soon as ctx is done, even while the underlying
// read blocks. The abandoned read finishes in the background, into a buffer
// nobody reads again.
type interruptibleReader struct {
	ctx  context.Context
	buf  []byte
	req  chan []byte
	resp chan readResult
}

type readResult struct {
	n   int
	err error
}

func newInterruptibleReader(ctx context.Context, r io.Reader) *interruptibleReader {
	ir := &interruptibleReader{ctx: ctx, req: make(chan []byte), resp: make(chan readResult, 1)}
	go func() {
		for p := range ir.req {
			n, err := r.Read(p)
			ir.resp <- readResult{n, err}
		}
	}()
	return ir
}

func (ir *interruptibleReader) Read(p []byte) (int, error) {
	if ir.ctx.Err() != nil {
		return 0, errInterrupted
	}
	if cap(ir.buf) < len(p) {
		ir.buf = make([]byte, len(p))
	}
	tmp := ir.buf[:len(p)]
	select {
	case ir.req <- tmp:
	case <-ir.ctx.Done():
		return 0, errInterrupted
	}
	select {
	case res := <-ir.resp:
		return copy(p, tmp[:res.n]), res.err
	case <-ir.ctx.Done():
		return 0, errInterrupted
	}
}

// Close ends the reading goroutine once its current read returns.
func (ir *interruptibleReader) Close() { close(ir.req) }
