package wasm

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/record"
)

// TestGoBatchFunctions: Go plugins written as batch functions answer
// generated records as their per-record twins do, through the whole
// typed path (extraction, the guest's batch loop, patches, dead letters),
// at several batch sizes.
func TestGoBatchFunctions(t *testing.T) {
	tests := []struct {
		name       string
		op         abi.Op
		row, batch string
		config     string
	}{
		{"filter", abi.OpFilter, "plugins/conformance/go/keep_active", "guest-sdk/go/testdata/keep_active_batch", ""},
		{"map", abi.OpMap, "plugins/conformance/go/typed_uppercase", "guest-sdk/go/testdata/uppercase_batch", `{"field":"kind"}`},
	}
	rng := rand.New(rand.NewPCG(3, 5))
	in := activeReadings(rng, 700)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			load := func(dir string) *Worker {
				cfg := goConfig(t, dir, tc.op)
				cfg.InitConfig = []byte(tc.config)
				_, w := mustLoad(t, sharedRuntime(t), cfg)
				return w
			}
			row, batch := load(tc.row), load(tc.batch)
			for _, n := range []int{1, 7, 256, 700} {
				want, got := describeOutput(process(t, row, in[:n])), describeOutput(process(t, batch, in[:n]))
				if !slices.Equal(got, want) {
					t.Fatalf("batch of %d:\n got %q\nwant %q", n, got, want)
				}
			}
		})
	}
}

// activeReadings returns n JSON records with a "kind" string (or a number,
// or nothing) and an "active" bool (or null, a string, or nothing).
func activeReadings(rng *rand.Rand, n int) []record.Record {
	kinds := []string{`"kind":"temp",`, `"kind":"h\u00e9at ok",`, `"kind":7,`, ``, `"kind":"",`}
	actives := []string{`"active":true`, `"active":false`, `"active":null`, `"active":"yes"`, `"x":1`}
	in := make([]record.Record, n)
	for i := range in {
		in[i] = record.Record{
			Value:     fmt.Appendf(nil, `{%s"n":%d,%s}`, kinds[rng.IntN(len(kinds))], i, actives[rng.IntN(len(actives))]),
			Timestamp: int64(i),
		}
	}
	return in
}

// describeOutput renders an output's records and dead letters as text.
func describeOutput(out *record.Output) []string {
	var s []string
	for _, r := range out.Records {
		s = append(s, fmt.Sprintf("%d %s", r.Timestamp, r.Value))
	}
	for _, d := range out.Dead {
		s = append(s, fmt.Sprintf("dead %d %s", d.Record.Timestamp, d.Reason))
	}
	return s
}
