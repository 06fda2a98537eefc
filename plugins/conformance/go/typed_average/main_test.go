package main

import (
	"slices"
	"testing"

	weir "github.com/weir-stream/weir/guest-sdk/go"
)

// The plugin's cases through the host are the typed_average entries of
// the conformance suite's typedTests (plugins/conformance/suite_test.go),
// run for every SDK; what the host does not show, the accumulator's bytes,
// is tested here.

// TestCodec: the accumulator is average's, 16 bytes, so that the two
// plugins' accumulators merge.
func TestCodec(t *testing.T) {
	a := acc{sum: 3.5, count: 2}
	b := codec.Append(nil, a)
	want := weir.AppendInt64(weir.AppendFloat64(nil, 3.5), 2)
	if !slices.Equal(b, want) {
		t.Fatalf("encoded %x, want %x", b, want)
	}
	if got, err := codec.Decode(b); err != nil || got != a {
		t.Errorf("decoded %+v, %v", got, err)
	}
	if _, err := codec.Decode(b[:15]); err == nil {
		t.Error("a short accumulator decoded")
	}
	if got, err := result(nil, acc{sum: 7, count: 2}); err != nil || string(got) != `{"avg":3.5,"count":2}` {
		t.Errorf("result %s, %v", got, err)
	}
}
