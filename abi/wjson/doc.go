// Package wjson is a fast, allocation-light JSON reader and writer for weir
// plugins. It uses no reflection: encoding/json in a Go WebAssembly guest is
// more than ten times slower than native code, and a plugin usually needs a
// few fields of each record, not a decoded struct.
//
// # Reading
//
// Parse, Get, Each and ArrayEach take a whole JSON document, validate all of
// it, and report what they were asked for as Values. A Value is a view into
// the document: Raw is the exact source text of the value (a number keeps its
// text, a string its quotes and escapes), so copying a field from one
// document to another never re-encodes it. Accessors decode on demand: Float,
// Int, Bool, AppendString and String.
//
// To read several fields of each document, compile their paths once into
// a PathSet: its GetAll reads a document once, whatever the number of
// paths, and gives for each path what Get would.
//
// Every reader agrees with encoding/json's Valid on which documents are JSON,
// including its nesting limit of MaxDepth. A malformed document yields a
// *SyntaxError giving the byte offset of the problem. Strings may hold
// invalid UTF-8, as encoding/json allows; decoding a string replaces each
// invalid byte, and each unpaired surrogate escape, with U+FFFD, as
// encoding/json does.
//
// # Writing
//
// Writer appends JSON to a byte slice, inserting commas itself, and
// AppendFloat and AppendQuote are the number and string encoders it uses.
// Floats are written the way Python's repr prints them (shortest round-trip
// digits, an integral float keeps ".0", exponent form outside
// 1e-4 <= |x| < 1e16), so that weir can reproduce the output of Python and
// PyFlink jobs byte for byte.
//
// # Concurrency and lifetime
//
// The package has no global state; every function may be called from any
// goroutine. Values alias the document they came from and are valid as long
// as it is. A Writer must be used by one goroutine at a time.
package wjson
