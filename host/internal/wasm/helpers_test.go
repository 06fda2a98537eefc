package wasm

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/record"
)

// logLine is one captured log record, with its attributes flattened.
type logLine struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

// logCapture is a slog.Handler that keeps every record, for assertions.
type logCapture struct {
	mu    *sync.Mutex
	lines *[]logLine
	attrs []slog.Attr
}

func newLogCapture() *logCapture {
	return &logCapture{mu: new(sync.Mutex), lines: new([]logLine)}
}

func (h *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (h *logCapture) Handle(_ context.Context, r slog.Record) error {
	l := logLine{Level: r.Level, Msg: r.Message, Attrs: make(map[string]string)}
	for _, a := range h.attrs {
		l.Attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		l.Attrs[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	*h.lines = append(*h.lines, l)
	h.mu.Unlock()
	return nil
}

func (h *logCapture) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(slices.Clip(h.attrs), as...)
	return &c
}

func (h *logCapture) WithGroup(string) slog.Handler { return h }

// Lines returns the captured lines matching keep (all when nil).
func (h *logCapture) Lines(keep func(logLine) bool) []logLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []logLine
	for _, l := range *h.lines {
		if keep == nil || keep(l) {
			out = append(out, l)
		}
	}
	return out
}

func (h *logCapture) logger() *slog.Logger { return slog.New(h) }

// newRuntime returns a Runtime closed when the test ends, logging to log
// (discarded when nil).
func newRuntime(t testing.TB, log *slog.Logger) *Runtime {
	t.Helper()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rt, err := NewRuntime(context.Background(), RuntimeOptions{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

// testdata reads testdata/<name>.wasm.
func testdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// watConfig is the PluginConfig for testdata/<name>.wasm as a map called
// after the module.
func watConfig(t testing.TB, name string) PluginConfig {
	return PluginConfig{
		Operator: name,
		Path:     "testdata/" + name + ".wasm",
		Wasm:     testdata(t, name),
		Op:       abi.OpMap,
	}
}

// mustLoad loads cfg and returns a worker, both closed when the test ends.
func mustLoad(t testing.TB, rt *Runtime, cfg PluginConfig) (*Plugin, *Worker) {
	t.Helper()
	ctx := context.Background()
	p, err := rt.Load(ctx, cfg)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	t.Cleanup(func() { p.Close(ctx) })
	w, err := p.NewWorker(ctx)
	if err != nil {
		t.Fatalf("NewWorker: %v", err)
	}
	t.Cleanup(func() { w.Close(ctx) })
	return p, w
}

// recs makes one record per value, keyed "k<i>", with origin offset i.
// A value "<key>=<value>" sets the key too.
func recs(values ...string) []record.Record {
	rs := make([]record.Record, len(values))
	for i, v := range values {
		key := fmt.Sprintf("k%d", i)
		if k, val, ok := strings.Cut(v, "="); ok {
			key, v = k, val
		}
		rs[i] = record.Record{
			Key:       []byte(key),
			Value:     []byte(v),
			Timestamp: int64(1000 + i),
			Headers:   []record.Header{{Key: "n", Value: []byte(fmt.Sprint(i))}},
			Origin:    record.Origin{Source: "test", Partition: 0, Offset: int64(i)},
		}
	}
	return rs
}

// values returns the values of rs as strings.
func values(rs []record.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r.Value)
	}
	return out
}

// deadValues returns the values of the dead letters' records.
func deadValues(ds []record.DeadLetter) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = string(d.Record.Value)
	}
	return out
}

// process runs in through w into a fresh record.Output, failing the test on error.
func process(t testing.TB, w *Worker, in []record.Record) *record.Output {
	t.Helper()
	out := new(record.Output)
	if err := w.Process(context.Background(), in, out); err != nil {
		t.Fatalf("Process: %v", err)
	}
	return out
}

// sameBytes reports whether a and b share their first byte in memory.
func sameBytes(a, b []byte) bool {
	return len(a) > 0 && len(b) > 0 && &a[0] == &b[0]
}
