package config

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// yaml.v3 reports a syntax error at "line N", but N is seldom where the
// problem is: it is the line where the construct the parser was in began (a
// block mapping that began lines before an indentation error) or, when that
// was the first line, the problem's own line, and for parser errors, as
// against scanner errors, it is counted from 0. Its errors carry no other
// position. So locateYAMLError finds the problem by parsing prefixes of the
// document: the offending line is the first line from whose end on every
// prefix fails with the same message as the whole document, and its column
// is where, within that line, the shortest failing prefix ends. The search
// starts from the line yaml.v3 had read up to when it failed.

// yamlLineErr matches the position yaml.v3 puts before a message.
var yamlLineErr = regexp.MustCompile(`^line (\d+): (.*)$`)

// yamlLocateBudget bounds the bytes locateYAMLError re-parses, so that
// placing an error costs some milliseconds in a pipeline file of a few
// thousand lines, and at most about a second in any document; past it the
// error keeps yaml.v3's line.
const yamlLocateBudget = 8 << 20

// decodeYAML decodes the first document of data into doc and reads on to
// the next, returned as extra (nil when there is none). The error is io.EOF
// when data holds no document. read is how much of data yaml.v3 read: it
// reads in chunks of 512 bytes, so on an error not far past the problem.
func decodeYAML(data []byte) (doc, extra *yaml.Node, read int, err error) {
	r := &countingReader{r: bytes.NewReader(data)}
	dec := yaml.NewDecoder(r)
	doc = new(yaml.Node)
	if err := dec.Decode(doc); err != nil {
		return nil, nil, r.n, err
	}
	extra = new(yaml.Node)
	switch err := dec.Decode(extra); {
	case errors.Is(err, io.EOF):
		return doc, nil, r.n, nil
	case err != nil:
		return nil, nil, r.n, err
	}
	return doc, extra, r.n, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// splitYAMLError returns the message of a yaml.v3 error and the line it
// names (0 when it names none).
func splitYAMLError(err error) (line int, msg string) {
	msg = strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLineErr.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		return line, m[2]
	}
	return 0, msg
}

// yamlLocator re-parses prefixes of data, within a budget of bytes.
type yamlLocator struct {
	data   []byte
	msg    string // the message of the whole document's error
	budget int
}

// fails reports whether data[:end] fails to parse with the message l.msg,
// and false once the budget is spent.
func (l *yamlLocator) fails(end int) bool {
	if l.budget -= end; l.budget < 0 {
		return false
	}
	_, _, _, err := decodeYAML(l.data[:end])
	if err == nil || errors.Is(err, io.EOF) {
		return false
	}
	_, msg := splitYAMLError(err)
	return msg == l.msg
}

// locateYAMLError returns the line and column (0 when unknown) of the
// problem that makes data fail to parse with message msg, yaml.v3 having
// read data[:read] by then; ok is false when it cannot tell within its
// budget.
func locateYAMLError(data []byte, msg string, read int) (line, col int, ok bool) {
	l := &yamlLocator{data: data, msg: msg, budget: yamlLocateBudget}
	starts := lineStarts(data)
	// k is the line, from 0, whose end ends the shortest failing prefix yet:
	// the last line, or the line of the last byte read when the prefix up to
	// its end fails.
	k := len(starts) - 2
	if i, _ := slices.BinarySearch(starts, read); i > 0 && i-1 < k && l.fails(starts[i]) {
		k = i - 1
	}
	for k > 0 && l.fails(starts[k]) {
		k--
	}
	if l.budget < 0 {
		return 0, 0, false
	}
	return k + 1, l.column(starts[k], lineEnd(data, starts[k])), true
}

// column returns the 1-based column, in characters, of the byte in
// data[start:end] that ends the shortest prefix failing with l.msg, or 0
// when no prefix ending within the line does.
func (l *yamlLocator) column(start, end int) int {
	for i := start; i < end; i++ {
		if l.fails(i + 1) {
			return charColumn(l.data[start:end], i-start)
		}
	}
	return 0
}

// charColumn returns the 1-based column, in characters, of the character
// holding byte i of line, each byte of invalid UTF-8 counting as one.
func charColumn(line []byte, i int) int {
	col := 0
	for j := 0; j <= i; col++ {
		_, n := utf8.DecodeRune(line[j:])
		j += n
	}
	return col
}

// lineStarts returns the offset at which each line of data starts, then
// len(data): line k, counted from 0, is data[starts[k]:starts[k+1]].
func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, c := range data {
		if c == '\n' && i+1 < len(data) {
			starts = append(starts, i+1)
		}
	}
	return append(starts, len(data))
}

// lineEnd returns the offset of the end of the line starting at start,
// before its line break.
func lineEnd(data []byte, start int) int {
	end := start + bytes.IndexByte(data[start:], '\n')
	if end < start {
		end = len(data)
	}
	if end > start && data[end-1] == '\r' {
		end--
	}
	return end
}
