package sensoranomaly_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// TestSensorAnomalyMatchesPython runs pipeline.yaml on generated readings
// and compares its output, byte for byte, with what the seed's own Python
// code prints for them (testdata/seed001.py: the seed's operators verbatim,
// run by python3 without PyFlink). The readings have many sensors, kinds
// and key orders, int and float values in every notation, tiny, huge and
// negative ones, ints of up to 80 digits, and extra fields of every JSON
// kind, so the output covers Python's int and float arithmetic, its
// `lut.get(kind) or value`, and str() of every value json.loads reads.
func TestSensorAnomalyMatchesPython(t *testing.T) {
	checkAgainstPython(t, "pipeline.yaml")
}

// checkAgainstPython runs pipeline on generated readings and compares its
// output with the Python reference's.
func checkAgainstPython(t *testing.T, pipeline string) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the reference output comes from the seed's Python code (testdata/seed001.py)")
	}
	input := filepath.Join(t.TempDir(), "readings.jsonl")
	if err := os.WriteFile(input, generateReadings(rand.New(rand.NewPCG(1, 1)), 4000), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, filepath.Join("testdata", "seed001.py"), input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	want, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3 testdata/seed001.py: %v\n%s", err, stderr.Bytes())
	}
	// The generated readings must reach what the test is about.
	for _, s := range []string{"|delta=12\n", "|delta=1.00000000000000", "e-05", "e+16", "=inf", "=None", "=True", "{'", "['",
		"|delta=" + strings.Repeat("9", 5)} {
		if !bytes.Contains(want, []byte(s)) {
			t.Fatalf("the reference output has no %q: the generator does not cover it", s)
		}
	}
	if !containsLongInt(want, 30) {
		t.Fatal("the reference output has no int of 30 digits: the generator does not cover it")
	}

	t.Setenv("WEIR_SOURCES_READINGS_PATH", input)
	res := weirtest.Run(t, ".", "", "run", pipeline)
	if res.Code != 0 {
		t.Fatalf("weir run %s: exit %d\n%s", pipeline, res.Code, res.Stderr)
	}
	if !strings.Contains(res.Stderr, "dead_letters=0") {
		t.Errorf("records were rejected:\n%s", res.Stderr)
	}
	if got := []byte(res.Stdout); !bytes.Equal(got, want) {
		t.Fatalf("weir's output differs from the seed's Python code's\n%s", firstDifference(got, want))
	}
}

// containsLongInt reports whether out has a run of at least n digits.
func containsLongInt(out []byte, n int) bool {
	run := 0
	for _, c := range out {
		if c >= '0' && c <= '9' {
			if run++; run >= n {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// firstDifference describes the first line where got and want differ.
func firstDifference(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			return fmt.Sprintf("line %d (of %d, want %d):\n got: %q\nwant: %q", i+1, len(g), len(w), gl, wl)
		}
	}
	return "no line differs"
}

// generateReadings returns n readings as JSON lines, in the shape of the
// seed's, with every variation its Python code handles.
func generateReadings(rng *rand.Rand, n int) []byte {
	g := &gen{rng: rng}
	var out bytes.Buffer
	for range n {
		g.reading(&out)
		out.WriteByte('\n')
	}
	return out.Bytes()
}

type gen struct{ rng *rand.Rand }

func (g *gen) pick(xs ...string) string { return xs[g.rng.IntN(len(xs))] }

// percent returns true p times in 100.
func (g *gen) percent(p int) bool { return g.rng.IntN(100) < p }

// field is one member of a generated object: its name and JSON text.
type field struct{ name, json string }

func (g *gen) reading(out *bytes.Buffer) {
	var fs []field
	// Forty string ids, and an id "7" beside a number 7: Python keys them
	// apart, the host's record key does not.
	id := strconv.Quote(fmt.Sprintf("s%02d", g.rng.IntN(40)))
	switch g.rng.IntN(20) {
	case 0:
		id = `"7"`
	case 1:
		id = "7"
	}
	fs = append(fs, field{"id", id})
	kind := ""
	switch k := g.rng.IntN(100); {
	case k < 40:
		kind = `"temp"`
	case k < 60:
		kind = `"humidity"`
	case k < 72:
		kind = `"pressure"`
	case k < 85:
		kind = `"count"` // ints only, of up to 80 digits
	case k < 89:
		kind = "" // no kind: None
	case k < 92:
		kind = "null"
	default:
		kind = g.pick("1", "1.0", "true", "1e0") // one dict key
	}
	if kind != "" {
		fs = append(fs, field{"kind", kind})
	}
	switch {
	case kind == `"count"`:
		fs = append(fs, field{"value", g.bigInt(1 + g.rng.IntN(80))})
	case id < `"s05"` && g.percent(80): // calm sensors: deltas about 1
		fs = append(fs, field{"value", g.nearFifty()})
	default:
		fs = append(fs, field{"value", g.value()})
	}
	fs = append(fs, field{"timestamp", g.timestamp()})
	for range g.rng.IntN(4) - 1 { // extra fields in one reading of four or so
		fs = append(fs, g.extra())
	}
	g.rng.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
	if g.percent(3) { // a repeated name: the last value counts, in the first place
		v := g.value()
		if kind == `"count"` {
			v = g.bigInt(1 + g.rng.IntN(20))
		}
		fs = append(fs, field{"value", v})
	}
	g.object(out, fs)
}

// object writes fs as a JSON object, compact or spaced.
func (g *gen) object(out *bytes.Buffer, fs []field) {
	sep, colon := ",", ":"
	if g.percent(50) {
		sep, colon = ", ", ": "
	}
	out.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			out.WriteString(sep)
		}
		out.WriteString(strconv.Quote(f.name))
		out.WriteString(colon)
		out.WriteString(f.json)
	}
	out.WriteByte('}')
}

