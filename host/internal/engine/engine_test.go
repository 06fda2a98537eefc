package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/abi/wjson"
	"github.com/weir-stream/weir/host/internal/record"
)

// run runs a pipeline of sources → steps → one raw stdout-like sink and
// returns the sink's output, the dead letters as decoded JSON, and the
// summary.
func run(t *testing.T, sources []Source, steps []Step, format SinkFormat, batchSize int) (string, []map[string]any, Summary) {
	t.Helper()
	var out, dlq bytes.Buffer
	p := &Pipeline{
		Sources:    sources,
		Steps:      steps,
		Sinks:      []Sink{NewWriterSink("out", "buffer", &out, format, false)},
		DeadLetter: NewDeadLetterWriter("buffer", &dlq, false),
		BatchSize:  batchSize,
	}
	sum, err := p.Run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var dead []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(dlq.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("dead letter %q is not JSON: %v", line, err)
		}
		dead = append(dead, m)
	}
	return out.String(), dead, sum
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "input")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFileSource(t *testing.T) {
	tests := []struct {
		name     string
		content  string
		format   Format
		want     string
		wantDead []string // "line:reason substring"
	}{
		{
			name:    "json lines",
			content: "{\"a\":1}\n\n  {\"b\":2}  \r\n[3]\n",
			format:  FormatJSONLines,
			want:    "{\"a\":1}\n{\"b\":2}\n[3]\n",
		},
		{
			name:     "json lines with a bad line",
			content:  "{\"a\":1}\nnot json\n{\"b\":2}",
			format:   FormatJSONLines,
			want:     "{\"a\":1}\n{\"b\":2}\n",
			wantDead: []string{"2:not JSON"},
		},
		{
			name:    "auto detects an array",
			content: "  [\n {\"a\": [1, \"],\"]},\n {\"b\":\n 2},\n\"x\\\"y\" ]\n",
			format:  FormatAuto,
			want:    "{\"a\": [1, \"],\"]}\n{\"b\":2}\n\"x\\\"y\"\n",
		},
		{
			name:    "empty array",
			content: "[]",
			format:  FormatJSONArray,
		},
		{
			name:     "array with a bad element",
			content:  "[{\"a\":1},\n{\"a\":tru},\n{\"a\":3}]",
			format:   FormatJSONArray,
			want:     "{\"a\":1}\n{\"a\":3}\n",
			wantDead: []string{"2:not JSON"},
		},
		{
			name:    "raw lines",
			content: "not json\nalso not\n",
			format:  FormatLines,
			want:    "not json\nalso not\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := NewFileSource("in", writeFile(t, tt.content), tt.format)
			got, dead, sum := run(t, []Source{src}, nil, SinkJSON, 2)
			if tt.format == FormatLines {
				got, dead, sum = run(t, []Source{NewFileSource("in", writeFile(t, tt.content), tt.format)}, nil, SinkRaw, 2)
			}
			if got != tt.want {
				t.Errorf("output = %q, want %q", got, tt.want)
			}
			if len(dead) != len(tt.wantDead) {
				t.Fatalf("dead letters = %v, want %v", dead, tt.wantDead)
			}
			for i, w := range tt.wantDead {
				line, reason, _ := strings.Cut(w, ":")
				if got := dead[i]["line"]; got != json.Number(line) && toString(got) != line {
					t.Errorf("dead letter %d line = %v, want %s", i, got, line)
				}
				if !strings.Contains(dead[i]["reason"].(string), reason) || dead[i]["stage"] != "in" {
					t.Errorf("dead letter %d = %v, want reason containing %q", i, dead[i], reason)
				}
			}
			if sum.Sources[0].Out+sum.Sources[0].Dead != int64(strings.Count(tt.want, "\n")+len(tt.wantDead)) {
				t.Errorf("source counts %+v do not add up", sum.Sources[0])
			}
		})
	}
}

func toString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestFileSourceStructureErrors(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{name: "unclosed array", content: "[1, 2", want: "not closed"},
		{name: "missing comma", content: "[1 2]", want: "expected ','"},
		{name: "trailing data", content: "[1] 2", want: "after the JSON array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Pipeline{
				Sources:    []Source{NewFileSource("in", writeFile(t, tt.content), FormatJSONArray)},
				Sinks:      []Sink{NewDiscardSink("out")},
				DeadLetter: NewDeadLetterWriter("buffer", io.Discard, false),
			}
			_, err := p.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), ":1") {
				t.Fatalf("Run error = %v, want it to contain %q and the line", err, tt.want)
			}
		})
	}
}

