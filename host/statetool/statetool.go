package statetool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/weir-stream/weir/host/internal/assembly"
	"github.com/weir-stream/weir/host/internal/checkpoint"
	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/operator"
	"github.com/weir-stream/weir/state"
)

// Format is the format name in a state file's header. A change that
// older weirs would misread gets a new name.
const Format = "weir-state-v1"

// ErrInUse is wrapped by the errors of Open, Export and
// Import when the pipeline's state directory is open in another
// process: the pipeline is running. Stop it and try again.
var ErrInUse = errors.New("state dir in use")

type stateInUseError struct{ dir string }

func (e stateInUseError) Error() string {
	return fmt.Sprintf("state dir %s is in use — is the pipeline running? Stop it, then try again", e.dir)
}

func (e stateInUseError) Is(target error) bool { return target == ErrInUse }

// importBatch is how many entries Import gives each Store.Apply.
const importBatch = 4096

// stateConfig loads the pipeline file and returns it, requiring badger
// state.
func stateConfig(pipelinePath string) (*config.Pipeline, error) {
	cfg, err := config.Load(pipelinePath, assembly.Schemas())
	if err != nil {
		return nil, config.Invalid(err)
	}
	if cfg.State.Backend != config.StateBadger {
		return nil, fmt.Errorf("pipeline %q keeps its state in memory (state.backend: %s): it has no state on disk; set state.backend: badger and state.dir", cfg.Name, cfg.State.Backend)
	}
	return cfg, nil
}

// openView opens the pipeline's state directory read-only.
func openView(cfg *config.Pipeline) (*state.BadgerView, error) {
	v, err := state.OpenBadgerView(cfg.State.Dir, nil)
	switch {
	case errors.Is(err, state.ErrLocked):
		return nil, stateInUseError{cfg.State.Dir}
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("no state in %s: pipeline %q has not run with this state.dir (%w)", cfg.State.Dir, cfg.Name, fs.ErrNotExist)
	case err != nil:
		return nil, err
	}
	return v, nil
}

// View is a read-only view of a stopped pipeline's badger state, as
// its next run would find it: as of the last committed checkpoint. It
// holds the state directory's lock (shared with other readers, so the
// pipeline cannot start) until Close. Its methods may be called
// concurrently, each reading the store afresh, but Close must not run
// while another is running.
type View struct {
	cfg  *config.Pipeline
	view *state.BadgerView
	ops  map[string]config.OperatorType
}

// Open opens the state of the pipeline at pipelinePath read-only. It
// fails if the pipeline keeps its state in memory, if its state directory
// holds no state, and with an error wrapping ErrInUse if the pipeline
// is running. It never modifies the directory.
func Open(pipelinePath string) (*View, error) {
	cfg, err := stateConfig(pipelinePath)
	if err != nil {
		return nil, err
	}
	v, err := openView(cfg)
	if err != nil {
		return nil, err
	}
	s := &View{cfg: cfg, view: v, ops: map[string]config.OperatorType{}}
	for i := range cfg.Operators {
		s.ops[cfg.Operators[i].Name] = cfg.Operators[i].Type
	}
	return s, nil
}

// Pipeline returns the pipeline's name.
func (s *View) Pipeline() string { return s.cfg.Name }

// Dir returns the state directory.
func (s *View) Dir() string { return s.cfg.State.Dir }

// Close releases the state directory. Calling it again does nothing.
func (s *View) Close() error { return s.view.Close() }

// Checkpoint is the last committed checkpoint of a pipeline's state.
type Checkpoint struct {
	// Version is the store's version of the checkpointed state.
	Version uint64 `json:"version"`
	// Epoch numbers the run's checkpoints from 1; 0 when the checkpoint
	// carries no engine position (an imported state without one).
	Epoch uint64 `json:"epoch"`
	// Watermark is the event time (ms since the epoch) every operator had
	// been given; math.MinInt64 for none.
	Watermark int64 `json:"watermark"`
	// Sources are the positions the sources resume from.
	Sources []SourcePosition `json:"sources,omitempty"`
	// ChangelogOffsets are, per changelog partition, the offsets from
	// which a restart replays state changes (runs with a Kafka source and
	// keyed state); empty for none.
	ChangelogOffsets []int64 `json:"changelog_offsets,omitempty"`
	// Uncommitted is the version of a checkpoint prepared after this one
	// but never committed, which the next run rolls back (and replays
	// from the changelog if its Kafka transaction committed); 0 if none.
	Uncommitted uint64 `json:"uncommitted,omitempty"`
	// Meta is the metadata as stored.
	Meta json.RawMessage `json:"-"`
}

