package wasm

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// The differential test of the typed convention: generated records run
// through testdata/typed_echo.wasm in echo mode, which answers each record
// with a new value holding every declared field as the guest received it,
// and each record's outcome is compared with a reference computed with
// encoding/json: the field values (or why the record is dead-lettered),
// its key and timestamp, and the state the guest wrote by typed index.

// diffPaths are the paths the declarations draw from, and diffNames the
// member names the records draw from (one spelled with an escape).
var (
	diffPaths = []string{"a", "b", "u.age", "u.name", "u.addr.city", `x\.y`, "é", "n"}
	diffNames = []string{`a`, `\u0061`, `b`, `u`, `x.y`, `é`, `\u00e9`, `n`, `zz`}
)

// diffScalars are member values, spelled as JSON text.
var diffScalars = []string{
	`0`, `-0`, `42`, `-7`, `9007199254740993`, `-9223372036854775808`, `9223372036854775807`,
	`9223372036854775808`, `10000000000000000000`, `1e3`, `12.5e1`, `1.0`, `1.5`, `1E2`, `-1e-2`,
	`0.30000000000000004`, `1.0000000000000002`, `5e-324`, `1.7976931348623157e308`, `1e400`, `-1e400`,
	`1e-400`, `123456789012345678901234567890`, `2.5`,
	`"plain"`, `"caf\u00e9"`, `"\ud83d\ude00"`, `"\ud800"`, `"x\udc00y"`, `"tab\t\"q\"\\"`, `"é raw"`,
	`"\u0000"`, `""`, "\"bad \xff byte\"", `"12"`,
	`true`, `false`, `null`, `[1,2]`, `[]`, `{}`, `{"k":1}`,
}

// diffNotJSON are values that are not JSON.
var diffNotJSON = []string{`not json`, `{"a":`, `{"a":1}}`, `{'a':1}`, `[1,]`, `nul`, `{"a":01}`, `{"a":1,}`, ``, `{"a" 1}`}

// diffGen generates records and declarations from one rng.
type diffGen struct{ r *rand.Rand }

