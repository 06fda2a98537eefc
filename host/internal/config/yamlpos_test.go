package config

import (
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// yamlSyntaxCases are broken pipeline documents and where their problem is.
// col is the column at which the document can first be seen to be broken
// (the ':' of an over-indented key, the quote of an unclosed string).
var yamlSyntaxCases = []struct {
	name      string
	doc       string
	line, col int
	msg       string
}{
	{
		name: "top-level key indented",
		doc:  "name: p\nsources:\n  - name: in\n    type: stdin\n sinks:\n  - name: out\n    type: stdout\n",
		line: 5, col: 2, msg: "did not find expected key",
	},
	{
		name: "list item key over-indented",
		doc:  "name: p\nsources:\n  - name: in\n      type: stdin\nsinks: [{name: out, type: stdout}]\n",
		line: 4, col: 11, msg: "mapping values are not allowed in this context",
	},
	{
		name: "list item key under-indented",
		doc:  "name: p\nsources:\n  - name: in\n   type: stdin\nsinks: [{name: out, type: stdout}]\n",
		line: 4, col: 4, msg: "did not find expected '-' indicator",
	},
	{
		name: "list item key at the dash's column",
		doc:  "name: p\nsources:\n  - name: in\n  type: stdin\nsinks: [{name: out, type: stdout}]\n",
		line: 4, col: 7, msg: "did not find expected '-' indicator",
	},
	{
		name: "dash misaligned",
		doc:  "name: p\nsources: [{name: in, type: stdin}]\nsinks:\n  - name: a\n    type: stdout\n - name: b\n   type: stdout\n",
		line: 6, col: 2, msg: "did not find expected key",
	},
	{
		name: "nested config key over-indented",
		doc: "name: p\nsources: [{name: in, type: stdin}]\noperators:\n  - name: m\n    type: map\n" +
			"    plugin: plugins/double.wasm\n    config:\n      limits:\n        max: 10\n         min: 1\n" +
			"sinks: [{name: out, type: stdout}]\n",
		line: 10, col: 13, msg: "mapping values are not allowed in this context",
	},
	{
		name: "nested config key under-indented",
		doc: "name: p\nsources: [{name: in, type: stdin}]\noperators:\n  - name: m\n    type: map\n" +
			"    plugin: plugins/double.wasm\n    config:\n      limits:\n        max: 10\n       min: 1\n" +
			"sinks: [{name: out, type: stdout}]\n",
		line: 10, col: 8, msg: "did not find expected key",
	},
	{
		name: "tab indentation",
		doc:  "name: p\nsources:\n  - name: in\n\ttype: stdin\nsinks: [{name: out, type: stdout}]\n",
		line: 4, col: 1, msg: "found a tab character that violates indentation",
	},
	{
		name: "tab after spaces",
		doc:  "name: p\nsources:\n  - name: in\n    type: stdin\n  \t- name: other\nsinks: [{name: out, type: stdout}]\n",
		line: 5, col: 3, msg: "found a tab character that violates indentation",
	},
	{
		name: "unclosed double quote",
		doc:  "name: p\nsources:\n  - name: in\n    type: \"stdin\nsinks: [{name: out, type: stdout}]\n",
		line: 4, col: 11, msg: "found unexpected end of stream",
	},
	{
		name: "unclosed single quote",
		doc:  "name: 'p\nsources: [{name: in, type: stdin}]\nsinks: [{name: out, type: stdout}]\n",
		line: 1, col: 7, msg: "found unexpected end of stream",
	},
	{
		name: "unclosed quote after a closed multi-line one",
		doc:  "name: \"a\n  b\"\nsources: [{name: in, type: stdin}]\nsinks: [{name: \"out, type: stdout}]\n",
		line: 4, col: 16, msg: "found unexpected end of stream",
	},
	{
		name: "unclosed flow sequence",
		doc:  "name: p\nsources: [{name: in, type: stdin}\nsinks: [{name: out, type: stdout}]\n",
		line: 2, col: 33, msg: "did not find expected ',' or ']'",
	},
	{
		name: "key without colon",
		doc:  "name: p\nsources\nsinks: [{name: out, type: stdout}]\n",
		line: 2, col: 1, msg: "could not find expected ':'",
	},
	{
		name: "non-ASCII before the problem",
		doc:  "name: \"é\" x: 1\nsources: [{name: in, type: stdin}]\n",
		line: 1, col: 12, msg: "mapping values are not allowed in this context",
	},
	{
		name: "control character in a multi-byte encoding",
		doc:  "name: p\nsources: [{name: \"é\u008b\"}]\n",
		line: 2, col: 20, msg: "control characters are not allowed",
	},
	{
		name: "CRLF line breaks",
		doc:  "name: p\r\nsources:\r\n  - name: in\r\n      type: stdin\r\n",
		line: 4, col: 11, msg: "mapping values are not allowed in this context",
	},
	{
		name: "in a second document",
		doc:  "name: p\n---\nname: q\n  x: 1\n",
		line: 4, col: 4, msg: "mapping values are not allowed in this context",
	},
}

// TestYAMLSyntaxErrorPosition checks that a YAML syntax error is reported at
// the line and column of the problem, not at the line yaml.v3 names (that
// of the enclosing block, counted from 0).
func TestYAMLSyntaxErrorPosition(t *testing.T) {
	for _, tt := range yamlSyntaxCases {
		t.Run(tt.name, func(t *testing.T) {
			e := onlyError(t, tt.doc)
			if e.Pos.Line != tt.line || e.Pos.Col != tt.col {
				t.Errorf("error at %d:%d, want %d:%d: %v", e.Pos.Line, e.Pos.Col, tt.line, tt.col, e)
			}
			if want := "invalid YAML: " + tt.msg; e.Msg != want {
				t.Errorf("message %q, want %q", e.Msg, want)
			}
		})
	}
}

// TestDuplicateKeyPosition checks that a duplicate key, which YAML parses,
// is reported at the second occurrence, naming the first.
func TestDuplicateKeyPosition(t *testing.T) {
	tests := []struct {
		name      string
		doc       string
		line, col int
		msg       string
	}{
		{
			name: "top level",
			doc:  "name: p\nsources: [{name: in, type: stdin}]\nsinks: [{name: out, type: stdout}]\nname: q\n",
			line: 4, col: 1, msg: `duplicate field "name" (first at pipeline.yaml:1:1)`,
		},
		{
			name: "in a list item",
			doc:  "name: p\nsources:\n  - name: in\n    type: stdin\n    name: again\nsinks: [{name: out, type: stdout}]\n",
			line: 5, col: 5, msg: `duplicate field "name" (first at pipeline.yaml:3:5)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := onlyError(t, tt.doc)
			if e.Pos.Line != tt.line || e.Pos.Col != tt.col || e.Msg != tt.msg {
				t.Errorf("error %v, want %d:%d: %s", e, tt.line, tt.col, tt.msg)
			}
		})
	}
}

// onlyError parses doc and returns its one error.
func onlyError(t *testing.T, doc string) *Error {
	t.Helper()
	_, err := Parse("pipeline.yaml", []byte(doc), nil, nil)
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 {
		t.Fatalf("Parse error %v, want one error", err)
	}
	return errs[0]
}

// TestLocateYAMLErrorBudget checks that a document too large to re-parse
// within yamlLocateBudget keeps the line yaml.v3 names.
func TestLocateYAMLErrorBudget(t *testing.T) {
	// Every prefix from the quote on fails at its end, and there are 400
	// of them, of 200 KB on average.
	doc := "name: p\nsources: \"\n" + strings.Repeat("k: "+strings.Repeat("v", 1000)+"\n", 400)
	_, _, _, err := decodeYAML([]byte(doc))
	if err == nil {
		t.Fatal("the document parses")
	}
	yamlLine, _ := splitYAMLError(err)
	if e := onlyError(t, doc); e.Pos.Line != yamlLine || e.Pos.Col != 0 {
		t.Errorf("error %v, want it at yaml.v3's line %d", e, yamlLine)
	}
}

// FuzzLocateYAMLError checks that the position locateYAMLError gives for
// any document that does not parse is within the document, and that the
// document up to the end of that line fails the same way.
func FuzzLocateYAMLError(f *testing.F) {
	for _, tt := range yamlSyntaxCases {
		f.Add([]byte(tt.doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		_, _, read, err := decodeYAML(data)
		if err == nil || errors.Is(err, io.EOF) {
			return
		}
		_, msg := splitYAMLError(err)
		line, col, ok := locateYAMLError(data, msg, read)
		starts := lineStarts(data)
		if !ok || line < 1 || line >= len(starts) {
			t.Fatalf("located at line %d (ok %v) of %d", line, ok, len(starts)-1)
		}
		text := data[starts[line-1]:lineEnd(data, starts[line-1])]
		if col < 0 || col > utf8.RuneCount(text) {
			t.Fatalf("column %d of line %q", col, text)
		}
		l := &yamlLocator{data: data, msg: msg, budget: yamlLocateBudget}
		if !l.fails(starts[line]) {
			t.Fatalf("the document up to line %d does not fail with %q", line, msg)
		}
	})
}
