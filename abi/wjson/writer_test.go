package wjson

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
)

// absDiff computes |a-b| in float64 arithmetic at run time (a constant
// expression would be computed exactly).
func absDiff(a, b float64) float64 { return math.Abs(a - b) }

func TestAppendFloat(t *testing.T) {
	// Expectations are Python 3's repr() of the same float.
	tests := []struct {
		name string
		f    float64
		want string
	}{
		{"zero", 0, "0.0"},
		{"negative zero", math.Copysign(0, -1), "-0.0"},
		{"one", 1, "1.0"},
		{"integral", 52, "52.0"},
		{"seed delta 52.7", absDiff(91.2, 38.5), "52.7"},
		{"seed delta 10.7", absDiff(90.5, 101.2), "10.700000000000003"},
		{"seed delta 4.41", absDiff(55.4, 50.99), "4.409999999999997"},
		{"hundred", 100, "100.0"},
		{"tenth", 0.1, "0.1"},
		{"third", 1.0 / 3, "0.3333333333333333"},
		{"pi-ish", 3.14159, "3.14159"},
		{"negative", -2.5, "-2.5"},
		{"large fraction", 123456789.123, "123456789.123"},
		{"1e15 positional", 1e15, "1000000000000000.0"},
		{"just below 1e16", 9999999999999998, "9999999999999998.0"},
		{"1e16 exponent", 1e16, "1e+16"},
		{"1e22", 1e22, "1e+22"},
		{"many digits exponent", 12345678901234567890, "1.2345678901234567e+19"},
		{"max float", math.MaxFloat64, "1.7976931348623157e+308"},
		{"negative large", -1e100, "-1e+100"},
		{"1e-4 positional", 1e-4, "0.0001"},
		{"small positional", 0.00012345, "0.00012345"},
		{"1e-5 exponent", 1e-5, "1e-05"},
		{"1.5e-5", 1.5e-5, "1.5e-05"},
		{"1e-7", 1e-7, "1e-07"},
		{"1.23e-18", 123e-20, "1.23e-18"},
		{"2.5e-300", 2.5e-300, "2.5e-300"},
		{"smallest subnormal", 5e-324, "5e-324"},
		{"nan", math.NaN(), "nan"},
		{"inf", math.Inf(1), "inf"},
		{"negative inf", math.Inf(-1), "-inf"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := string(AppendFloat([]byte("x"), tc.f))
			if got != "x"+tc.want {
				t.Fatalf("AppendFloat(%v) = %q, want %q", tc.f, got[1:], tc.want)
			}
			if math.IsNaN(tc.f) || math.IsInf(tc.f, 0) {
				return
			}
			back, err := strconv.ParseFloat(got[1:], 64)
			if err != nil || math.Float64bits(back) != math.Float64bits(tc.f) {
				t.Errorf("ParseFloat(%q) = %v, %v; want %v", got[1:], back, err, tc.f)
			}
		})
	}
}

func TestAppendQuote(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "abc", `"abc"`},
		{"empty", "", `""`},
		{"quote and backslash", `a"b\c`, `"a\"b\\c"`},
		{"short escapes", "\n\r\t\b\f", `"\n\r\t\b\f"`},
		{"other controls", "\x00\x01\x1f", `"\u0000\u0001\u001f"`},
		{"del is not escaped", "\x7f", "\"\x7f\""},
		{"slash is not escaped", "a/b", `"a/b"`},
		{"html is not escaped", "<&>", `"<&>"`},
		{"utf8 kept", "héllo 世界 😀", `"héllo 世界 😀"`},
		{"invalid utf8", "a\xffb", `"a\ufffdb"`},
		{"truncated utf8", "\xe4\xb8", `"\ufffd\ufffd"`},
		{"line separator kept", "\u2028", "\"\u2028\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := string(AppendQuote(nil, tc.in))
			if got != tc.want {
				t.Fatalf("AppendQuote(%q) = %s, want %s", tc.in, got, tc.want)
			}
			if b := string(AppendQuoteBytes(nil, []byte(tc.in))); b != got {
				t.Errorf("AppendQuoteBytes = %s, AppendQuote = %s", b, got)
			}
			// encoding/json must read back what encoding/json itself would
			// have preserved of the input.
			var back, std string
			if err := json.Unmarshal([]byte(got), &back); err != nil {
				t.Fatal(err)
			}
			enc, _ := json.Marshal(tc.in)
			if err := json.Unmarshal(enc, &std); err != nil {
				t.Fatal(err)
			}
			if back != std {
				t.Errorf("round trip gives %q, encoding/json's gives %q", back, std)
			}
		})
	}
}

func TestWriter(t *testing.T) {
	tests := []struct {
		name  string
		write func(w *Writer)
		want  string
	}{
		{"empty object", func(w *Writer) { w.BeginObject(); w.EndObject() }, `{}`},
		{"empty array", func(w *Writer) { w.BeginArray(); w.EndArray() }, `[]`},
		{"scalar", func(w *Writer) { w.Int(-3) }, `-3`},
		{"alert", func(w *Writer) {
			w.BeginObject()
			w.Key("id")
			w.Raw([]byte(`"123"`))
			w.Key("value")
			w.Raw([]byte("101.2"))
			w.Key("message")
			w.String("Sensor offset alert!")
			w.Key("delta")
			w.Float(absDiff(90.5, 101.2))
			w.EndObject()
		}, `{"id":"123","value":101.2,"message":"Sensor offset alert!","delta":10.700000000000003}`},
		{"nested", func(w *Writer) {
			w.BeginObject()
			w.Key("a")
			w.BeginArray()
			w.Int(1)
			w.BeginObject()
			w.EndObject()
			w.BeginArray()
			w.EndArray()
			w.Uint(math.MaxUint64)
			w.EndArray()
			w.KeyBytes([]byte("b\n"))
			w.BeginObject()
			w.Key("c")
			w.Null()
			w.Key("d")
			w.Bool(true)
			w.Key("e")
			w.Bool(false)
			w.EndObject()
			w.Key("f")
			w.StringBytes([]byte(`q"`))
			w.EndObject()
		}, `{"a":[1,{},[],18446744073709551615],"b\n":{"c":null,"d":true,"e":false},"f":"q\""}`},
		{"floats", func(w *Writer) {
			w.BeginArray()
			w.Float(52)
			w.Float(1e16)
			w.Float(1e-5)
			w.Float(math.NaN())
			w.Float(math.Inf(1))
			w.Float(math.Inf(-1))
			w.EndArray()
		}, `[52.0,1e+16,1e-05,null,null,null]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var w Writer
			w.Reset([]byte("prefix"))
			tc.write(&w)
			got := string(w.Bytes())
			if got != "prefix"+tc.want {
				t.Fatalf("got %s, want prefix%s", got, tc.want)
			}
			if !json.Valid([]byte(tc.want)) {
				t.Errorf("%s is not valid JSON", tc.want)
			}
		})
	}
}

func TestWriterZeroAllocs(t *testing.T) {
	buf := make([]byte, 0, 1024)
	var w Writer
	n := testing.AllocsPerRun(100, func() {
		w.Reset(buf[:0])
		w.BeginObject()
		w.Key("id")
		w.String("123")
		w.Key("delta")
		w.Float(10.700000000000003)
		w.Key("n")
		w.Int(42)
		w.EndObject()
	})
	if n != 0 {
		t.Errorf("%v allocations per run, want 0", n)
	}
}