func TestGenerator(t *testing.T) {
	end := int64(5)
	cfg := GeneratorConfig{
		Seed: 7,
		Key:  "dev",
		Fields: []GenField{
			{Name: "id", Kind: GenSequence, Start: 1, End: end, Bounded: true},
			{Name: "dev", Kind: GenRandomChoice, Values: [][]byte{[]byte(`"a"`), []byte(`"b"`)}},
			{Name: "n", Kind: GenRandomInt, MinInt: -3, MaxInt: 3},
			{Name: "f", Kind: GenRandomFloat, Min: 1, Max: 2, Decimals: 2},
			{Name: "s", Kind: GenRandomString, Length: 4},
			{Name: "ok", Kind: GenRandomBool},
			{Name: "c", Kind: GenConstant, Value: []byte(`{"x":1}`)},
		},
	}
	first, _, sum := run(t, []Source{NewGenerator("gen", cfg)}, []Step{step(keyRecorder{})}, SinkRaw, 2)
	again, _, _ := run(t, []Source{NewGenerator("gen", cfg)}, []Step{step(keyRecorder{})}, SinkRaw, 3)
	if first != again {
		t.Fatalf("same seed, different output:\n%s\n%s", first, again)
	}
	lines := strings.Split(strings.TrimSpace(first), "\n")
	if len(lines) != 5 || sum.Sources[0].Out != 5 {
		t.Fatalf("got %d records (summary %d), want 5 (the sequence 1..5):\n%s", len(lines), sum.Sources[0].Out, first)
	}
	for i, line := range lines {
		key, doc, _ := strings.Cut(line, " ")
		var m struct {
			ID  int64   `json:"id"`
			Dev string  `json:"dev"`
			N   int64   `json:"n"`
			F   float64 `json:"f"`
			S   string  `json:"s"`
		}
		if err := json.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("record %q: %v", doc, err)
		}
		if m.ID != int64(i+1) || key != m.Dev || m.N < -3 || m.N > 3 || m.F < 1 || m.F > 2 || len(m.S) != 4 {
			t.Errorf("record %d = %s (key %q)", i, doc, key)
		}
		if !strings.HasPrefix(doc, `{"id":`) || !strings.HasSuffix(doc, `"c":{"x":1}}`) {
			t.Errorf("record %d fields out of order: %s", i, doc)
		}
	}

	// A count wraps bounded sequences.
	cfg.Count = 7
	wrapped, _, _ := run(t, []Source{NewGenerator("gen", cfg)}, nil, SinkRaw, 4)
	if n := strings.Count(wrapped, "\n"); n != 7 || !strings.Contains(wrapped, "\n{\"id\":1,") {
		t.Fatalf("count 7 produced %d records:\n%s", n, wrapped)
	}
}

// step makes a Step whose every worker shares op; only for operators
// without per-worker state.
func step(op Operator) Step {
	return Step{Name: op.Name(), New: func(context.Context) (Operator, error) { return op, nil }}
}

// keyByStep keys records by the string or number at path, as key_by does
// (package keyby, which imports this one), and dead-letters the others.
func keyByStep(name string, path []string) Step {
	return Step{Name: name, KeyBy: true, New: func(context.Context) (Operator, error) { return fieldKeyer{name, path}, nil }}
}

type fieldKeyer struct {
	name string
	path []string
}

func (k fieldKeyer) Name() string                { return k.name }
func (k fieldKeyer) Close(context.Context) error { return nil }
func (k fieldKeyer) Process(_ context.Context, in []record.Record, out *record.Output) error {
	for _, r := range in {
		v, err := wjson.Get(r.Value, k.path...)
		if err != nil || !v.Exists() {
			out.Dead = append(out.Dead, record.DeadLetter{Record: r, Stage: k.name, Reason: "field not found"})
			continue
		}
		r.Key = out.Arena.Copy([]byte(v.String()))
		out.Records = append(out.Records, r)
	}
	return nil
}

// keyRecorder is a test operator that prefixes each value with its key.
type keyRecorder struct{}

func (keyRecorder) Name() string                { return "keys" }
func (keyRecorder) Close(context.Context) error { return nil }
func (keyRecorder) Process(_ context.Context, in []record.Record, out *record.Output) error {
	for _, r := range in {
		v := out.Arena.Copy(append(append(append([]byte{}, r.Key...), ' '), r.Value...))
		r.Value = v
		out.Records = append(out.Records, r)
	}
	return nil
}