// SourcePosition is where one source resumes: a Kafka source's next
// offset per topic and partition (Position), or for a file or generator
// source the number of records it had handed out (Records).
type SourcePosition struct {
	Name     string          `json:"name"`
	Position json.RawMessage `json:"position,omitempty"`
	Records  int64           `json:"records,omitempty"`
}

// Checkpoint returns the last committed checkpoint, or nil if the state
// has none (a pipeline without checkpoints).
func (s *View) Checkpoint() (*Checkpoint, error) {
	cp, ok := s.view.Committed()
	if !ok {
		return nil, nil
	}
	out := &Checkpoint{Version: cp.Version, Watermark: math.MinInt64, Meta: cp.Meta}
	if p, ok := s.view.Prepared(); ok {
		out.Uncommitted = p.Version
	}
	if len(cp.Meta) == 0 {
		return out, nil
	}
	var meta checkpoint.Meta
	if err := json.Unmarshal(cp.Meta, &meta); err != nil {
		return nil, fmt.Errorf("the last checkpoint in %s is unreadable: %w", s.cfg.State.Dir, err)
	}
	out.ChangelogOffsets = meta.Offsets()
	if len(meta.Engine) == 0 {
		return out, nil
	}
	ecp, err := engine.UnmarshalCheckpoint(meta.Engine)
	if err != nil {
		return nil, fmt.Errorf("the last checkpoint in %s is unreadable: %w", s.cfg.State.Dir, err)
	}
	out.Epoch, out.Watermark = ecp.Epoch, ecp.Watermark
	for _, src := range ecp.Sources {
		out.Sources = append(out.Sources, SourcePosition{Name: src.Name, Position: src.Snapshot, Records: src.Records})
	}
	return out, nil
}

// OperatorState counts one operator's state.
type OperatorState struct {
	Operator string `json:"operator"`
	// Type is the operator's type in the pipeline file (map, flat_map,
	// filter, window, rolling), or "" if the pipeline has no operator of
	// that name (renamed or removed since the state was written).
	Type    string `json:"type"`
	Keys    int    `json:"keys"`    // distinct record keys
	Entries int    `json:"entries"` // store entries
}

// KeyState counts the state entries of one record key.
type KeyState struct {
	Key     []byte `json:"-"`
	Entries int    `json:"entries"`
}