func (g diffGen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

// ws is whitespace, usually none.
func (g diffGen) ws() string {
	if g.r.IntN(4) == 0 {
		return g.pick([]string{" ", "\n", "\t ", "  "})
	}
	return ""
}

// object writes an object of up to 5 members, nesting objects for the
// member u (and addr within it) up to depth.
func (g diffGen) object(b *strings.Builder, names []string, depth int) {
	b.WriteString("{" + g.ws())
	n := g.r.IntN(6)
	for i := range n {
		if i > 0 {
			b.WriteString("," + g.ws())
		}
		name := g.pick(names)
		b.WriteString(`"` + name + `"` + g.ws() + ":" + g.ws())
		switch {
		case depth > 0 && (name == "u" || name == "addr") && g.r.IntN(4) > 0:
			g.object(b, []string{"age", "name", "addr", "city", `\u0061ge`}, depth-1)
		default:
			b.WriteString(g.pick(diffScalars))
		}
		b.WriteString(g.ws())
	}
	b.WriteString("}")
}

// record returns a generated record value: usually an object, sometimes
// another JSON value, not JSON, or none.
func (g diffGen) value() []byte {
	switch g.r.IntN(20) {
	case 0:
		return nil
	case 1:
		return []byte(g.pick(diffNotJSON))
	case 2:
		return []byte(g.pick(diffScalars))
	}
	var b strings.Builder
	b.WriteString(g.ws())
	g.object(&b, diffNames, 2)
	b.WriteString(g.ws())
	return []byte(b.String())
}

// decls returns 1 to 6 fields of distinct paths, of random types and
// flags (usually none).
func (g diffGen) decls() []abi.FieldDecl {
	paths := append([]string(nil), diffPaths...)
	g.r.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	ds := make([]abi.FieldDecl, 1+g.r.IntN(6))
	for i := range ds {
		ds[i] = abi.FieldDecl{Path: paths[i], Type: abi.FieldType(1 + g.r.IntN(5))}
		if g.r.IntN(3) == 0 {
			ds[i].Flags = abi.FieldFlags(1 + g.r.IntN(3))
		}
	}
	return ds
}

func (g diffGen) records(n int) []record.Record {
	in := make([]record.Record, n)
	for i := range in {
		in[i] = record.Record{
			Value:     g.value(),
			Timestamp: g.r.Int64N(1 << 40),
			Headers:   []record.Header{{Key: "h", Value: []byte(strconv.Itoa(i))}},
			Origin:    record.Origin{Source: "diff", Partition: 0, Offset: int64(i)},
		}
		if g.r.IntN(4) > 0 {
			in[i].Key = []byte("k" + strconv.Itoa(g.r.IntN(5)))
		}
	}
	return in
}

// refField is the reference's reading of one declared field: its status
// and, when present, what the guest's echo of it must read as, the JSON
// text of the member (compared as diffSame says).
type refField struct {
	status abi.ValueStatus
	text   string // present: the value's JSON text, as the host must write it
	reason string // why a policy would reject it: "missing", "want int, found string"
}

// refRecord reads the declared fields of value as the ABI says, with
// encoding/json, and returns them, or the reason the record is
// dead-lettered ("value is not JSON: " stands for any such reason).
func refRecord(value []byte, decls []abi.FieldDecl) ([]refField, string) {
	if value != nil && !json.Valid(value) {
		return nil, "value is not JSON: "
	}
	fs := make([]refField, len(decls))
	for k, d := range decls {
		f := refLookup(value, d)
		fs[k] = f
		switch {
		case (f.status == abi.ValueMissing || f.status == abi.ValueNull) && d.Flags&abi.FieldRequired != 0,
			f.status == abi.ValueMismatch && d.Flags&abi.FieldStrict != 0:
			return nil, "field " + strconv.Quote(d.Path) + ": " + f.reason
		}
	}
	return fs, ""
}

// refLookup follows d's path through value, member by member (the last
// occurrence of a name, as encoding/json keeps), and types what it finds.
func refLookup(value []byte, d abi.FieldDecl) refField {
	missing := refField{status: abi.ValueMissing, reason: "missing"}
	segs, _ := abi.SplitPath(d.Path)
	raw := json.RawMessage(value)
	for _, seg := range segs {
		var m map[string]json.RawMessage
		if raw == nil || json.Unmarshal(raw, &m) != nil {
			return missing
		}
		var ok bool
		if raw, ok = m[seg]; !ok {
			return missing
		}
	}
	text := string(raw)
	kind := map[byte]string{'n': "null", 't': "bool", 'f': "bool", '"': "string", '{': "object", '[': "array"}[text[0]]
	if kind == "" {
		kind = "number"
	}
	if kind == "null" {
		return refField{status: abi.ValueNull, reason: "null"}
	}
	want := map[abi.FieldType]string{abi.TypeInt: "number", abi.TypeFloat: "number", abi.TypeBool: "bool", abi.TypeString: "string"}[d.Type]
	switch {
	case d.Type == abi.TypeRaw:
		return refField{text: text}
	case kind != want:
		return refField{status: abi.ValueMismatch, reason: "want " + d.Type.String() + ", found " + kind}
	case d.Type == abi.TypeInt:
		return refInt(text)
	case d.Type == abi.TypeFloat:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return numberMismatch("float", text, "outside float64")
		}
		return refField{text: fmt.Sprint(math.Float64bits(f))}
	case d.Type == abi.TypeString:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			panic(err)
		}
		b, _ := json.Marshal(s)
		return refField{text: string(b)}
	}
	return refField{text: text} // bool
}

// refInt types a number for an int field: exact, with big.Rat.
func refInt(num string) refField {
	r, ok := new(big.Rat).SetString(num)
	switch {
	case !ok:
		panic("not a number: " + num)
	case !r.IsInt():
		return numberMismatch("int", num, "not an integer")
	case !r.Num().IsInt64():
		return numberMismatch("int", num, "outside int64")
	}
	return refField{text: r.Num().String()}
}

func numberMismatch(typ, num, why string) refField {
	if len(num) > 40 {
		num = num[:37] + "..."
	}
	return refField{status: abi.ValueMismatch, reason: "want " + typ + ", found number " + num + " (" + why + ")"}
}

// echoed returns the member text the echo must hold for f, a field of
// type typ.
func (f refField) echoed() string {
	switch f.status {
	case abi.ValueNull:
		return "null"
	case abi.ValueMissing:
		return `"missing"`
	case abi.ValueMismatch:
		return `"mismatch"`
	}
	return f.text
}

// checkEcho compares the echo out of the record in with the reference.
func checkEcho(t *testing.T, in, out record.Record, decls []abi.FieldDecl, want []refField) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(out.Value, &m); err != nil || len(m) != len(decls) {
		t.Fatalf("record %d %q: echo %q is not an object of %d members (%v)", in.Origin.Offset, in.Value, out.Value, len(decls), err)
	}
	for k, d := range decls {
		got := string(m[string(rune('a'+k))])
		if want[k].status == abi.ValuePresent {
			got = canonical(d.Type, got)
		}
		if got != want[k].echoed() {
			t.Errorf("record %d %q, field %d %q (%s, flags %d): echo %s, want %s",
				in.Origin.Offset, in.Value, k, d.Path, d.Type, d.Flags, got, want[k].echoed())
		}
	}
	if string(out.Key) != string(in.Key) || (out.Key == nil) != (in.Key == nil) || out.Timestamp != in.Timestamp+1 {
		t.Errorf("record %d: key %q at %d, want %q at %d", in.Origin.Offset, out.Key, out.Timestamp, in.Key, in.Timestamp+1)
	}
	if len(out.Headers) != 1 || string(out.Headers[0].Value) != strconv.Itoa(int(in.Origin.Offset)) || out.Origin != in.Origin {
		t.Errorf("record %d: headers %v, origin %v; want the input's", in.Origin.Offset, out.Headers, out.Origin)
	}
}