func (g *gen) digits(n int) string {
	var b strings.Builder
	b.WriteByte(byte('1' + g.rng.IntN(9)))
	for i := 1; i < n; i++ {
		b.WriteByte(byte('0' + g.rng.IntN(10)))
	}
	return b.String()
}

func (g *gen) sign() string {
	if g.percent(30) {
		return "-"
	}
	return ""
}

func (g *gen) bigInt(n int) string { return g.sign() + g.digits(n) }

// value returns a reading's value: a JSON number of any notation, or
// rarely a boolean (Python's bool is an int).
func (g *gen) value() string {
	switch g.rng.IntN(20) {
	case 0, 1, 2, 3: // a small int
		return strconv.Itoa(g.rng.IntN(200) - 50)
	case 4, 5, 6, 7: // a decimal, perhaps with trailing zeros (90.50)
		return g.sign() + strconv.Itoa(g.rng.IntN(150)) + "." + g.digits(1+g.rng.IntN(3)) + strings.Repeat("0", g.rng.IntN(2))
	case 8:
		return g.nearFifty()
	case 9: // exponent notation
		return g.pick("1E-5", "1.0e16", "1e16", "2.5E+3", "-3e-7", "1E2", "7.0E0", "1e-4", "1.5e15", "9999999999999999e0")
	case 10: // tiny
		return g.pick("5e-324", "1e-300", "-2.2250738585072014e-308", "1.2e-10", "0.00001", "-0.000123")
	case 11: // huge
		return g.pick("1.7976931348623157e308", "1e300", "-9.99e307", "1.0e22", "123456789012345678901234567890.0")
	case 12, 13: // an int of up to 40 digits, which still converts to a float
		return g.bigInt(1 + g.rng.IntN(40))
	case 14: // zero, which `lut.get(kind) or value` skips
		return g.pick("0", "-0", "0.0", "-0.0", "0e0")
	case 15: // a boolean
		return g.pick("true", "false")
	case 16: // beyond the double range: inf
		if g.percent(20) {
			return g.pick("1e400", "-1e400")
		}
		return strconv.Itoa(g.rng.IntN(10))
	default: // a plain reading like the seed's
		return strconv.Itoa(20+g.rng.IntN(80)) + "." + strconv.Itoa(g.rng.IntN(10))
	}
}

// nearFifty returns a value about 50: two of them differ by about 1, a
// little more or less, or exactly.
func (g *gen) nearFifty() string {
	return g.pick("50", "51", "52", "50.0", "51.0", "52.0", "50.5", "51.5", "51.5000000000001", "49.99999999999999",
		"51.00000000000001", "50.99999999999999", "5.1e1", "true")
}

func (g *gen) timestamp() string {
	ms := 1722920000000 + g.rng.Int64N(60_000_000)
	switch g.rng.IntN(12) {
	case 0:
		return strconv.FormatInt(ms, 10) + ".0"
	case 1:
		return "1.722960137e12"
	case 2:
		return `"2024-08-06T16:02:17Z"`
	case 3:
		return "null"
	}
	return strconv.FormatInt(ms, 10)
}

// texts are JSON strings whose Python repr and str need care: quotes,
// backslashes, control characters, non-ASCII printable and not.
var texts = []string{
	`"°C"`, `"caf\u00e9"`, `"it's"`, `"say \"hi\""`, `"both ' and \""`, `"back\\slash"`,
	`"tab\there"`, `"line\nbreak"`, `"ctl\u0001\u001f\u007f"`, `"nbsp\u00a0soft\u00adhyphen"`,
	`"zero\u200bwidth"`, `"sep\u2028line"`, `"emoji \ud83d\ude00"`, `"\u4e2d\u6587"`, `"e\u0301"`,
	`"private\ue000use"`, `"bom\ufeff"`, `""`, `"plain"`, `"slash\/"`, `"nul\u0000"`,
}

// extra returns an extra field of any JSON kind.
func (g *gen) extra() field {
	switch g.rng.IntN(6) {
	case 0:
		return field{g.pick("unit", "note", "loc"), g.pick(texts...)}
	case 1:
		return field{"ok", g.pick("true", "false", "null")}
	case 2:
		return field{"tags", g.array(2)}
	case 3:
		return field{"meta", g.nested(2)}
	case 4:
		return field{"empty", g.pick("[]", "{}", `""`)}
	default:
		return field{g.pick("seq", "offset"), g.value()}
	}
}

// any returns a JSON value of any kind, nested up to depth.
func (g *gen) any(depth int) string {
	switch k := g.rng.IntN(8); {
	case k < 2:
		return g.pick(texts...)
	case k < 4:
		return g.value()
	case k == 4:
		return g.pick("true", "false", "null")
	case k == 5 && depth > 0:
		return g.array(depth - 1)
	case k == 6 && depth > 0:
		return g.nested(depth - 1)
	}
	return g.bigInt(1 + g.rng.IntN(30))
}

func (g *gen) array(depth int) string {
	items := make([]string, g.rng.IntN(4))
	for i := range items {
		items[i] = g.any(depth)
	}
	return "[" + strings.Join(items, g.pick(",", ", ")) + "]"
}

func (g *gen) nested(depth int) string {
	fs := make([]field, g.rng.IntN(4))
	for i := range fs {
		fs[i] = field{g.pick("a", "b", "it's", "k\"q", "é", "x"), g.any(depth)} // names may repeat
	}
	var b bytes.Buffer
	g.object(&b, fs)
	return b.String()
}
