package pyfmt

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The texts Python 3 prints, as str(json.loads(literal)).
var numberCases = []struct{ lit, want string }{
	{"0", "0"},
	{"-0", "0"},
	{"12", "12"},
	{"-12", "-12"},
	{"1722960137000", "1722960137000"},
	{"123456789012345678901234567890", "123456789012345678901234567890"},
	{"-123456789012345678901234567890", "-123456789012345678901234567890"},
	{"0.0", "0.0"},
	{"-0.0", "-0.0"},
	{"12.0", "12.0"},
	{"90.50", "90.5"},
	{"90.5", "90.5"},
	{"1E2", "100.0"},
	{"1e2", "100.0"},
	{"1E-5", "1e-05"},
	{"0.0001", "0.0001"},
	{"0.00001", "1e-05"},
	{"1.0e16", "1e+16"},
	{"1e15", "1000000000000000.0"},
	{"9999999999999998.0", "9999999999999998.0"},
	{"1.5e-7", "1.5e-07"},
	{"1e100", "1e+100"},
	{"1.7976931348623157e308", "1.7976931348623157e+308"},
	{"5e-324", "5e-324"},
	{"2.4e-324", "0.0"},
	{"-1e-400", "-0.0"},
	{"1e400", "inf"},
	{"-1e400", "-inf"},
	{"10.700000000000003", "10.700000000000003"},
	{"0.1", "0.1"},
	{"123456789012345678901234567890.0", "1.2345678901234568e+29"},
	{"1E+2", "100.0"},
	{"1e-0", "1.0"},
}

func TestAppendNumber(t *testing.T) {
	for _, c := range numberCases {
		got, err := AppendNumber([]byte("x="), []byte(c.lit))
		if err != nil || string(got) != "x="+c.want {
			t.Errorf("AppendNumber(%s) = %q, %v; want %q", c.lit, got, err, "x="+c.want)
		}
	}
}

func TestAppendNumberSyntax(t *testing.T) {
	for _, lit := range []string{"", "-", "+1", "01", "-01", "1.", ".5", "1e", "1e+", "1.e5", "0x10", "1_000",
		"NaN", "Infinity", "-Infinity", "inf", " 1", "1 ", "1,", "--1", "١"} {
		got, err := AppendNumber([]byte("x"), []byte(lit))
		if !errors.Is(err, ErrSyntax) || string(got) != "x" {
			t.Errorf("AppendNumber(%q) = %q, %v; want x, ErrSyntax", lit, got, err)
		}
		if Valid([]byte(lit)) {
			t.Errorf("Valid(%q) = true", lit)
		}
		if _, err := ParseFloat([]byte(lit)); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseFloat(%q) error %v, want ErrSyntax", lit, err)
		}
	}
}

func TestIsInt(t *testing.T) {
	for lit, want := range map[string]bool{"0": true, "-0": true, "12": true, "1e2": false, "1E2": false, "1.0": false,
		"123456789012345678901234567890": true} {
		if got := IsInt([]byte(lit)); got != want {
			t.Errorf("IsInt(%s) = %v", lit, got)
		}
	}
}

func TestParseFloat(t *testing.T) {
	for lit, want := range map[string]float64{"1e400": math.Inf(1), "-1e400": math.Inf(-1), "90.50": 90.5,
		"12": 12, "123456789012345678901234567890": 1.2345678901234568e+29, "2.5e-324": 5e-324} {
		if got, err := ParseFloat([]byte(lit)); err != nil || got != want {
			t.Errorf("ParseFloat(%s) = %v, %v; want %v", lit, got, err, want)
		}
	}
	if f, err := ParseFloat([]byte("-1e-400")); err != nil || f != 0 || !math.Signbit(f) {
		t.Errorf("ParseFloat(-1e-400) = %v, %v; want -0", f, err)
	}
}

func TestAppendFloat(t *testing.T) {
	for f, want := range map[float64]string{12: "12.0", -12.5: "-12.5", 1e16: "1e+16", 1e-5: "1e-05",
		math.Copysign(0, -1): "-0.0", math.Inf(1): "inf", math.Inf(-1): "-inf", math.NaN(): "nan",
		52.7: "52.7", 10.700000000000003: "10.700000000000003", 1e22: "1e+22", 123456.789: "123456.789"} {
		if got := AppendFloat(nil, f); string(got) != want {
			t.Errorf("AppendFloat(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestNoAllocations(t *testing.T) {
	dst := make([]byte, 0, 64)
	lits := [][]byte{[]byte("123456789012345678901234567890"), []byte("1.0e16"), []byte("90.50"),
		[]byte("1.2345678901234567890123456789012345678901234567890e-10")}
	if n := testing.AllocsPerRun(100, func() {
		for _, lit := range lits {
			dst, _ = AppendNumber(dst[:0], lit)
		}
	}); n != 0 {
		t.Errorf("AppendNumber allocates %v times", n)
	}
}

// TestAgainstPython prints random JSON numbers of every shape with
// python3's str(json.loads(...)) and with AppendNumber, and compares.
func TestAgainstPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: cannot compare with Python's own printing")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var lits []string
	for _, c := range numberCases {
		lits = append(lits, c.lit)
	}
	digits := func(n int) string {
		var b strings.Builder
		b.WriteByte(byte('1' + rng.IntN(9)))
		for i := 1; i < n; i++ {
			b.WriteByte(byte('0' + rng.IntN(10)))
		}
		return b.String()
	}
	for range 4000 {
		sign := ""
		if rng.IntN(2) == 0 {
			sign = "-"
		}
		var lit string
		switch rng.IntN(6) {
		case 0: // an int, up to 40 digits
			lit = sign + digits(1+rng.IntN(40))
		case 1: // a decimal with trailing zeros
			lit = sign + digits(1+rng.IntN(5)) + "." + digits(1+rng.IntN(6)) + strings.Repeat("0", rng.IntN(3))
		case 2: // a decimal with an exponent, tiny to huge
			lit = sign + digits(1) + "." + digits(1+rng.IntN(17)) + "eE"[rng.IntN(2):][:1] + strconv.Itoa(rng.IntN(640)-320)
		case 3: // an int with an exponent
			lit = sign + digits(1+rng.IntN(3)) + "e" + strconv.Itoa(rng.IntN(40)-20)
		case 4: // a random double's shortest text, in Go's own notation
			f := math.Float64frombits(rng.Uint64())
			if math.IsNaN(f) || math.IsInf(f, 0) {
				f = rng.NormFloat64()
			}
			lit = strconv.FormatFloat(f, 'g', -1, 64)
		default: // a small fraction: 0.000ddd
			lit = sign + "0." + strings.Repeat("0", rng.IntN(8)) + digits(1+rng.IntN(4))
		}
		if !Valid([]byte(lit)) {
			t.Fatalf("generated %q, which is not a JSON number", lit)
		}
		lits = append(lits, lit)
	}
	cmd := exec.Command(py, "-c", "import sys, json\nfor line in sys.stdin: print(str(json.loads(line)))")
	cmd.Stdin = strings.NewReader(strings.Join(lits, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	want := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(want) != len(lits) {
		t.Fatalf("python3 printed %d lines for %d numbers", len(want), len(lits))
	}
	for i, lit := range lits {
		got, err := AppendNumber(nil, []byte(lit))
		if err != nil || !bytes.Equal(got, []byte(want[i])) {
			t.Errorf("AppendNumber(%s) = %q, %v; Python prints %q", lit, got, err, want[i])
		}
	}
}