// canonical rewrites the host's text of a present value as the reference
// writes it: a float as its bits (the text must read back to them), a
// string re-marshalled by encoding/json.
func canonical(typ abi.FieldType, text string) string {
	switch typ {
	case abi.TypeFloat:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return "unparsable float " + text
		}
		return fmt.Sprint(math.Float64bits(f))
	case abi.TypeString:
		var s string
		if err := json.Unmarshal([]byte(text), &s); err != nil {
			return "unparsable string " + text
		}
		b, _ := json.Marshal(s)
		return string(b)
	}
	return text
}

func TestTypedDifferential(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if testing.Short() {
		seed = 1
	}
	t.Logf("seed %d", seed)
	g := diffGen{rand.New(rand.NewPCG(seed, seed>>1))}
	rt := newRuntime(t, nil)
	for _, size := range []int{1, 7, 600} {
		for round := range 3 {
			decls := g.decls()
			in := g.records(2 * size)
			t.Run(fmt.Sprintf("batch=%d/%d", size, round), func(t *testing.T) {
				runDifferential(t, rt, decls, in, size)
			})
		}
	}
}

// runDifferential runs in through a fresh typed_echo declaring decls, in
// batches of size, and compares every outcome with the reference.
func runDifferential(t *testing.T, rt *Runtime, decls []abi.FieldDecl, in []record.Record, size int) {
	t.Logf("declaration %+v", decls)
	cfg := typedConfig(t, abi.OpMap, 'e', decls...)
	cfg.Store = state.NewMemory()
	_, w := mustLoad(t, rt, cfg)
	out := new(record.Output)
	for lo := 0; lo < len(in); lo += size {
		if err := w.Process(context.Background(), in[lo:min(lo+size, len(in))], out); err != nil {
			t.Fatal(err)
		}
	}
	byInput := make([]*record.Record, len(in))
	for i := range out.Records {
		r := &out.Records[i]
		if byInput[r.Origin.Offset] != nil {
			t.Fatalf("two records for input %d", r.Origin.Offset)
		}
		byInput[r.Origin.Offset] = r
	}
	dead := make([]string, len(in))
	for _, d := range out.Dead {
		dead[d.Record.Origin.Offset] = d.Reason
	}
	lastTS := map[string]int64{} // the state the guest must have written, by key
	for i, r := range in {
		want, reason := refRecord(r.Value, decls)
		switch {
		case reason != "":
			if !strings.HasPrefix(dead[i], "map error: "+reason) || byInput[i] != nil {
				t.Errorf("record %d %q: dead %q, output %v; want dead-lettered: %s", i, r.Value, dead[i], byInput[i], reason)
			}
		case byInput[i] == nil:
			t.Errorf("record %d %q: no output (dead %q); want %v", i, r.Value, dead[i], want)
		default:
			checkEcho(t, r, *byInput[i], decls, want)
			lastTS[string(r.Key)] = r.Timestamp
		}
	}
	t.Logf("%d records: %d echoed, %d dead-lettered", len(in), len(out.Records), len(out.Dead))
	checkDiffState(t, cfg.Store, in, lastTS)
	if s := w.Stats(); s.Traps != 0 {
		t.Errorf("%d traps", s.Traps)
	}
}

// checkDiffState checks the slot "t" of every key of in: the timestamp
// of its last record that reached the guest, or nothing.
func checkDiffState(t *testing.T, st state.Store, in []record.Record, want map[string]int64) {
	t.Helper()
	for _, r := range in {
		v, ok, err := st.Get(state.Key(nil, "typed_echo", r.Key, []byte("t")))
		if err != nil {
			t.Fatal(err)
		}
		ts, wantOK := want[string(r.Key)]
		switch {
		case ok != wantOK:
			t.Errorf("key %q: state present %v, want %v", r.Key, ok, wantOK)
		case ok && (len(v) != 8 || int64(binary.LittleEndian.Uint64(v)) != ts):
			t.Errorf("key %q: state %x, want the timestamp %d", r.Key, v, ts)
		}
	}
}