func TestJSONSinkRejectsNonJSON(t *testing.T) {
	src := NewFileSource("in", writeFile(t, "{\"a\":\n 1}\nplain\n"), FormatLines)
	// Raw lines reach a JSON sink; none of the three is JSON on its own.
	got, dead, sum := run(t, []Source{src}, nil, SinkJSON, 512)
	if got != "" {
		t.Errorf("output %q, want nothing", got)
	}
	if len(dead) != 3 || sum.Sinks[0].Dead != 3 {
		t.Fatalf("dead = %v, sink summary %+v", dead, sum.Sinks[0])
	}
	for _, d := range dead {
		if d["stage"] != "out" || !strings.Contains(d["reason"].(string), "not JSON") {
			t.Errorf("dead letter = %v", d)
		}
	}
}

func TestDeadLetterFormat(t *testing.T) {
	var buf bytes.Buffer
	w := NewDeadLetterWriter("buf", &buf, false)
	dl := record.DeadLetter{
		Record: record.Record{
			Key: []byte{0xff, 0x00}, Value: []byte("v\"\n"), Timestamp: 42,
			Headers: []record.Header{{Key: "h", Value: []byte("x")}, {Key: "bin", Value: []byte{0xfe}}},
			Origin:  record.Origin{Source: "src", Partition: 3, Offset: 9},
		},
		Stage: "op", Reason: "boom",
	}
	if err := w.Write(&dl, nil); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	want := `{"stage":"op","reason":"boom","source":"src","partition":3,"offset":9,"timestamp":42,"key_base64":"/wA=","value":"v\"\n","headers":{"h":"x","bin":{"base64":"/g=="}}}` + "\n"
	if buf.String() != want {
		t.Fatalf("dead letter:\n got %s\nwant %s", buf.String(), want)
	}
	if !json.Valid(buf.Bytes()) {
		t.Fatal("dead letter is not JSON")
	}
}

// TestStopDrains stops an unbounded generator and checks that every record
// it read reached the sink.
func TestStopDrains(t *testing.T) {
	cfg := GeneratorConfig{Fields: []GenField{{Name: "i", Kind: GenSequence}}}
	var out bytes.Buffer
	p := &Pipeline{
		Sources:    []Source{NewGenerator("gen", cfg)},
		Sinks:      []Sink{NewWriterSink("out", "buffer", &out, SinkRaw, false)},
		DeadLetter: NewDeadLetterWriter("buffer", io.Discard, false),
		BatchSize:  64,
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	sum, err := p.Run(ctx)
	if err != nil {
		t.Fatalf("Run after stop: %v", err)
	}
	lines := strings.Count(out.String(), "\n")
	if lines == 0 || int64(lines) != sum.Sources[0].Out || sum.Sinks[0].Out != sum.Sources[0].Out {
		t.Fatalf("read %d, wrote %d lines, sink counted %d", sum.Sources[0].Out, lines, sum.Sinks[0].Out)
	}
}

// TestStdinStop checks that a stop is honoured while stdin blocks.
func TestStdinStop(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	var out bytes.Buffer
	p := &Pipeline{
		Sources:    []Source{NewReaderSource("stdin", "standard input", pr, FormatJSONLines)},
		Sinks:      []Sink{NewWriterSink("out", "buffer", &out, SinkRaw, false)},
		DeadLetter: NewDeadLetterWriter("buffer", io.Discard, false),
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := p.Run(ctx); done <- err }()
	pw.Write([]byte("{\"a\":1}\n"))
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after stop while stdin blocked")
	}
}

type failingOp struct{}

func (failingOp) Name() string                { return "fail" }
func (failingOp) Close(context.Context) error { return nil }
func (failingOp) Process(context.Context, []record.Record, *record.Output) error {
	return errors.New("backend down")
}

func TestOperatorFailureStopsPipeline(t *testing.T) {
	cfg := GeneratorConfig{Fields: []GenField{{Name: "i", Kind: GenSequence}}}
	p := &Pipeline{
		Sources:    []Source{NewGenerator("gen", cfg)},
		Steps:      []Step{step(failingOp{})},
		Sinks:      []Sink{NewDiscardSink("out")},
		DeadLetter: NewDeadLetterWriter("buffer", io.Discard, false),
	}
	_, err := p.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), `operator "fail": backend down`) {
		t.Fatalf("Run = %v", err)
	}
}
