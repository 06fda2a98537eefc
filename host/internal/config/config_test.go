package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// setupDir makes a pipeline directory holding the files the test documents
// refer to, and makes it the working directory so positions read
// "pipeline.yaml:line:col".
func setupDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "readings.json"), "[]")
	mustWrite(t, filepath.Join(dir, "other.json"), "{}\n")
	mustWrite(t, filepath.Join(dir, "plugins", "anomaly", "main.go"), "package main\n")
	mustWrite(t, filepath.Join(dir, "plugins", "double.wasm"), "\x00asm")
	mustWrite(t, filepath.Join(dir, "plugins", "notes.txt"), "x")
	mustWrite(t, filepath.Join(dir, "certs", "ca.pem"), "ca")
	mustWrite(t, filepath.Join(dir, "certs", "client.pem"), "cert")
	mustWrite(t, filepath.Join(dir, "certs", "client.key"), "key")
	if err := os.MkdirAll(filepath.Join(dir, "plugins", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	// t.TempDir may sit behind a symlink; use the name os.Getwd reports.
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

func mustWrite(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mapEnv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

const fullPipeline = `version: 1
name: sensor-anomaly
engine:
  batch_size: 128
sources:
  - name: readings
    type: file
    path: readings.json
  - name: gen
    type: generator
    count: 1000
    seed: 42
    key: id
    fields:
      - {name: id, kind: sequence, start: 1, end: 100}
      - {name: temp, kind: random_float, min: 17, max: 36, decimals: 2}
      - {name: n, kind: random_int, min: 0, max: 9}
      - {name: dev, kind: random_choice, values: [a, 2, {x: y}]}
      - {name: s, kind: random_string, length: 8}
      - {name: ok, kind: random_bool}
      - {name: c, kind: constant, value: anything-yaml}
      - {name: ts, kind: timestamp}
  - name: in
    type: stdin
operators:
  - name: by-id
    type: key_by
    field: meta.id
    repartition: true
  - name: detect
    type: flat_map
    plugin: plugins/anomaly
    config:
      zeta: 1
      alpha: [1.50, 2e3, 0x10, "q\"uote\n", null, true, 2024-01-02]
      mid: {b: 1, a: 2}
    memory_limit_pages: 2048
    timeout: 1.5s
  - name: double
    type: map
    plugin: plugins/double.wasm
    batch_size: 64
    timeout: none
    max_state_value: 1MiB
    max_batch_state: 4MiB
    max_batch_output: 1.5MiB
sinks:
  - name: out
    type: stdout
    format: raw
  - name: file-out
    type: file
    path: out/result.jsonl
dead_letter:
  type: file
  path: out/dlq.jsonl
`

func TestParseValidPipeline(t *testing.T) {
	dir := setupDir(t)
	p, err := Parse("pipeline.yaml", []byte(fullPipeline), nil, nil)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if p.File != filepath.Join(dir, "pipeline.yaml") || p.Dir != dir {
		t.Errorf("File, Dir = %q, %q", p.File, p.Dir)
	}
	if p.Version != 1 || p.Name != "sensor-anomaly" {
		t.Errorf("Version, Name = %d, %q", p.Version, p.Name)
	}
	if e := p.Engine; e.BatchSize != 128 || e.BatchLinger != 20*time.Millisecond || e.QueueDepth != 4 || e.Parallelism != 1 {
		t.Errorf("Engine = %+v", e)
	}

	if len(p.Sources) != 3 {
		t.Fatalf("%d sources", len(p.Sources))
	}
	readings, gen, in := p.Sources[0], p.Sources[1], p.Sources[2]
	if readings.Path != filepath.Join(dir, "readings.json") || readings.Format != FormatAuto {
		t.Errorf("readings = %q %q", readings.Path, readings.Format)
	}
	if in.Type != SourceStdin || in.Format != FormatJSONL {
		t.Errorf("stdin source = %q %q", in.Type, in.Format)
	}
	if gen.Count != 1000 || gen.Rate != 0 || gen.Seed != 42 || gen.Key != "id" || len(gen.Fields) != 8 {
		t.Errorf("generator = %+v", gen)
	}
	id, temp, n, dev, s, c := gen.Fields[0], gen.Fields[1], gen.Fields[2], gen.Fields[3], gen.Fields[4], gen.Fields[6]
	if id.Kind != GenSequence || id.Start != 1 || id.End == nil || *id.End != 100 {
		t.Errorf("id = %+v", id)
	}
	if temp.Min != 17 || temp.Max != 36 || temp.Decimals != 2 {
		t.Errorf("temp = %+v", temp)
	}
	if n.MinInt != 0 || n.MaxInt != 9 {
		t.Errorf("n = %+v", n)
	}
	if len(dev.Values) != 3 || string(dev.Values[0]) != `"a"` || string(dev.Values[1]) != `2` || string(dev.Values[2]) != `{"x":"y"}` {
		t.Errorf("dev values = %q", dev.Values)
	}
	if s.Length != 8 || string(c.Value) != `"anything-yaml"` {
		t.Errorf("s, c = %+v, %q", s, c.Value)
	}
	if id.Where != `sources[1] "gen".fields[0] "id"` {
		t.Errorf("id.Where = %q", id.Where)
	}

	if len(p.Operators) != 3 {
		t.Fatalf("%d operators", len(p.Operators))
	}
	byID, detect, double := p.Operators[0], p.Operators[1], p.Operators[2]
	if byID.Type != OperatorKeyBy || byID.Field != "meta.id" || strings.Join(byID.KeyPath, "|") != "meta|id" || byID.Repartition != RepartitionAlways {
		t.Errorf("by-id = %+v", byID)
	}
	if detect.Plugin != filepath.Join(dir, "plugins", "anomaly") || detect.PluginKind != PluginSource {
		t.Errorf("detect plugin = %q %q", detect.Plugin, detect.PluginKind)
	}
	wantConfig := `{"zeta":1,"alpha":[1.50,2e3,16,"q\"uote\n",null,true,"2024-01-02"],"mid":{"b":1,"a":2}}`
	if string(detect.ConfigJSON) != wantConfig {
		t.Errorf("ConfigJSON = %s\nwant         %s", detect.ConfigJSON, wantConfig)
	}
	if detect.BatchSize != 128 || detect.MemoryLimitPages != 2048 || detect.Timeout != 1500*time.Millisecond {
		t.Errorf("detect = %d %d %v", detect.BatchSize, detect.MemoryLimitPages, detect.Timeout)
	}
	if double.PluginKind != PluginWasm || double.BatchSize != 64 || double.MemoryLimitPages != DefaultMemoryLimitPages ||
		double.Timeout != NoTimeout || string(double.ConfigJSON) != "{}" {
		t.Errorf("double = %+v", double)
	}
	if want := (PluginLimits{StateValue: 1 << 20, StateBytes: 4 << 20, OutputBytes: 3 << 19}); double.Limits != want || detect.Limits != (PluginLimits{}) {
		t.Errorf("limits: double %+v (want %+v), detect %+v", double.Limits, want, detect.Limits)
	}

	if len(p.Sinks) != 2 || p.Sinks[0].Format != SinkFormatRaw || p.Sinks[1].Format != SinkFormatJSON ||
		p.Sinks[1].Path != filepath.Join(dir, "out", "result.jsonl") {
		t.Errorf("sinks = %+v", p.Sinks)
	}
	if p.DeadLetter.Type != DeadLetterFile || p.DeadLetter.Path != filepath.Join(dir, "out", "dlq.jsonl") {
		t.Errorf("dead letter = %+v", p.DeadLetter)
	}

	// Later stages report errors in the same format.
	err = detect.Errorf("plugin", "build failed: %s", "exit 1")
	want := `pipeline.yaml:32:13: operators[1] "detect".plugin: build failed: exit 1`
	if err.Error() != want {
		t.Errorf("Meta.Errorf = %q, want %q", err, want)
	}
	if got := detect.Errorf("", "stuck").Error(); got != `pipeline.yaml:30:5: operators[1] "detect": stuck` {
		t.Errorf("Meta.Errorf on element = %q", got)
	}
	if got := detect.At("config").String(); got != "pipeline.yaml:34:7" {
		t.Errorf("config position = %s", got)
	}
}

func TestParseDefaults(t *testing.T) {
	setupDir(t)
	doc := `name: minimal
sources:
  - {name: g, type: generator, fields: [{name: x, kind: sequence}]}
operators:
  - {name: m, type: map, plugin: plugins/double.wasm, config: null}
sinks:
  - {name: out, type: stdout}
`
	p, err := Parse("pipeline.yaml", []byte(doc), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Version != 1 || p.Engine.BatchSize != DefaultBatchSize || p.Engine.BatchLinger != DefaultBatchLinger ||
		p.Engine.QueueDepth != DefaultQueueDepth || p.Engine.Parallelism != DefaultParallelism {
		t.Errorf("engine defaults = %+v", p.Engine)
	}
	g := p.Sources[0]
	if g.Seed != DefaultSeed || g.Count != 0 || g.Key != "" || g.Fields[0].Start != 0 || g.Fields[0].End != nil {
		t.Errorf("generator defaults = %+v", g)
	}
	op := p.Operators[0]
	if op.BatchSize != DefaultBatchSize || op.MemoryLimitPages != DefaultMemoryLimitPages || string(op.ConfigJSON) != "{}" {
		t.Errorf("operator defaults = %+v", op)
	}
	if p.Sinks[0].Format != SinkFormatJSON || p.DeadLetter.Type != DeadLetterStderr {
		t.Errorf("sink/dead letter defaults = %+v %+v", p.Sinks[0], p.DeadLetter)
	}
}

// parseErrorCases are documents with errors, one class per case; FuzzParse
// seeds from them too.
var parseErrorCases = []struct {
	name string
	doc  string
	env  map[string]string
	want []string // every line of the error, in order; $DIR is the pipeline directory
}{
	{
		name: "unknown field with suggestion",
		doc: `name: p
sources: [{name: g, type: generator, fields: [{name: x, kind: random_bool}]}]
operators:
  - name: detect
    type: flat_map
    plugn: plugins/anomaly
sinks: [{name: out, type: stdout}]
`,
		want: []string{
			`pipeline.yaml:4:5: operators[0] "detect": missing required field "plugin"`,
			`pipeline.yaml:6:5: operators[0] "detect": unknown field "plugn" (did you mean "plugin"?)`,
		},
	},
	{
		name: "unknown top-level field without suggestion",
		doc: `name: p
sources: [{name: g, type: generator, fields: [{name: x, kind: random_bool}]}]
sinks: [{name: out, type: stdout}]
wibble: 1
Sinks: []
`,
		want: []string{
			`pipeline.yaml:4:1: unknown field "wibble"`,
			`pipeline.yaml:5:1: unknown field "Sinks" (did you mean "sinks"?)`,
		},
	},
	{
		name: "field that does not apply to the type",
		doc: `name: p
sources:
  - {name: g, type: generator, path: x.json, fields: [{name: x, kind: random_bool, min: 1}]}
sinks: [{name: out, type: stdout, path: out.txt}]
`,
		want: []string{
			`pipeline.yaml:3:32: sources[0] "g": field "path" does not apply to generator sources`,
			`pipeline.yaml:3:84: sources[0] "g".fields[0] "x": field "min" does not apply to random_bool fields`,
			`pipeline.yaml:4:35: sinks[0] "out": field "path" does not apply to stdout sinks`,
		},
	},
	{
		name: "wrong types",
		doc: `name: {a: 1}
engine:
  batch_size: big
  queue_depth: 2.5
sources: {name: g}
sinks:
  - name: out
    type: [stdout]
  - 7
`,
		want: []string{
			`pipeline.yaml:1:7: name: expected a string, got a mapping`,
			`pipeline.yaml:3:15: engine.batch_size: expected an integer, got "big"`,
			`pipeline.yaml:4:16: engine.queue_depth: expected an integer, got float 2.5`,
			`pipeline.yaml:5:10: sources: expected a list, got a mapping`,
			`pipeline.yaml:8:11: sinks[0] "out".type: expected a string, got a list`,
			`pipeline.yaml:9:5: sinks[1]: expected a mapping, got integer 7`,
		},
	},
	{
		name: "missing required fields",
		doc: `version: 1
sources:
  - type: file
  - name: g
    type: generator
operators:
  - {name: k, type: key_by}
sinks: []
dead_letter: {type: file}
`,
		want: []string{
			`pipeline.yaml:1:1: missing required field "name"`,
			`pipeline.yaml:3:5: sources[0]: missing required field "name"`,
			`pipeline.yaml:3:5: sources[0]: missing required field "path"`,
			`pipeline.yaml:4:5: sources[1] "g": missing required field "fields"`,
			`pipeline.yaml:7:5: operators[0] "k": missing required field "field"`,
			`pipeline.yaml:8:8: sinks: at least one sink is required`,
			`pipeline.yaml:9:14: dead_letter: missing required field "path"`,
		},
	},
	{
		name: "bad enums and ranges",
		doc: `version: 2
name: Bad_Name
engine: {batch_size: 0, parallelism: 100000}
sources:
  - {name: s, type: stdin, format: json_array}
  - {name: f, type: file, path: readings.json, format: xml}
operators:
  - {name: d, type: flatmap}
  - {name: m, type: map, plugin: plugins/double.wasm, memory_limit_pages: 70000}
sinks: [{name: out, type: stdout, format: text}]
`,
		want: []string{
			`pipeline.yaml:1:10: version: unsupported version 2 (want 1)`,
			`pipeline.yaml:2:7: name: invalid name "Bad_Name": must match [a-z0-9][a-z0-9_.-]*`,
			`pipeline.yaml:3:22: engine.batch_size: must be between 1 and 65536, got 0`,
			`pipeline.yaml:3:38: engine.parallelism: must be between 1 and 1024, got 100000`,
			`pipeline.yaml:5:36: sources[0] "s".format: invalid value "json_array" (want one of jsonl, lines)`,
			`pipeline.yaml:6:56: sources[1] "f".format: invalid value "xml" (want one of auto, jsonl, json_array, lines)`,
			`pipeline.yaml:8:21: operators[0] "d".type: invalid value "flatmap" (want one of key_by, map, flat_map, filter, window, rolling, lookup, table_join, join; did you mean "flat_map"?)`,
			`pipeline.yaml:9:75: operators[1] "m".memory_limit_pages: must be between 1 and 65536, got 70000`,
			`pipeline.yaml:10:43: sinks[0] "out".format: invalid value "text" (want one of json, raw)`,
		},
	},
	{
		name: "duplicate names and keys",
		doc: `name: p
name: q
sources:
  - {name: a, type: stdin}
  - {name: a-b, type: generator, fields: [{name: x, kind: random_bool}, {name: x, kind: timestamp}]}
  - {name: a_b, type: stdin}
operators:
  - {name: a, type: key_by, field: x, field: y}
sinks: [{name: out, type: stdout}]
`,
		want: []string{
			`pipeline.yaml:2:1: duplicate field "name" (first at pipeline.yaml:1:1)`,
			`pipeline.yaml:5:80: sources[1] "a-b".fields[1] "x": duplicate field name "x" (also sources[1] "a-b".fields[0] "x")`,
			`pipeline.yaml:6:12: sources[2] "a_b": name "a_b" maps to the same environment variables (WEIR_SOURCES_A_B_*) as sources[1] "a-b"`,
			`pipeline.yaml:6:23: sources[2] "a_b": only one source may read stdin (also sources[0] "a")`,
			`pipeline.yaml:8:12: operators[0] "a": duplicate stage name "a" (also sources[0] "a" at pipeline.yaml:4:12)`,
			`pipeline.yaml:8:39: operators[0] "a": duplicate field "field" (first at pipeline.yaml:8:29)`,
		},
	},
	{
		name: "missing and unusable paths",
		doc: `name: p
sources:
  - {name: f, type: file, path: nope.json}
  - {name: d, type: file, path: plugins}
operators:
  - {name: a, type: map, plugin: plugins/missing}
  - {name: b, type: map, plugin: plugins/notes.txt}
  - {name: c, type: map, plugin: plugins/empty}
sinks:
  - {name: out, type: file, path: nodir/out.jsonl}
  - {name: out2, type: file, path: out}
dead_letter: {type: file, path: nodir/dlq.jsonl}
`,
		want: []string{
			`pipeline.yaml:3:33: sources[0] "f".path: file "nope.json" does not exist (resolved to $DIR/nope.json)`,
			`pipeline.yaml:4:33: sources[1] "d".path: "plugins" is a directory, not a file`,
			`pipeline.yaml:6:34: operators[0] "a".plugin: plugin "plugins/missing" does not exist (resolved to $DIR/plugins/missing)`,
			`pipeline.yaml:7:34: operators[1] "b".plugin: plugin "plugins/notes.txt" must be a .wasm file or a directory of plugin source`,
			`pipeline.yaml:8:34: operators[2] "c".plugin: plugin directory "plugins/empty" holds no plugin source (Go or C files, a Cargo.toml, or an AssemblyScript package)`,
			`pipeline.yaml:10:35: sinks[0] "out".path: directory $DIR/nodir does not exist`,
			`pipeline.yaml:11:36: sinks[1] "out2".path: "out" is a directory`,
			`pipeline.yaml:12:33: dead_letter.path: directory $DIR/nodir does not exist`,
		},
	},
	{
		name: "bad durations",
		doc: `name: p
engine: {batch_linger: 20}
sources: [{name: g, type: generator, fields: [{name: x, kind: random_bool}]}]
operators:
  - {name: a, type: map, plugin: plugins/double.wasm, timeout: soon}
  - {name: b, type: map, plugin: plugins/double.wasm, timeout: -1s}
sinks: [{name: out, type: stdout}]
`,
		want: []string{
			`pipeline.yaml:2:24: engine.batch_linger: invalid duration "20" (use Go syntax such as 20ms, 1.5s or 2m)`,
			`pipeline.yaml:5:64: operators[0] "a".timeout: invalid duration "soon" (use Go syntax such as 20ms, 1.5s or 2m)`,
			`pipeline.yaml:6:64: operators[1] "b".timeout: must not be negative, got -1s`,
		},
	},
	{
		name: "plugin limits",
		doc: `name: p
sources: [{name: g, type: generator, fields: [{name: x, kind: random_bool}]}]
operators:
  - {name: a, type: map, plugin: plugins/double.wasm, timeout: 0s}
  - {name: b, type: map, plugin: plugins/double.wasm, max_state_value: 17MiB, max_batch_state: lots}
  - {name: c, type: map, plugin: plugins/double.wasm, max_batch_output: 0}
sinks: [{name: out, type: stdout}]
`,
		want: []string{
			`pipeline.yaml:4:64: operators[0] "a".timeout: must be greater than 0; write none for no deadline (a plugin that never returns then holds its worker)`,
			`pipeline.yaml:5:72: operators[1] "b".max_state_value: must be at most 16777216 bytes (16MiB), got 17MiB`,
			`pipeline.yaml:5:96: operators[1] "b".max_batch_state: invalid size "lots" (want a positive number of bytes, or a number with KiB, MiB, GiB, KB, MB or GB)`,
			`pipeline.yaml:6:73: operators[2] "c".max_batch_output: invalid size "0" (want a positive number of bytes, or a number with KiB, MiB, GiB, KB, MB or GB)`,
		},
	},
	{
		name: "generator field checks",
		doc: `name: p
sources:
  - name: g
    type: generator
    key: idd
    rate: -1
    fields:
      - {name: id, kind: sequence, start: 5, end: 1}
      - {name: f, kind: random_float, min: 2, max: 1, decimals: 20}
      - {name: i, kind: random_int, min: 1.5}
      - {name: c, kind: random_choice, values: []}
      - {name: s, kind: random_string}
      - {name: k, kind: constant}
      - {kind: coin}
sinks: [{name: out, type: stdout}]
`,
		want: []string{
			`pipeline.yaml:5:10: sources[0] "g".key: key "idd" is not one of the generator's fields (did you mean "id"?)`,
			`pipeline.yaml:6:11: sources[0] "g".rate: must not be negative, got -1`,
			`pipeline.yaml:8:51: sources[0] "g".fields[0] "id".end: end (1) must not be less than start (5)`,
			`pipeline.yaml:9:52: sources[0] "g".fields[1] "f".max: max (1) must not be less than min (2)`,
			`pipeline.yaml:9:65: sources[0] "g".fields[1] "f".decimals: must be between 0 and 15, got 20`,
			`pipeline.yaml:10:9: sources[0] "g".fields[2] "i": missing required field "max"`,
			`pipeline.yaml:10:42: sources[0] "g".fields[2] "i".min: expected an integer, got float 1.5`,
			`pipeline.yaml:11:48: sources[0] "g".fields[3] "c".values: at least one value is required`,
			`pipeline.yaml:12:9: sources[0] "g".fields[4] "s": missing required field "length"`,
			`pipeline.yaml:13:9: sources[0] "g".fields[5] "k": missing required field "value"`,
			`pipeline.yaml:14:9: sources[0] "g".fields[6]: missing required field "name"`,
			`pipeline.yaml:14:16: sources[0] "g".fields[6].kind: invalid value "coin" (want one of sequence, random_float, random_int, random_choice, random_string, random_bool, constant, timestamp)`,
		},
	},
	{
		name: "key_by field path and config values JSON cannot hold",
		doc: `name: p
sources: [{name: g, type: generator, fields: [{name: x, kind: random_bool}]}]
operators:
  - {name: k, type: key_by, field: a..b}
  - {name: m, type: map, plugin: plugins/double.wasm, config: {lim: .inf, ok: 1, t: !custom x}}
sinks: [{name: out, type: stdout}]
`,
		want: []string{
			`pipeline.yaml:4:36: operators[0] "k".field: invalid field path "a..b": empty segment (use a.b.c)`,
			`pipeline.yaml:5:69: operators[1] "m".config.lim: .inf has no JSON equivalent`,
			`pipeline.yaml:5:85: operators[1] "m".config.t: unsupported YAML tag "!custom"`,
		},
	},
	{
		name: "key_by repartition not a boolean",
		doc: `name: p
sources: [{name: g, type: generator, fields: [{name: x, kind: random_bool}]}]
operators:
  - {name: k, type: key_by, field: x, repartition: yes}
sinks: [{name: out, type: stdout}]
`,
		want: []string{
			`pipeline.yaml:4:52: operators[0] "k".repartition: expected true or false, got "yes"`,
		},
	},
	{
		name: "invalid YAML",
		doc:  "name: p\nsources: [\n",
		want: []string{`pipeline.yaml:2:10: invalid YAML: did not find expected node content`},
	},
	{
		name: "empty document",
		doc:  "# nothing here\n",
		want: []string{`pipeline.yaml: empty pipeline file`},
	},
	{
		name: "two documents",
		doc:  "name: p\n---\nname: q\n",
		want: []string{`pipeline.yaml:2:1: only one YAML document is allowed, found another`},
	},
	{
		name: "top level is not a mapping",
		doc:  "- a\n- b\n",
		want: []string{`pipeline.yaml:1:1: expected a mapping, got a list`},
	},
	{
		name: "env override bad values",
		doc: `name: p
sources: [{name: g, type: generator, fields: [{name: x, kind: random_int, min: 0, max: 9}]}]
operators:
  - {name: by-id, type: key_by, field: x}
  - {name: m, type: map, plugin: plugins/double.wasm, config: {n: 1}}
sinks: [{name: out, type: stdout}]
`,
		env: map[string]string{
			"WEIR_ENGINE_BATCH_SIZE":         "lots",
			"WEIR_ENGINE_BATCH_LINGER":       "5",
			"WEIR_NAME":                      "Not Valid",
			"WEIR_SOURCES_G_FIELDS_X_MAX":    "-1",
			"WEIR_OPERATORS_BY_ID_FIELD":     "a.",
			"WEIR_OPERATORS_M_CONFIG_N":      ".nan",
			"WEIR_DEAD_LETTER_TYPE":          "file",
			"WEIR_SINKS_OUT_TYPE":            "stdot",
			"WEIR_OPERATORS_M_TIMEOUT":       "",  // empty counts as unset
			"WEIR_OPERATORS_M_PLUGIN_EXTRA":  "x", // matches no field: ignored
			"WEIR_SOURCES_G_PATH":            "x", // not a generator field: ignored
			"WEIR_OPERATORS_BY_ID_TIMEOUT":   "x", // not a key_by field: ignored
			"WEIR_SOURCES_NOSUCHSOURCE_PATH": "x", // no such item: ignored
		},
		want: []string{
			`$WEIR_DEAD_LETTER_TYPE: dead_letter: missing required field "path"`,
			`$WEIR_ENGINE_BATCH_LINGER: engine.batch_linger: invalid duration "5" (use Go syntax such as 20ms, 1.5s or 2m)`,
			`$WEIR_ENGINE_BATCH_SIZE: engine.batch_size: expected an integer, got "lots"`,
			`$WEIR_NAME: name: invalid name "Not Valid": must match [a-z0-9][a-z0-9_.-]*`,
			`$WEIR_OPERATORS_BY_ID_FIELD: operators[0] "by-id".field: invalid field path "a.": empty segment (use a.b.c)`,
			`$WEIR_OPERATORS_M_CONFIG_N: operators[1] "m".config.n: .nan has no JSON equivalent`,
			`$WEIR_SINKS_OUT_TYPE: sinks[0] "out".type: invalid value "stdot" (want one of stdout, file, discard, kafka, database; did you mean "stdout"?)`,
			`$WEIR_SOURCES_G_FIELDS_X_MAX: sources[0] "g".fields[0] "x".max: max (-1) must not be less than min (0)`,
		},
	},
	{
		name: "kafka brokers and client id",
		doc: `name: p
kafka:
  brokers: [host1, ":9092", "h:x", "::1:9092", {a: 1}, "", "h:0", "[::1]:9092", "my host:1"]
  client_id: ""
  broker: x
sources: [{name: g, type: generator, fields: [{name: x, kind: random_bool}]}]
sinks: [{name: out, type: stdout}]
kafak: {}
`,
		want: []string{
			`pipeline.yaml:3:13: kafka.brokers[0]: invalid address "host1": missing port (want host:port)`,
			`pipeline.yaml:3:20: kafka.brokers[1]: invalid address ":9092": missing host (want host:port)`,
			`pipeline.yaml:3:29: kafka.brokers[2]: invalid address "h:x": port "x" must be a number between 1 and 65535`,
			`pipeline.yaml:3:36: kafka.brokers[3]: invalid address "::1:9092": too many colons (write an IPv6 host in brackets, as in [::1]:9092)`,
			`pipeline.yaml:3:48: kafka.brokers[4]: expected a string, got a mapping`,
			`pipeline.yaml:3:56: kafka.brokers[5]: must not be empty`,
			`pipeline.yaml:3:60: kafka.brokers[6]: invalid address "h:0": port "0" must be a number between 1 and 65535`,
			`pipeline.yaml:3:81: kafka.brokers[8]: invalid address "my host:1": the host must not contain spaces or control characters`,
			`pipeline.yaml:4:14: kafka.client_id: must not be empty`,
			`pipeline.yaml:5:3: kafka: unknown field "broker" (did you mean "brokers"?)`,
			`pipeline.yaml:8:1: unknown field "kafak" (did you mean "kafka"?)`,
		},
	},
	{
		name: "kafka sasl and tls",
		doc: `name: p
kafka:
  brokers: [localhost:9092]
  sasl:
    mechanism: scram-sha256
  tls:
    enabled: yes
    cert_file: certs/client.pem
    ca_file: nope.pem
    server_nam: x
sources: [{name: g, type: generator, fields: [{name: x, kind: random_bool}]}]
sinks: [{name: out, type: stdout}]
`,
		want: []string{
			`pipeline.yaml:5:5: kafka.sasl: missing required field "user"`,
			`pipeline.yaml:5:5: kafka.sasl: missing required field "password" (set it here or, better, in $WEIR_KAFKA_SASL_PASSWORD)`,
			`pipeline.yaml:5:16: kafka.sasl.mechanism: invalid value "scram-sha256" (want one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; did you mean "SCRAM-SHA-256"?)`,
			`pipeline.yaml:7:14: kafka.tls.enabled: expected true or false, got "yes"`,
			`pipeline.yaml:8:16: kafka.tls.cert_file: key_file is required with cert_file`,
			`pipeline.yaml:9:14: kafka.tls.ca_file: file "nope.pem" does not exist (resolved to $DIR/nope.pem)`,
			`pipeline.yaml:10:5: kafka.tls: unknown field "server_nam" (did you mean "server_name"?)`,
		},
	},
	{
		name: "kafka empty sasl block and disabled tls",
		doc: `name: p
kafka:
  sasl:
  tls:
    key_file: certs/client.key
    ca_file: nope.pem
    enabled: false
sources: [{name: g, type: generator, fields: [{name: x, kind: random_bool}]}]
sinks: [{name: out, type: stdout}]
`,
		want: []string{
			`pipeline.yaml:3:8: kafka.sasl: missing required field "mechanism"`,
			`pipeline.yaml:3:8: kafka.sasl: missing required field "user"`,
			`pipeline.yaml:3:8: kafka.sasl: missing required field "password" (set it here or, better, in $WEIR_KAFKA_SASL_PASSWORD)`,
			`pipeline.yaml:5:15: kafka.tls.key_file: cert_file is required with key_file`,
		},
	},
	{
		name: "kafka embedded broker settings",
		doc: `name: p
kafka:
  embedded:
    listen: localhost
    partitions: 0
    data_dir: nodir/data
    datadir: x
sources: [{name: g, type: generator, fields: [{name: x, kind: random_bool}]}]
sinks: [{name: out, type: stdout}]
`,
		want: []string{
			`pipeline.yaml:4:13: kafka.embedded.listen: invalid address "localhost": missing port (want host:port)`,
			`pipeline.yaml:5:17: kafka.embedded.partitions: must be between 1 and 1024, got 0`,
			`pipeline.yaml:6:15: kafka.embedded.data_dir: directory $DIR/nodir does not exist`,
			`pipeline.yaml:7:5: kafka.embedded: unknown field "datadir" (did you mean "data_dir"?)`,
		},
	},
	{
		name: "kafka embedded broker with brokers",
		doc: `name: p
kafka:
  brokers: [localhost:9092]
  embedded: {data_dir: readings.json, partitions: 1025}
sources: [{name: g, type: generator, fields: [{name: x, kind: random_bool}]}]
sinks: [{name: out, type: stdout}]
`,
		want: []string{
			`pipeline.yaml:4:13: kafka.embedded: an embedded broker is only started when no brokers are given (brokers at pipeline.yaml:3:12)`,
			`pipeline.yaml:4:24: kafka.embedded.data_dir: "readings.json" is not a directory`,
			`pipeline.yaml:4:51: kafka.embedded.partitions: must be between 1 and 1024, got 1025`,
		},
	},
	{
		name: "kafka source checks",
		doc: `name: p
sources:
  - {name: a, type: kafka}
  - {name: b, type: kafka, topics: [x], topic_regex: "x.*"}
  - {name: c, type: kafka, topic_regex: "(", start: latst, format: jsonl, group: ""}
  - {name: d, type: kafka, topics: [], start: 2024-13-01T00:00:00Z}
  - {name: e, type: kafka, topics: [ok, "bad topic", ok, ".."], start: 1969-12-31T23:59:59Z, path: x}
  - {name: f, type: kafka, topics: sensor.readings, start: 2024-01-02}
sinks: [{name: out, type: stdout}]
`,
		want: []string{
			`pipeline.yaml:3:5: sources[0] "a": missing required field "topics" or "topic_regex"`,
			`pipeline.yaml:4:54: sources[1] "b".topic_regex: topics and topic_regex exclude each other (topics at pipeline.yaml:4:36)`,
			"pipeline.yaml:5:41: sources[2] \"c\".topic_regex: invalid regular expression \"(\": missing closing ): `(`",
			`pipeline.yaml:5:53: sources[2] "c".start: invalid value "latst" (want one of earliest, latest, committed or an RFC 3339 timestamp; did you mean "latest"?)`,
			`pipeline.yaml:5:68: sources[2] "c".format: invalid value "jsonl" (want one of json, raw; did you mean "json"?)`,
			`pipeline.yaml:5:82: sources[2] "c".group: must not be empty`,
			`pipeline.yaml:6:36: sources[3] "d".topics: at least one topic is required`,
			`pipeline.yaml:6:47: sources[3] "d".start: invalid timestamp "2024-13-01T00:00:00Z" (want RFC 3339, such as 2024-01-02T15:04:05Z)`,
			`pipeline.yaml:7:41: sources[4] "e".topics[1]: invalid topic name "bad topic": only ASCII letters, digits, '.', '_' and '-' are allowed`,
			`pipeline.yaml:7:54: sources[4] "e".topics[2]: duplicate topic "ok" (also sources[4] "e".topics[0])`,
			`pipeline.yaml:7:58: sources[4] "e".topics[3]: invalid topic name "..": "." and ".." are not allowed`,
			`pipeline.yaml:7:72: sources[4] "e".start: timestamp "1969-12-31T23:59:59Z" is before 1970-01-01T00:00:00Z`,
			`pipeline.yaml:7:94: sources[4] "e": field "path" does not apply to kafka sources`,
			`pipeline.yaml:8:36: sources[5] "f".topics: expected a list, got "sensor.readings"`,
			`pipeline.yaml:8:60: sources[5] "f".start: invalid timestamp "2024-01-02" (want RFC 3339, such as 2024-01-02T15:04:05Z)`,
		},
	},
	{
		name: "kafka sink and dead letter checks",
		doc: `name: p
sources: [{name: g, type: generator, fields: [{name: x, kind: random_bool}]}]
sinks:
  - {name: s1, type: kafka}
  - {name: s2, type: kafka, topic: t, topic_field: a.b}
  - {name: s3, type: kafka, topic_field: a..b, key_field: "", compression: snapy, acks: al, linger: -1s, delivery_timeout: 0}
  - {name: s4, type: kafka, format: raw, topic_field: a, key_field: b, batch_max_bytes: 1073741825}
  - {name: s5, type: kafka, topic: "x/y", batch_max_bytes: 0, delivery_timeout: soon, acks: -1}
  - {name: s6, type: stdout, topic: x}
dead_letter: {type: kafka}
`,
		want: []string{
			`pipeline.yaml:4:5: sinks[0] "s1": missing required field "topic" or "topic_field"`,
			`pipeline.yaml:5:52: sinks[1] "s2".topic_field: topic and topic_field exclude each other (topic at pipeline.yaml:5:36)`,
			`pipeline.yaml:6:42: sinks[2] "s3".topic_field: invalid field path "a..b": empty segment (use a.b.c)`,
			`pipeline.yaml:6:59: sinks[2] "s3".key_field: invalid field path "": must not be empty`,
			`pipeline.yaml:6:76: sinks[2] "s3".compression: invalid value "snapy" (want one of none, gzip, snappy, lz4, zstd; did you mean "snappy"?)`,
			`pipeline.yaml:6:89: sinks[2] "s3".acks: invalid value "al" (want one of all, leader, none; did you mean "all"?)`,
			`pipeline.yaml:6:101: sinks[2] "s3".linger: must not be negative, got -1s`,
			`pipeline.yaml:6:124: sinks[2] "s3".delivery_timeout: must be greater than 0, got 0`,
			`pipeline.yaml:7:55: sinks[3] "s4".topic_field: topic_field needs format json (the values of a raw sink are not parsed)`,
			`pipeline.yaml:7:69: sinks[3] "s4".key_field: key_field needs format json (the values of a raw sink are not parsed)`,
			`pipeline.yaml:7:89: sinks[3] "s4".batch_max_bytes: must be between 1 and 1073741824, got 1073741825`,
			`pipeline.yaml:8:36: sinks[4] "s5".topic: invalid topic name "x/y": only ASCII letters, digits, '.', '_' and '-' are allowed`,
			`pipeline.yaml:8:60: sinks[4] "s5".batch_max_bytes: must be between 1 and 1073741824, got 0`,
			`pipeline.yaml:8:81: sinks[4] "s5".delivery_timeout: invalid duration "soon" (use Go syntax such as 20ms, 1.5s or 2m)`,
			`pipeline.yaml:8:93: sinks[4] "s5".acks: invalid value "-1" (want one of all, leader, none; did you mean "all"?)`,
			`pipeline.yaml:9:30: sinks[5] "s6": field "topic" does not apply to stdout sinks`,
			`pipeline.yaml:10:14: dead_letter: missing required field "topic"`,
		},
	},
	{
		name: "kafka topic loops and shared groups",
		doc: `name: p
sources:
  - {name: a, type: kafka, topics: [in, shared]}
  - {name: b, type: kafka, topics: [shared]}
  - {name: c, type: kafka, topics: [shared], group: other}
  - {name: d, type: kafka, topic_regex: "^audit\\."}
sinks:
  - {name: s1, type: kafka, topic: in}
  - {name: s2, type: kafka, topic: audit.x}
  - {name: s3, type: kafka, topic: auditx}
  - {name: s4, type: file, path: out/x, topic: x}
dead_letter: {type: kafka, topic: shared}
`,
		want: []string{
			`pipeline.yaml:4:36: sources[1] "b".topics: topic "shared" is also read by sources[0] "a" in the same group "p" (each would get only some of its partitions)`,
			`pipeline.yaml:6:41: sources[3] "d".topic_regex: consumer group "p" is read through one client with sources[0] "a", so both must name their topics; or give each its own group`,
			`pipeline.yaml:8:36: sinks[0] "s1".topic: topic "in" is read by sources[0] "a", so records would loop`,
			`pipeline.yaml:9:36: sinks[1] "s2".topic: topic "audit.x" matches the topic_regex of sources[3] "d", so records would loop`,
			`pipeline.yaml:11:41: sinks[3] "s4": field "topic" does not apply to file sinks`,
			`pipeline.yaml:12:35: dead_letter.topic: topic "shared" is read by sources[0] "a", so records would loop`,
		},
	},
	{
		name: "kafka env override bad values",
		doc: `name: p
kafka:
  sasl: {mechanism: PLAIN, user: u}
  tls: {ca_file: nope.pem}
  embedded: {}
sources: [{name: readings, type: kafka, topics: [r]}]
sinks: [{name: alerts, type: kafka, topic: a}]
dead_letter: {type: kafka, topic: d}
`,
		env: map[string]string{
			"WEIR_KAFKA_BROKERS":           "a:9092,,b, c:x",
			"WEIR_KAFKA_SASL_MECHANISM":    "md5",
			"WEIR_KAFKA_SASL_PASSWORD":     "x",
			"WEIR_KAFKA_TLS_ENABLED":       "yes",
			"WEIR_KAFKA_EMBEDDED_LISTEN":   "nohost",
			"WEIR_SINKS_ALERTS_TOPIC":      "bad topic",
			"WEIR_SOURCES_READINGS_START":  "2024-02-30T00:00:00Z",
			"WEIR_SOURCES_READINGS_TOPICS": "x", // a list: ignored
			"WEIR_DEAD_LETTER_TOPIC":       "..",
		},
		want: []string{
			`pipeline.yaml:4:18: kafka.tls.ca_file: file "nope.pem" does not exist (resolved to $DIR/nope.pem)`,
			`$WEIR_DEAD_LETTER_TOPIC: dead_letter.topic: invalid topic name "..": "." and ".." are not allowed`,
			`$WEIR_KAFKA_BROKERS: kafka.brokers[1]: must not be empty`,
			`$WEIR_KAFKA_BROKERS: kafka.brokers[2]: invalid address "b": missing port (want host:port)`,
			`$WEIR_KAFKA_BROKERS: kafka.brokers[3]: invalid address "c:x": port "x" must be a number between 1 and 65535`,
			`$WEIR_KAFKA_EMBEDDED_LISTEN: kafka.embedded.listen: invalid address "nohost": missing port (want host:port)`,
			`$WEIR_KAFKA_SASL_MECHANISM: kafka.sasl.mechanism: invalid value "md5" (want one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)`,
			`$WEIR_KAFKA_TLS_ENABLED: kafka.tls.enabled: expected true or false, got "yes"`,
			`$WEIR_SINKS_ALERTS_TOPIC: sinks[0] "alerts".topic: invalid topic name "bad topic": only ASCII letters, digits, '.', '_' and '-' are allowed`,
			`$WEIR_SOURCES_READINGS_START: sources[0] "readings".start: invalid timestamp "2024-02-30T00:00:00Z" (want RFC 3339, such as 2024-01-02T15:04:05Z)`,
		},
	},
	{
		name: "kafka sub-blocks absent from the file ignore the environment",
		doc: `name: p
sources: [{name: readings, type: kafka, topics: [r]}]
sinks: [{name: alerts, type: kafka, topic: a}]
`,
		env: map[string]string{
			"WEIR_KAFKA_SASL_PASSWORD":       "x",  // no sasl block: ignored
			"WEIR_KAFKA_TLS_CA_FILE":         "x",  // no tls block: ignored
			"WEIR_KAFKA_EMBEDDED_PARTITIONS": "99", // no embedded block: ignored
			"WEIR_SINKS_ALERTS_ACKS":         "one",
		},
		want: []string{
			`$WEIR_SINKS_ALERTS_ACKS: sinks[0] "alerts".acks: invalid value "one" (want one of all, leader, none; did you mean "leader"?)`,
		},
	},
}

func TestParseErrors(t *testing.T) {
	for _, tt := range parseErrorCases {
		t.Run(tt.name, func(t *testing.T) {
			dir := setupDir(t)
			var env func(string) (string, bool)
			if tt.env != nil {
				env = mapEnv(tt.env)
			}
			p, err := Parse("pipeline.yaml", []byte(tt.doc), env, nil)
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", p)
			}
			if p != nil {
				t.Errorf("Parse returned a pipeline with an error")
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error is %T, not Errors: %v", err, err)
			}
			var e *Error
			if !errors.As(err, &e) || e != errs[0] {
				t.Errorf("errors.As(*Error) did not find the first error")
			}
			got := strings.Split(err.Error(), "\n")
			if len(got) != len(errs) {
				t.Errorf("Error() has %d lines for %d errors", len(got), len(errs))
			}
			want := make([]string, len(tt.want))
			for i, w := range tt.want {
				want[i] = strings.ReplaceAll(w, "$DIR", dir)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestMultipleErrorsSortedByPosition(t *testing.T) {
	setupDir(t)
	doc := `sinks:
  - {name: out, type: stdout, fromat: raw}
engine:
  queue_depth: 0
sources:
  - {name: in, type: stdin, format: xml}
`
	_, err := Parse("pipeline.yaml", []byte(doc), mapEnv(map[string]string{"WEIR_ENGINE_PARALLELISM": "x"}), nil)
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("err = %v", err)
	}
	want := []string{
		`pipeline.yaml:1:1: missing required field "name"`,
		`pipeline.yaml:2:31: sinks[0] "out": unknown field "fromat" (did you mean "format"?)`,
		`pipeline.yaml:4:16: engine.queue_depth: must be between 1 and 1024, got 0`,
		`pipeline.yaml:6:37: sources[0] "in".format: invalid value "xml" (want one of jsonl, lines)`,
		`$WEIR_ENGINE_PARALLELISM: engine.parallelism: expected an integer, got "x"`,
	}
	if err.Error() != strings.Join(want, "\n") {
		t.Errorf("errors:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}
	for i, e := range errs {
		if e.Error() != want[i] {
			t.Errorf("errs[%d] = %q", i, e)
		}
	}
}

const envBase = `name: p
sources:
  - {name: readings, type: file, path: readings.json}
  - {name: gen, type: generator, fields: [{name: t, kind: random_float, min: 0, max: 1}]}
operators:
  - name: by-id
    type: key_by
    field: id
  - name: detect
    type: filter
    plugin: plugins/anomaly
    config: {threshold: 1, nested: {name: a}, list: [1]}
sinks: [{name: out, type: stdout}]
`

func checkEnvOverrides(t *testing.T, dir string, p *Pipeline) {
	t.Helper()
	if p.Name != "renamed" {
		t.Errorf("Name = %q", p.Name)
	}
	if p.Engine.Parallelism != 4 || p.Engine.BatchLinger != time.Second || p.Engine.BatchSize != DefaultBatchSize {
		t.Errorf("Engine = %+v", p.Engine)
	}
	if pos := p.Engine.At("parallelism"); pos.String() != "$WEIR_ENGINE_PARALLELISM" || !pos.IsEnv() {
		t.Errorf("parallelism position = %v", pos)
	}
	if p.Sources[0].Path != filepath.Join(dir, "other.json") || p.Sources[0].Format != FormatLines {
		t.Errorf("readings = %+v", p.Sources[0])
	}
	if f := p.Sources[1].Fields[0]; f.Max != 2.5 || f.Decimals != 3 {
		t.Errorf("gen field = %+v", f)
	}
	if p.Sources[1].Count != 10 {
		t.Errorf("gen count = %d", p.Sources[1].Count)
	}
	if p.Operators[0].Field != "a.b" {
		t.Errorf("by-id field = %q", p.Operators[0].Field)
	}
	if got := string(p.Operators[1].ConfigJSON); got != `{"threshold":2.5,"nested":{"name":"007"},"list":[1]}` {
		t.Errorf("ConfigJSON = %s", got)
	}
	if p.Operators[1].Timeout != 3*time.Second {
		t.Errorf("detect timeout = %v", p.Operators[1].Timeout)
	}
	if p.DeadLetter.Type != DeadLetterFile || p.DeadLetter.Path != filepath.Join(dir, "out", "dlq.jsonl") {
		t.Errorf("dead letter = %+v", p.DeadLetter)
	}
}

var envOverrides = map[string]string{
	"WEIR_NAME":                                "renamed",
	"WEIR_ENGINE_PARALLELISM":                  "4",
	"WEIR_ENGINE_BATCH_LINGER":                 "1s",
	"WEIR_SOURCES_READINGS_PATH":               "other.json",
	"WEIR_SOURCES_READINGS_FORMAT":             "lines",
	"WEIR_SOURCES_GEN_COUNT":                   "10",
	"WEIR_SOURCES_GEN_FIELDS_T_MAX":            "2.5",
	"WEIR_SOURCES_GEN_FIELDS_T_DECIMALS":       "3",
	"WEIR_OPERATORS_BY_ID_FIELD":               "a.b",
	"WEIR_OPERATORS_DETECT_TIMEOUT":            "3s",
	"WEIR_OPERATORS_DETECT_CONFIG_THRESHOLD":   "2.5",
	"WEIR_OPERATORS_DETECT_CONFIG_NESTED_NAME": "'007'",
	"WEIR_OPERATORS_DETECT_CONFIG_LIST":        "9", // a list is not a scalar: ignored
	"WEIR_DEAD_LETTER_TYPE":                    "file",
	"WEIR_DEAD_LETTER_PATH":                    "out/dlq.jsonl",
}

func TestEnvOverrides(t *testing.T) {
	dir := setupDir(t)
	p, err := Parse("pipeline.yaml", []byte(envBase), mapEnv(envOverrides), nil)
	if err != nil {
		t.Fatal(err)
	}
	checkEnvOverrides(t, dir, p)
}

// TestEnvOverridesFromTheEnvironment goes through OSEnv and the process environment,
// via both Load and Parse(…, OSEnv()).
func TestEnvOverridesFromTheEnvironment(t *testing.T) {
	dir := setupDir(t)
	for k, v := range envOverrides {
		t.Setenv(k, v)
	}
	t.Setenv("WEIR_ENGINE_QUEUE_DEPTH", "") // set but empty: unset
	mustWrite(t, filepath.Join(dir, "pipeline.yaml"), envBase)

	p, err := Load("pipeline.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	checkEnvOverrides(t, dir, p)
	if p.Engine.QueueDepth != DefaultQueueDepth {
		t.Errorf("QueueDepth = %d", p.Engine.QueueDepth)
	}

	t.Setenv("WEIR_ENGINE_BATCH_SIZE", "0x")
	_, err = Parse("pipeline.yaml", []byte(envBase), OSEnv(), nil)
	want := `$WEIR_ENGINE_BATCH_SIZE: engine.batch_size: expected an integer, got "0x"`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), nil)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v", err)
	}
}

func TestEnvName(t *testing.T) {
	for _, tt := range []struct {
		parts []string
		want  string
	}{
		{[]string{"name"}, "WEIR_NAME"},
		{[]string{"engine", "batch_size"}, "WEIR_ENGINE_BATCH_SIZE"},
		{[]string{"sources", "readings", "path"}, "WEIR_SOURCES_READINGS_PATH"},
		{[]string{"operators", "by-id.v2", "field"}, "WEIR_OPERATORS_BY_ID_V2_FIELD"},
	} {
		if got := EnvName(tt.parts...); got != tt.want {
			t.Errorf("EnvName(%q) = %q, want %q", tt.parts, got, tt.want)
		}
	}
}

func TestAliasesAndBudget(t *testing.T) {
	setupDir(t)
	doc := `name: p
sources:
  - &src {name: g, type: generator, fields: [{name: x, kind: constant, value: &v {a: [1, 2]}}]}
operators:
  - {name: m, type: map, plugin: plugins/double.wasm, config: {first: *v, second: *v}}
sinks: [{name: out, type: stdout}]
`
	p, err := Parse("pipeline.yaml", []byte(doc), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(p.Operators[0].ConfigJSON); got != `{"first":{"a":[1,2]},"second":{"a":[1,2]}}` {
		t.Errorf("ConfigJSON = %s", got)
	}

	// A billion-laughs document must fail quickly, not expand.
	bomb := "name: p\na: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		bomb += n + ": &" + n + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev +
			", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n"
		prev = n
	}
	bomb += "sources: [{name: g, type: generator, fields: [{name: x, kind: constant, value: *i}]}]\n"
	_, err = Parse("pipeline.yaml", []byte(bomb), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "too large once aliases are expanded") {
		t.Errorf("err = %v", err)
	}

	// A self-referencing alias must not recurse forever.
	_, err = Parse("pipeline.yaml", []byte("name: p\nsources: &s [{name: g, type: generator, fields: *s}]\n"), nil, nil)
	if err == nil {
		t.Errorf("self-referencing alias accepted")
	}
}

func TestPosString(t *testing.T) {
	for _, tt := range []struct {
		p    Pos
		want string
	}{
		{Pos{File: "p.yaml", Line: 3, Col: 5}, "p.yaml:3:5"},
		{Pos{File: "p.yaml", Line: 3}, "p.yaml:3"},
		{Pos{File: "p.yaml"}, "p.yaml"},
		{Pos{}, "<unknown>"},
		{Pos{Env: "WEIR_NAME"}, "$WEIR_NAME"},
	} {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.p, got, tt.want)
		}
	}
	err := Pos{File: "p.yaml", Line: 1, Col: 2}.Errorf(`operators[0] "x".plugin`, "bad %d", 7)
	if err.Error() != `p.yaml:1:2: operators[0] "x".plugin: bad 7` {
		t.Errorf("Errorf = %q", err)
	}
}

// TestKeyByRepartition checks a key_by's repartition setting: unset, the
// runtime decides (through the topic while instances share the tasks, in
// process for one alone); true, always through the topic; false, never.
func TestKeyByRepartition(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       RepartitionMode
	}{
		{name: "unset", want: RepartitionAuto},
		{name: "true", line: ", repartition: true", want: RepartitionAlways},
		{name: "false", line: ", repartition: false", want: RepartitionNever},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "name: p\nsources: [{name: in, type: stdin}]\noperators:\n  - {name: k, type: key_by, field: x" + tc.line + "}\nsinks: [{name: out, type: stdout}]\n"
			p, err := Parse("pipeline.yaml", []byte(doc), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Operators[0].Repartition; got != tc.want {
				t.Errorf("repartition %d, want %d", got, tc.want)
			}
		})
	}
}
