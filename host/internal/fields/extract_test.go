package fields

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weir-stream/weir/abi"
)

func mustDecl(t testing.TB, fields ...abi.FieldDecl) *Decl {
	t.Helper()
	d, err := NewDecl(fields...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// describe decodes a typed batch frame and writes each record as
// "ts key | field | field ...", a field as its value or its status.
func describe(t testing.TB, frame []byte) []string {
	t.Helper()
	var b abi.TypedBatch
	n, err := b.Reset(frame)
	if err != nil {
		t.Fatalf("the frame does not decode: %v", err)
	}
	out := make([]string, n)
	for i := range out {
		key := "-"
		if k := b.Key(i); k != nil {
			key = fmt.Sprintf("%q", k)
		}
		s := fmt.Sprintf("%d %s", b.Timestamp(i), key)
		for f := 0; f < b.Fields(); f++ {
			s += " | " + describeValue(b.Field(f), i)
		}
		out[i] = s
	}
	return out
}

func describeValue(c abi.Column, i int) string {
	if st := c.Status(i); st != abi.ValuePresent {
		return st.String()
	}
	switch c.Type {
	case abi.TypeInt:
		return fmt.Sprint(c.Int(i))
	case abi.TypeFloat:
		return fmt.Sprint(c.Float(i))
	case abi.TypeBool:
		return fmt.Sprint(c.Bool(i))
	case abi.TypeString:
		return fmt.Sprintf("%q", c.Bytes(i))
	}
	return "raw " + string(c.Bytes(i))
}

func TestExtract(t *testing.T) {
	int0 := abi.FieldDecl{Path: "n", Type: abi.TypeInt}
	tests := []struct {
		name    string
		fields  []abi.FieldDecl
		values  []string // "<nil>" for no value
		want    []string
		rejects []string // "index: reason"
	}{
		{
			name: "one field of each type",
			fields: []abi.FieldDecl{{Path: "i", Type: abi.TypeInt}, {Path: "f", Type: abi.TypeFloat}, {Path: "b", Type: abi.TypeBool},
				{Path: "s", Type: abi.TypeString}, {Path: "r", Type: abi.TypeRaw}},
			values: []string{`{"i":-3,"f":0.5,"b":true,"s":"x","r":{"a": [1, 2]}}`},
			want:   []string{`0 - | -3 | 0.5 | true | "x" | raw {"a": [1, 2]}`},
		},
		{
			name:   "integers stay exact beyond 2^53",
			fields: []abi.FieldDecl{int0, {Path: "f", Type: abi.TypeFloat}},
			values: []string{`{"n":9007199254740993,"f":9007199254740993}`, `{"n":-9223372036854775808}`, `{"n":9223372036854775807}`},
			want:   []string{"0 - | 9007199254740993 | 9.007199254740992e+15", "1 - | -9223372036854775808 | missing", "2 - | 9223372036854775807 | missing"},
		},
		{
			name:   "integral numbers in other spellings are ints",
			fields: []abi.FieldDecl{int0},
			values: []string{`{"n":1.0}`, `{"n":1e3}`, `{"n":12.5e1}`, `{"n":-0.0}`, `{"n":1230e-1}`, `{"n":0e999999999999}`},
			want:   []string{"0 - | 1", "1 - | 1000", "2 - | 125", "3 - | 0", "4 - | 123", "5 - | 0"},
		},
		{
			name:   "fractions and big numbers are a mismatch for int",
			fields: []abi.FieldDecl{int0},
			values: []string{`{"n":1.5}`, `{"n":1e19}`, `{"n":9223372036854775808}`, `{"n":1e-1}`, `{"n":"1"}`},
			want:   []string{"0 - | mismatch", "1 - | mismatch", "2 - | mismatch", "3 - | mismatch", "4 - | mismatch"},
		},
		{
			name:   "strict int reasons",
			fields: []abi.FieldDecl{{Path: "user.age", Type: abi.TypeInt, Flags: abi.FieldStrict}},
			values: []string{`{"user":{"age":"x"}}`, `{"user":{"age":1.5}}`, `{"user":{"age":1e19}}`, `{"user":{}}`},
			want:   []string{"3 - | missing"},
			rejects: []string{`0: field "user.age": want int, found string`, `1: field "user.age": want int, found number 1.5 (not an integer)`,
				`2: field "user.age": want int, found number 1e19 (outside int64)`},
		},
		{
			name:    "floats keep 17 digits",
			fields:  []abi.FieldDecl{{Path: "f", Type: abi.TypeFloat, Flags: abi.FieldStrict}},
			values:  []string{`{"f":0.30000000000000004}`, `{"f":1e400}`, `{"f":5}`},
			want:    []string{"0 - | 0.30000000000000004", "2 - | 5"},
			rejects: []string{`1: field "f": want float, found number 1e400 (outside float64)`},
		},
		{
			name:   "strings are decoded",
			fields: []abi.FieldDecl{{Path: "s", Type: abi.TypeString}},
			values: []string{`{"s":"caf\u00e9 \ud83d\ude00 \"q\" \n"}`, `{"s":""}`, `{"s":"\ud800"}`},
			want:   []string{`0 - | "café 😀 \"q\" \n"`, `1 - | ""`, "2 - | \"\uFFFD\""},
		},
		{
			name:   "nested paths and escaped names",
			fields: []abi.FieldDecl{{Path: "a.b.c", Type: abi.TypeInt}, {Path: `x\.y`, Type: abi.TypeInt}, {Path: "a.b", Type: abi.TypeRaw}},
			values: []string{`{"a":{"b":{"c":7}},"x.y":8}`, `{"a":{"b":5}}`, `{"a":[{"b":{"c":1}}]}`},
			want:   []string{`0 - | 7 | 8 | raw {"c":7}`, "1 - | missing | missing | raw 5", "2 - | missing | missing | missing"},
		},
		{
			name:   "the last of repeated names counts",
			fields: []abi.FieldDecl{{Path: "a", Type: abi.TypeInt}, {Path: "o.x", Type: abi.TypeInt}},
			values: []string{`{"a":1,"a":2,"o":{"x":1},"o":{"y":2}}`},
			want:   []string{"0 - | 2 | missing"},
		},
		{
			name:   "nulls",
			fields: []abi.FieldDecl{int0, {Path: "r", Type: abi.TypeRaw}},
			values: []string{`{"n":null,"r":null}`, `null`},
			want:   []string{"0 - | null | null", "1 - | missing | missing"},
		},
		{
			name:    "required fields",
			fields:  []abi.FieldDecl{{Path: "n", Type: abi.TypeInt, Flags: abi.FieldRequired}},
			values:  []string{`{"n":null}`, `{}`, `{"n":"x"}`, `<nil>`, `[1]`},
			want:    []string{"2 - | mismatch"},
			rejects: []string{`0: field "n": null`, `1: field "n": missing`, `3: field "n": missing`, `4: field "n": missing`},
		},
		{
			name:    "values that are not JSON are rejected",
			fields:  []abi.FieldDecl{int0},
			values:  []string{`{"n":1`, `{"n":1}`, ``, `{"n":01}`},
			want:    []string{"1 - | 1"},
			rejects: []string{`0: value is not JSON: wjson: unexpected end of JSON input at byte offset 6`, `2: value is not JSON: wjson: unexpected end of JSON input at byte offset 0`, `3: value is not JSON: wjson: invalid character '1' after object key:value pair at byte offset 6`},
		},
		{
			name:    "no fields",
			values:  []string{`{}`, `x`},
			want:    []string{"0 -"},
			rejects: []string{`1: value is not JSON: wjson: invalid character 'x' looking for beginning of value at byte offset 0`},
		},
		{
			name:   "empty batch",
			fields: []abi.FieldDecl{int0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := NewExtractor(mustDecl(t, tt.fields...))
			recs := make([]Record, len(tt.values))
			for i, v := range tt.values {
				recs[i] = Record{Timestamp: int64(i)}
				if v != "<nil>" {
					recs[i].Value = []byte(v)
				}
			}
			for range 2 { // the second time with the buffers grown
				b, err := x.Extract(recs)
				if err != nil {
					t.Fatal(err)
				}
				got := describe(t, b.Frame)
				var rejects []string
				for _, r := range b.Rejects {
					rejects = append(rejects, fmt.Sprintf("%d: %s", r.Index, r.Reason))
				}
				if !slices.Equal(got, tt.want) || !slices.Equal(rejects, tt.rejects) {
					t.Fatalf("records:\n%s\nrejects:\n%s\nwant:\n%s\nrejects:\n%s", strings.Join(got, "\n"), strings.Join(rejects, "\n"),
						strings.Join(tt.want, "\n"), strings.Join(tt.rejects, "\n"))
				}
				for j, i := range b.Kept {
					if !strings.HasPrefix(got[j], fmt.Sprint(i)+" ") {
						t.Fatalf("Kept[%d] = %d, but the record is %q", j, i, got[j])
					}
				}
			}
		})
	}
}

func TestExtractKeys(t *testing.T) {
	x := NewExtractor(mustDecl(t))
	b, err := x.Extract([]Record{{Timestamp: -1, Key: []byte("k")}, {Timestamp: 1 << 62, Key: []byte{}}, {}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`-1 "k"`, `4611686018427387904 ""`, "0 -"}
	if got := describe(t, b.Frame); !slices.Equal(got, want) {
		t.Fatalf("records %q, want %q", got, want)
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name  string
		frame []byte
		want  string
	}{
		{"unknown type", abi.AppendFieldDecls(nil, []abi.FieldDecl{{Path: "a", Type: abi.TypeInt}, {Path: "user.age", Type: 7}}), `declared field 1 ("user.age"): unknown type 7`},
		{"bad path", abi.AppendFieldDecls(nil, []abi.FieldDecl{{Path: "user..age", Type: abi.TypeInt}}), `declared field 0 ("user..age"): malformed field path`},
		{"duplicate", abi.AppendFieldDecls(nil, []abi.FieldDecl{{Path: "a", Type: abi.TypeInt}, {Path: "a", Type: abi.TypeRaw}}), `declared field 1 ("a"): the same path as field 0`},
		{"truncated", []byte{1, 0, 0, 0, 1, 0, 0, 0, 1}, "truncated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(tt.frame)
			var de *abi.DeclError
			var fe *abi.FrameError
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.As(err, &de) && !errors.As(err, &fe) {
				t.Fatalf("Compile = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	d := mustDecl(t, abi.FieldDecl{Path: `a\.b.c`, Type: abi.TypeBool, Flags: abi.FieldStrict})
	if d.Len() != 1 || d.Field(0).Path != `a\.b.c` {
		t.Fatalf("Decl = %d fields, %+v", d.Len(), d.Field(0))
	}
}

func TestExactInt(t *testing.T) {
	tests := []struct {
		num  string
		want int64
		res  intResult
	}{
		{"0", 0, intOK}, {"-0", 0, intOK}, {"12", 12, intOK}, {"1.0", 1, intOK}, {"1e3", 1000, intOK},
		{"1E+3", 1000, intOK}, {"120e-1", 12, intOK}, {"0.000e5", 0, intOK}, {"100000000000000000000e-2", 1e18, intOK},
		{"9223372036854775807", 9223372036854775807, intOK}, {"-9223372036854775808", -9223372036854775808, intOK},
		{"9223372036854775808", 0, intRange}, {"-9223372036854775809", 0, intRange}, {"922337203685477580.8e1", 0, intRange}, {"922337203685477580.7e1", 9223372036854775807, intOK},
		{"1e19", 0, intRange}, {"1e99999999999999999999", 0, intRange}, {"1.5", 0, intFraction}, {"1e-99999999999999999999", 0, intFraction},
		{"0.1", 0, intFraction}, {"9007199254740993", 9007199254740993, intOK}, {"9007199254740993.000", 9007199254740993, intOK},
	}
	for _, tt := range tests {
		t.Run(tt.num, func(t *testing.T) {
			got, res := exactInt([]byte(tt.num))
			if res != tt.res || res == intOK && got != tt.want {
				t.Fatalf("exactInt(%s) = %d, %d; want %d, %d", tt.num, got, res, tt.want, tt.res)
			}
		})
	}
}
