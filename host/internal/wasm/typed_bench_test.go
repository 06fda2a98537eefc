package wasm

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/nexmark"
	"github.com/weir-stream/weir/host/internal/record"
)

// The raw and typed conventions side by side, on the same Nexmark bids.

// bidFields are the fields a Nexmark query reading bids declares.
var bidFields = []abi.FieldDecl{
	{Path: "auction", Type: abi.TypeInt, Flags: abi.FieldStrict},
	{Path: "price", Type: abi.TypeInt, Flags: abi.FieldStrict},
	{Path: "channel", Type: abi.TypeString},
	{Path: "dateTime", Type: abi.TypeInt, Flags: abi.FieldRequired | abi.FieldStrict},
}

// bids makes n keyed records holding the first n bids of the Nexmark
// generator, as JSON (about 200 bytes each).
func bids(n int) []record.Record {
	g := nexmark.NewGenerator(nexmark.Config{})
	in := make([]record.Record, 0, n)
	for ev := int64(0); len(in) < n; ev++ {
		if nexmark.KindOf(ev) != nexmark.KindBid {
			continue
		}
		v, _, ts := g.AppendEvent(nil, ev)
		in = append(in, record.Record{
			Key:       []byte(strconv.Itoa(len(in) % 97)),
			Value:     v,
			Timestamp: ts,
			Origin:    record.Origin{Source: "bench", Partition: -1, Offset: int64(len(in))},
		})
	}
	return in
}

// typedDoubleConfig is the conformance module typed_double, a typed map
// declaring price as a strict int and patching it to twice its value.
func typedDoubleConfig(t testing.TB) PluginConfig {
	t.Helper()
	path := "../../../plugins/conformance/wat/typed_double.wasm"
	bin, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return PluginConfig{Operator: "typed_double", Path: path, Wasm: bin, Op: abi.OpMap}
}

// benchConventions are the modules BenchmarkConventions compares.
func benchConventions(t testing.TB) []struct {
	name string
	cfg  PluginConfig
} {
	return []struct {
		name string
		cfg  PluginConfig
	}{
		// The guest reads nothing and keeps every record.
		{"raw=identity", watConfig(t, "identity")},
		// The host extracts the four fields a bid query reads; the guest
		// keeps every record.
		{"typed=keep", typedConfig(t, abi.OpMap, 'k', bidFields...)},
		// The guest scans each value for the price and writes the value
		// with it doubled.
		{"raw=double", watConfig(t, "raw_double")},
		// The host extracts the price; the guest answers with a patch,
		// which the host applies.
		{"typed=double", typedDoubleConfig(t)},
	}
}

// TestConventionsAgree checks that the modules of BenchmarkConventions do
// the work their names say on the benchmark's records: the raw and typed
// doublers give the same values, and the keepers keep every record.
func TestConventionsAgree(t *testing.T) {
	rt := newRuntime(t, nil)
	in := bids(50)
	got := map[string][]string{}
	for _, c := range benchConventions(t) {
		_, w := mustLoad(t, rt, c.cfg)
		out := process(t, w, in)
		if len(out.Dead) > 0 {
			t.Fatalf("%s: dead letters %+v", c.name, out.Dead)
		}
		got[c.name] = values(out.Records)
	}
	for i, v := range got["typed=double"] {
		var bid struct{ Price int64 }
		if err := json.Unmarshal(in[i].Value, &bid); err != nil {
			t.Fatal(err)
		}
		price := `"price":` + strconv.FormatInt(2*bid.Price, 10) + `,`
		if v != got["raw=double"][i] || !strings.Contains(v, price) {
			t.Fatalf("record %d: typed %s, raw %s; want %s", i, v, got["raw=double"][i], price)
		}
	}
	for _, name := range []string{"raw=identity", "typed=keep"} {
		for i, v := range got[name] {
			if v != string(in[i].Value) {
				t.Fatalf("%s changed record %d: %s", name, i, v)
			}
		}
	}
}

// BenchmarkConventions runs a batch of 512 Nexmark bids through raw and
// typed modules doing the same work (see benchConventions), reporting
// ns/record:
//
//	go test -run='^$' -bench=Conventions -count=6 ./host/internal/wasm/
func BenchmarkConventions(b *testing.B) {
	rt := sharedRuntime(b)
	in := bids(512)
	for _, c := range benchConventions(b) {
		b.Run(c.name, func(b *testing.B) {
			_, w := mustLoad(b, rt, c.cfg)
			benchProcess(b, w, in)
		})
	}
}
