package main

import (
	"context"
	"slices"
	"testing"

	weir "github.com/weir-stream/weir/guest-sdk/go"
	"github.com/weir-stream/weir/host/plugintool"
)

// TestTypedAverage runs the plugin through the host, as the conformance
// suite runs average (plugins/conformance/suite_test.go): the first half
// of the inputs is added to one accumulator, the rest to another, and the
// result is the merge's. The records the declaration rejects are the
// host's dead letters, with its reasons; the others give average's result.
// (These are the cases of a typed_average entry in the suite's typedTests,
// once every SDK has the plugin.)
func TestTypedAverage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin")
	}
	tests := []struct {
		name   string
		in     []string
		want   []string // per input: "" for folded in, else the error
		result string
	}{{
		name: "average's cases",
		in:   []string{`{"n":1}`, `{"x":1}`, `{"n":"1"}`, `{"n":2.5}`, `{"n":1e400}`, `{"n":null}`, `not json`},
		want: []string{"", `field "n": missing`, `field "n": want float, found string`, "",
			`field "n": want float, found number 1e400 (outside float64)`, `field "n": null`, "value is not JSON: "},
		result: `{"avg":1.75,"count":2}`,
	}, {
		name:   "any spelling of a number; the last occurrence counts",
		in:     []string{`{"n":1e1}`, `{"n":-0.5,"x":[1]}`, `{"n":"x","n":3}`, `{"n":2.0}`},
		want:   []string{"", "", "", ""},
		result: `{"avg":3.625,"count":4}`,
	}, {
		name:   "nothing",
		result: `{"avg":null,"count":0}`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ins []plugintool.Input
			for _, s := range tc.in {
				ins = append(ins, plugintool.Input{Value: []byte(s)})
			}
			outs, err := plugintool.Run(context.Background(), ".", "aggregate", nil, ins, "")
			if err != nil {
				t.Fatal(err)
			}
			got := make([]string, len(tc.in))
			result := "(none)"
			for _, o := range outs {
				switch {
				case o.Input < 0:
					result = string(o.Value)
				case o.Error != "":
					got[o.Input] = o.Error
				default:
					t.Errorf("input %d: %+v", o.Input, o)
				}
			}
			for i, w := range tc.want {
				if w == "value is not JSON: " && len(got[i]) > len(w) && got[i][:len(w)] == w {
					got[i] = w
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n got %q\nwant %q", got, tc.want)
			}
			if result != tc.result {
				t.Errorf("result %s, want %s", result, tc.result)
			}
		})
	}
}

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
