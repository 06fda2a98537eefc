// Command words is a conformance plugin (flat_map). It splits the raw input
// value on ASCII whitespace (space, \t, \n, \v, \f, \r) and emits each
// non-empty word as a record value, in order, inheriting the input's key,
// timestamp and headers. A value with no words (empty, absent or only
// whitespace) emits nothing. The value is not parsed as JSON.
package main

import weir "github.com/weir-stream/weir/guest-sdk/go"

func init() {
	weir.FlatMap(words)
}

func isSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return true
	}
	return false
}

func words(r *weir.Record, emit *weir.Emitter) error {
	v := r.Value
	for i := 0; i < len(v); {
		for i < len(v) && isSpace(v[i]) {
			i++
		}
		start := i
		for i < len(v) && !isSpace(v[i]) {
			i++
		}
		if i > start {
			emit.Emit(v[start:i])
		}
	}
	return nil
}

func main() {}