// Operators lists the operators that have state, by name, with their
// counts. Keys that do not follow state.Key are counted under the
// operator "(malformed)".
func (s *View) Operators() ([]OperatorState, error) {
	var out []OperatorState
	var lastRK []byte
	err := s.view.Keys(nil, func(k []byte) error {
		op, rk, _, ok := state.SplitKey(k)
		if !ok {
			op, rk = "(malformed)", nil
		}
		if len(out) == 0 || out[len(out)-1].Operator != op {
			out = append(out, OperatorState{Operator: op, Type: string(s.ops[op])})
			lastRK = nil
		}
		o := &out[len(out)-1]
		o.Entries++
		if o.Keys == 0 || !bytes.Equal(rk, lastRK) {
			o.Keys++
			lastRK = append(lastRK[:0], rk...)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b OperatorState) int { return strings.Compare(a.Operator, b.Operator) })
	return out, err
}

// Keys lists the record keys that have state in operator, in store
// order, with their counts. A window's nil record key is listed as the
// empty key.
func (s *View) Keys(operator string) ([]KeyState, error) {
	var out []KeyState
	err := s.view.Keys(state.OperatorPrefix(nil, operator), func(k []byte) error {
		op, rk, _, ok := state.SplitKey(k)
		if !ok || op != operator {
			return nil
		}
		if len(out) == 0 || !bytes.Equal(out[len(out)-1].Key, rk) {
			out = append(out, KeyState{Key: bytes.Clone(rk)})
		}
		out[len(out)-1].Entries++
		return nil
	})
	return out, err
}

// Entry is one state entry of a record key, its user key decoded
// where the operator's convention is known.
type Entry struct {
	// UserKey is the entry's user key as stored.
	UserKey []byte
	// KeyEntry is what the operator's kind says the entry is (its Kind,
	// Text, Attrs and NilKey); Kind is "raw" when the user key follows
	// none of the kind's layouts.
	operator.KeyEntry
	// Value is the entry's value as stored.
	Value []byte
}

// Entries returns the state entries of recordKey in operator, in store
// order.
func (s *View) Entries(operator string, recordKey []byte) ([]Entry, error) {
	return entries(s.view, s.ops[operator], operator, recordKey)
}

// entries reads the state entries of recordKey in operator, of type typ,
// from sc.
func entries(sc state.Scanner, typ config.OperatorType, operator string, recordKey []byte) ([]Entry, error) {
	var out []Entry
	err := sc.Scan(state.Key(nil, operator, recordKey, nil), func(k, v []byte) error {
		op, rk, uk, ok := state.SplitKey(k)
		if !ok || op != operator || !bytes.Equal(rk, recordKey) {
			return nil // a longer record key with the same prefix
		}
		e := decodeEntry(typ, rk, uk, v)
		e.UserKey, e.Value = bytes.Clone(uk), bytes.Clone(v)
		out = append(out, e)
		return nil
	})
	return out, err
}

// decodeEntry decodes a user key (and what a window's value says about
// its span) by the layouts of an operator of type typ, which its kind
// describes (assembly.DescribeEntry). It never fails: what it cannot
// decode is "raw".
func decodeEntry(typ config.OperatorType, rk, uk, v []byte) Entry {
	d, ok := assembly.DescribeEntry(typ, rk, uk, v)
	if !ok {
		d = operator.KeyEntry{Kind: "raw"}
	}
	return Entry{KeyEntry: d}
}

// Fields returns the entry as JSON fields, as weir state inspect --json
// prints them: kind, the parts its kind decodes (name, map_key or
// map_key_hex, start, end, records, row, event_time, offset...),
// user_key_hex for a raw entry, nil_key where it applies; value when the
// value is JSON, value_hex otherwise.
func (e *Entry) Fields() map[string]any {
	m := map[string]any{"kind": e.Kind}
	for k, v := range e.Attrs {
		m[k] = v
	}
	if e.Kind == "raw" {
		m["user_key_hex"] = hex.EncodeToString(e.UserKey)
	}
	if e.NilKey {
		m["nil_key"] = true
	}
	if utf8.Valid(e.Value) && json.Valid(e.Value) {
		m["value"] = json.RawMessage(e.Value)
	} else {
		m["value_hex"] = hex.EncodeToString(e.Value)
	}
	return m
}

// Query reads the state entries of recordKey in operator, an operator of
// type opType (its type in the pipeline file), from sc: what
// host.Pipeline.QueryState answers.
func Query(sc state.Scanner, opType, operator string, recordKey []byte) ([]Entry, error) {
	return entries(sc, config.OperatorType(opType), operator, recordKey)
}

// Describe returns the entry's user key for people, as its kind says it
// (`value "count"`, `map "LUT" ["x"]`, `pane start 2024-03-17T09:20:00Z`),
// or `raw "..."` for one that follows none of its kind's layouts.
func (e *Entry) Describe() string {
	s := e.Text
	if e.Kind == "raw" {
		s = "raw " + quoteBytes(e.UserKey)
	}
	if e.NilKey {
		s += " (nil key)"
	}
	return s
}

// quoteBytes quotes b as a Go string literal (\x escapes for invalid UTF-8).
func quoteBytes(b []byte) string { return strconv.Quote(string(b)) }

// msTime formats ms since the Unix epoch as RFC 3339 in UTC.
func msTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

// Export writes the state of the stopped pipeline at pipelinePath to
// w as a state file (Format): the state as of its last committed
// checkpoint, with that checkpoint. It reads the state directory without
// modifying it, and streams: memory does not grow with the state. It fails
// with an error wrapping ErrInUse if the pipeline is running, and
// returns the number of entries written.
func Export(ctx context.Context, pipelinePath string, w io.Writer) (int64, error) {
	cfg, err := stateConfig(pipelinePath)
	if err != nil {
		return 0, err
	}
	v, err := openView(cfg)
	if err != nil {
		return 0, err
	}
	defer v.Close()
	bw := bufio.NewWriterSize(w, 1<<16)
	meta := []byte("null")
	if cp, ok := v.Committed(); ok && len(cp.Meta) > 0 {
		if !json.Valid(cp.Meta) {
			return 0, fmt.Errorf("the last checkpoint in %s is not JSON", cfg.State.Dir)
		}
		meta = cp.Meta
		if bytes.ContainsAny(meta, "\r\n") {
			var buf bytes.Buffer
			json.Compact(&buf, meta)
			meta = buf.Bytes()
		}
	}
	name, _ := json.Marshal(cfg.Name)
	fmt.Fprintf(bw, `{"format":%q,"pipeline":%s,"checkpoint":%s}`+"\n", Format, name, meta)
	var n int64
	var line []byte
	err = v.Scan(nil, func(k, val []byte) error {
		if n%importBatch == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line = appendEntryLine(line[:0], k, val)
		n++
		_, err := bw.Write(line)
		return err
	})
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return n, fmt.Errorf("exporting the state in %s: %w", cfg.State.Dir, err)
	}
	return n, nil
}

