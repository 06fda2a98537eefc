package wjson

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The JSON test vectors every weir SDK's JSON tests read (the file's
// "comment" describes it). They are generated from this package by
// "go generate ./abi"; these tests hold the package to them, and the
// python3 test holds the floats to Python, whose repr the writer
// reproduces.

const vectorsFile = "../testdata/json-vectors.json"

type vectorCase map[string]json.RawMessage

type vectors struct {
	Lookups map[string]vectorCase `json:"lookups"`
	Quotes  map[string]vectorCase `json:"quotes"`
	Floats  map[string]vectorCase `json:"floats"`
}

func loadVectors(t *testing.T) vectors {
	t.Helper()
	b, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Lookups) == 0 || len(v.Quotes) == 0 || len(v.Floats) == 0 {
		t.Fatalf("%s lacks a section", vectorsFile)
	}
	return v
}

// sorted returns the names of cases in order, for stable failures.
func sorted(m map[string]vectorCase) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (c vectorCase) has(name string) bool { _, ok := c[name]; return ok }

func (c vectorCase) str(t *testing.T, name string) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(c[name], &s); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

// bytes reads name, or name_hex.
func (c vectorCase) bytes(t *testing.T, name string) []byte {
	t.Helper()
	if c.has(name + "_hex") {
		b, err := hex.DecodeString(c.str(t, name+"_hex"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return []byte(c.str(t, name))
}

func (c vectorCase) boolean(name string) bool { return string(c[name]) == "true" }

func (c vectorCase) bits(t *testing.T, name string) float64 {
	t.Helper()
	u, err := strconv.ParseUint(c.str(t, name), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return math.Float64frombits(u)
}

func TestVectorsLookups(t *testing.T) {
	v := loadVectors(t)
	for _, name := range sorted(v.Lookups) {
		c := v.Lookups[name]
		t.Run(name, func(t *testing.T) {
			doc := c.bytes(t, "doc")
			var got Value
			var err error
			if c.has("field") {
				got, err = Get(doc, c.str(t, "field"))
			} else {
				got, err = Parse(doc)
			}
			if c.boolean("error") {
				var se *SyntaxError
				if !errors.As(err, &se) {
					t.Fatalf("got %v, %v; want a syntax error", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if kind := c.str(t, "kind"); got.Kind.String() != kind {
				t.Fatalf("kind %v, want %s", got.Kind, kind)
			}
			if !got.Exists() {
				return
			}
			if raw := c.bytes(t, "raw"); !bytes.Equal(got.Raw, raw) {
				t.Errorf("raw %q, want %q", got.Raw, raw)
			}
			if off := string(c["offset"]); strconv.Itoa(got.Offset) != off {
				t.Errorf("offset %d, want %s", got.Offset, off)
			}
			if c.has("string") {
				want := c.str(t, "string")
				if s := got.AppendString(nil); string(s) != want {
					t.Errorf("AppendString %q, want %q", s, want)
				}
				if s := got.String(); s != want {
					t.Errorf("String %q, want %q", s, want)
				}
				if !got.StringEquals(want) || got.StringEquals(want+"!") {
					t.Errorf("StringEquals(%q) is wrong", want)
				}
			}
			if c.has("bool") {
				if b, err := got.Bool(); err != nil || b != c.boolean("bool") {
					t.Errorf("Bool %v, %v", b, err)
				}
			}
			if c.has("float") {
				f, err := got.Float()
				want := c.bits(t, "float")
				if math.Float64bits(f) != math.Float64bits(want) || (err != nil) != c.boolean("float_range") {
					t.Errorf("Float %v (%x), %v; want %v (%x), range error %v", f, math.Float64bits(f), err, want, math.Float64bits(want), c.boolean("float_range"))
				}
			}
			i, err := got.Int()
			if c.has("int") {
				if err != nil || strconv.FormatInt(i, 10) != c.str(t, "int") {
					t.Errorf("Int %d, %v; want %s", i, err, c.str(t, "int"))
				}
			} else if err == nil {
				t.Errorf("Int %d, want an error", i)
			}
		})
	}
}

func TestVectorsQuotes(t *testing.T) {
	v := loadVectors(t)
	for _, name := range sorted(v.Quotes) {
		c := v.Quotes[name]
		in, want := c.bytes(t, "in"), c.str(t, "out")
		if got := AppendQuoteBytes([]byte("x"), in); string(got) != "x"+want {
			t.Errorf("%s: AppendQuoteBytes(%q) = %s, want %s", name, in, got[1:], want)
		}
		var w Writer
		w.StringBytes(in)
		if string(w.Bytes()) != want {
			t.Errorf("%s: Writer.StringBytes(%q) = %s, want %s", name, in, w.Bytes(), want)
		}
	}
}

func TestVectorsFloats(t *testing.T) {
	v := loadVectors(t)
	for _, name := range sorted(v.Floats) {
		c := v.Floats[name]
		f, repr := c.bits(t, "bits"), c.str(t, "repr")
		if got := AppendFloat(nil, f); string(got) != repr {
			t.Errorf("%s: AppendFloat(%x) = %s, want %s", name, math.Float64bits(f), got, repr)
		}
		want := repr
		if repr == "nan" || repr == "inf" || repr == "-inf" {
			want = "null"
		}
		var w Writer
		w.Float(f)
		if string(w.Bytes()) != want {
			t.Errorf("%s: Writer.Float(%x) = %s, want %s", name, math.Float64bits(f), w.Bytes(), want)
		}
	}
}

// pythonCheck reads lines "r <hex bits>" (print the float's repr) and
// "f <number text>" (print the bits of float(text) in hex) and answers
// each with one line.
const pythonCheck = `
import struct, sys
for line in sys.stdin:
    op, arg = line.rstrip("\n").split(" ", 1)
    if op == "r":
        print(repr(struct.unpack("<d", bytes.fromhex(arg)[::-1])[0]))
    else:
        print(struct.pack("<d", float(arg))[::-1].hex())
`

// TestVectorsMatchPython checks the vectors' float reprs and number
// readings against python3's repr and float, the reference wjson follows.
func TestVectorsMatchPython(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	v := loadVectors(t)
	var in strings.Builder
	type check struct{ name, want string }
	var checks []check
	for _, name := range sorted(v.Floats) {
		c := v.Floats[name]
		in.WriteString("r " + c.str(t, "bits") + "\n")
		checks = append(checks, check{"floats: " + name, c.str(t, "repr")})
	}
	for _, name := range sorted(v.Lookups) {
		c := v.Lookups[name]
		if !c.has("float") {
			continue
		}
		in.WriteString("f " + string(c.bytes(t, "raw")) + "\n")
		checks = append(checks, check{"lookups: " + name, c.str(t, "float")})
	}
	cmd := exec.Command(python, "-c", pythonCheck)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(checks) {
		t.Fatalf("python3 answered %d lines, want %d", len(lines), len(checks))
	}
	for i, c := range checks {
		if lines[i] != c.want {
			t.Errorf("%s: python3 says %s, the vectors %s", c.name, lines[i], c.want)
		}
	}
}