// appendEntryLine appends an entry line, {"k":"…","v":"…"} and a newline.
func appendEntryLine(dst, k, v []byte) []byte {
	dst = append(dst, `{"k":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, k)
	dst = append(dst, `","v":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, v)
	return append(dst, "\"}\n"...)
}

// stateFileHeader is a state file's first line.
type stateFileHeader struct {
	Format     string          `json:"format"`
	Pipeline   string          `json:"pipeline"`
	Checkpoint json.RawMessage `json:"checkpoint"`
}

// maxStateLine bounds a state file's line, so a file without newlines
// cannot take all memory.
const maxStateLine = 256 << 20

// stateDecoder reads a state file. Errors name the line.
type stateDecoder struct {
	r      *bufio.Reader
	line   int
	buf    []byte
	header stateFileHeader
	// meta is the header's checkpoint, checked; empty for null.
	meta []byte
}

// newStateDecoder reads and checks the header.
func newStateDecoder(r io.Reader) (*stateDecoder, error) {
	d := &stateDecoder{r: bufio.NewReaderSize(r, 1<<16)}
	line, err := d.readLine()
	if err == io.EOF {
		return nil, errors.New("line 1: the file is empty; want a weir state file")
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(line, &d.header); err != nil {
		return nil, fmt.Errorf("line 1: not a weir state file header: %v", err)
	}
	if d.header.Format != Format {
		return nil, fmt.Errorf("line 1: format %q: want %q", d.header.Format, Format)
	}
	if cp := bytes.TrimSpace(d.header.Checkpoint); len(cp) > 0 && !bytes.Equal(cp, []byte("null")) {
		var meta checkpoint.Meta
		if err := json.Unmarshal(cp, &meta); err != nil {
			return nil, fmt.Errorf("line 1: checkpoint: %v", err)
		}
		if len(meta.Engine) > 0 {
			if _, err := engine.UnmarshalCheckpoint(meta.Engine); err != nil {
				return nil, fmt.Errorf("line 1: checkpoint: %v", err)
			}
		}
		d.meta = bytes.Clone(cp)
	}
	return d, nil
}

// readLine returns the next line, without its newline, valid until the
// next call; io.EOF at the end.
func (d *stateDecoder) readLine() ([]byte, error) {
	d.line++
	d.buf = d.buf[:0]
	for {
		chunk, err := d.r.ReadSlice('\n')
		d.buf = append(d.buf, chunk...)
		if len(d.buf) > maxStateLine {
			return nil, fmt.Errorf("line %d: longer than %d bytes", d.line, maxStateLine)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(d.buf) > 0:
			return d.buf, nil
		case err != nil:
			if err != io.EOF {
				err = fmt.Errorf("line %d: %w", d.line, err)
			}
			return nil, err
		}
		return bytes.TrimSuffix(bytes.TrimSuffix(d.buf, []byte("\n")), []byte("\r")), nil
	}
}

// entryLine is an entry line; pointers tell a missing field from an empty
// one.
type entryLine struct {
	K *string `json:"k"`
	V *string `json:"v"`
}

// next returns the next entry, in new slices; io.EOF after the last.
// Blank lines are skipped.
func (d *stateDecoder) next() (key, value []byte, err error) {
	var line []byte
	for {
		if line, err = d.readLine(); err != nil {
			return nil, nil, err
		}
		if len(bytes.TrimSpace(line)) > 0 {
			break
		}
	}
	var e entryLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return nil, nil, fmt.Errorf("line %d: %v", d.line, err)
	}
	if dec.More() {
		return nil, nil, fmt.Errorf("line %d: more than one JSON value", d.line)
	}
	if e.K == nil || e.V == nil {
		return nil, nil, fmt.Errorf(`line %d: want {"k":"…","v":"…"}, both base64`, d.line)
	}
	if key, err = base64.StdEncoding.Strict().DecodeString(*e.K); err != nil {
		return nil, nil, fmt.Errorf("line %d: k: %v", d.line, err)
	}
	if value, err = base64.StdEncoding.Strict().DecodeString(*e.V); err != nil {
		return nil, nil, fmt.Errorf("line %d: v: %v", d.line, err)
	}
	if err := state.CheckKey(key); err != nil {
		return nil, nil, fmt.Errorf("line %d: %v", d.line, err)
	}
	return key, value, nil
}

// Import writes the state file r into the state directory of the
// pipeline at pipelinePath, which must be absent or empty, and commits
// the file's checkpoint (an empty one if it has none), so that the
// pipeline's next run resumes from it. It returns the number of entries
// written.
//
// The file's pipeline name must match. With force, a name that does not
// match is accepted, and a directory holding a badger store is replaced
// (never one holding anything else). Entries are streamed into a new
// directory beside the state directory, in batches, which replaces it only
// once everything is written and committed: a malformed file (the error
// names the line) or a cancelled ctx leaves the state directory as it was.
// It fails with an error wrapping ErrInUse if the pipeline is
// running.
func Import(ctx context.Context, pipelinePath string, r io.Reader, force bool) (n int64, err error) {
	cfg, err := stateConfig(pipelinePath)
	if err != nil {
		return 0, err
	}
	dir := cfg.State.Dir
	dec, err := newStateDecoder(r)
	if err != nil {
		return 0, err
	}
	if dec.header.Pipeline != cfg.Name && !force {
		return 0, fmt.Errorf("the file holds the state of pipeline %q, not %q (--force imports it anyway)", dec.header.Pipeline, cfg.Name)
	}
	empty, err := emptyDir(dir)
	if err != nil {
		return 0, err
	}
	if !empty {
		if !force {
			return 0, fmt.Errorf("state dir %s is not empty: import writes into an empty or absent directory (--force replaces the state in it)", dir)
		}
		if err := checkReplaceable(cfg); err != nil {
			return 0, err
		}
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".import-")
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if n, err = writeState(ctx, tmp, dec); err != nil {
		return n, err
	}
	if !empty {
		if err := checkReplaceable(cfg); err != nil {
			return n, err
		}
		if err := os.RemoveAll(dir); err != nil {
			return n, err
		}
	} else if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return n, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return n, err
	}
	return n, nil
}

// writeState writes dec's entries into a new store in dir and commits the
// checkpoint.
func writeState(ctx context.Context, dir string, dec *stateDecoder) (int64, error) {
	b, err := state.OpenBadger(state.BadgerOptions{Dir: dir, Checkpointed: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return 0, err
	}
	defer b.Close()
	var n int64
	muts := make([]state.Mutation, 0, importBatch)
	flush := func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := b.Apply(muts)
		clear(muts)
		muts = muts[:0]
		if err != nil {
			return fmt.Errorf("line %d: %w", dec.line, err)
		}
		return nil
	}
	for {
		k, v, err := dec.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, err
		}
		muts = append(muts, state.Mutation{Key: k, Value: v})
		n++
		if len(muts) == importBatch {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	if err := flush(); err != nil {
		return n, err
	}
	meta := dec.meta
	if meta == nil {
		meta = []byte{}
	}
	if err := b.Checkpoint(meta); err != nil {
		return n, err
	}
	return n, b.Close()
}

// emptyDir reports whether dir is absent or an empty directory.
func emptyDir(dir string) (bool, error) {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if err == io.EOF {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("state dir %s: %w", dir, err)
	}
	return len(names) == 0, nil
}

// checkReplaceable fails unless the state directory holds a badger store
// that no process has open.
func checkReplaceable(cfg *config.Pipeline) error {
	v, err := state.OpenBadgerView(cfg.State.Dir, nil)
	switch {
	case errors.Is(err, state.ErrLocked):
		return stateInUseError{cfg.State.Dir}
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("state dir %s holds files but no badger state: not replacing it; empty it yourself", cfg.State.Dir)
	case err != nil:
		return err
	}
	return v.Close()
}
