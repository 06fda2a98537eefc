package wasm

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/record"
)

// Aggregate tests and benchmarks with the Go SDK's plugins.

const (
	averageDir = "plugins/conformance/go/average"
	countryDir = "examples/customers-per-country/plugins/count"
)

// jsonRecs makes one record per JSON value, keyed by key.
func jsonRecs(key string, docs ...string) []record.Record {
	rs := recs(docs...)
	for i := range rs {
		rs[i].Key = []byte(key)
		rs[i].Value = []byte(docs[i]) // recs splits at '='
	}
	return rs
}

func TestGoAverage(t *testing.T) {
	ctx := context.Background()
	_, w := mustLoad(t, sharedRuntime(t), goConfig(t, averageDir, abi.OpAggregate))
	acc0, err := w.AggCreate(ctx)
	if err != nil || len(acc0) != 16 {
		t.Fatalf("AggCreate = %x, %v", acc0, err)
	}
	out := aggAdd(t, w,
		AggGroup{Acc: acc0, Records: jsonRecs("a", `{"n":1}`, `{"x":1}`, `{"n":2.5}`, `{"n":"2"}`, `{"n":`, `{"n":1e400}`)},
		AggGroup{Acc: acc0, Records: jsonRecs("b", `{"n":-4}`)},
		AggGroup{Acc: acc0},
	)
	var dead []string
	for _, d := range out.Dead {
		dead = append(dead, d.Reason)
		if d.Stage != "average" || string(d.Record.Key) != "a" {
			t.Errorf("dead letter %+v", d)
		}
	}
	wantDead := []string{
		"aggregate error: missing field n",
		"aggregate error: field n is not a number",
		"aggregate error: ",
		"aggregate error: field n is out of range",
	}
	if len(dead) != len(wantDead) {
		t.Fatalf("dead letters %q, want like %q", dead, wantDead)
	}
	for i := range dead {
		if !strings.HasPrefix(dead[i], wantDead[i]) {
			t.Errorf("dead letter %d: %q, want %q", i, dead[i], wantDead[i])
		}
	}
	if err := w.AggResult(ctx, out.Accs, nil, out); err != nil {
		t.Fatal(err)
	}
	want := `{"avg":1.75,"count":2} | {"avg":-4.0,"count":1} | {"avg":null,"count":0}`
	if got := describeValues(out.Values, false); got != want {
		t.Errorf("results %s\nwant    %s", got, want)
	}

	// Folding more records into a returned accumulator goes on from it, and
	// merging combines two groups.
	more := aggAdd(t, w, AggGroup{Acc: out.Accs[0], Records: jsonRecs("a", `{"n":0.5}`)})
	if err := w.AggMerge(ctx, []AggPair{{out.Accs[0], out.Accs[1]}, {out.Accs[2], out.Accs[2]}}, more); err != nil {
		t.Fatal(err)
	}
	if err := w.AggResult(ctx, [][]byte{more.Accs[0], more.Values[0].Value, more.Values[1].Value, []byte("bad")}, nil, more); err != nil {
		t.Fatal(err)
	}
	want = `{"avg":1.3333333333333333,"count":3} | {"avg":-0.16666666666666666,"count":3} | {"avg":null,"count":0} | ` +
		`err: aggregate error: bad accumulator: weir: accumulator of 3 bytes ends inside the 8-byte number at byte 0`
	if got := describeValues(more.Values[2:], false); got != want {
		t.Errorf("results %s\nwant    %s", got, want)
	}
	if s := w.Stats(); s.Traps != 0 || s.Errors != 4 {
		t.Errorf("stats = %+v", s)
	}
}

// customers are the customer-creation events of the Flink article the
// customers-per-country example follows.
var customers = []string{
	`{"id":1, "first":"Dursun", "last":"KOC", "country":"JP"}`,
	`{"id":2, "first":"Mustafa", "last":"KOC", "country":"GB"}`,
	`{"id":3, "first":"Yasemin", "last":"KOC", "country":"TR"}`,
	`{"id":4, "first":"Ihsan", "last":"KOC", "country":"TR"}`,
	`{"id":5, "first":"Neziha", "last":"KOC", "country":"TR"}`,
	`{"id":6, "first":"Elif Nisa", "last":"KOC", "country":"TR"}`,
	`{"id":7, "first":"Beyza", "last":"KOC", "country":"TR"}`,
	`{"id":8, "first":"Zeynep", "last":"KOC", "country":"TR"}`,
	`{"id":9, "first":"Murat", "last":"KOC", "country":"USA"}`,
	`{"id":10, "first":"Temur", "last":"KOC", "country":"USA"}`,
	`{"id":11, "first":"Hakan", "last":"KOC", "country":"JP"}`,
	`{"id":12, "first":"Cemil", "last":"KOC", "country":"GB"}`,
	`{"id":13, "first":"Turan", "last":"KOC", "country":"TR"}`,
	`{"id":14, "first":"Hamide", "last":"KOC", "country":"TR"}`,
	`{"id":15, "first":"Hayrettin", "last":"KOC", "country":"TR"}`,
	`{"id":16, "first":"Fuat", "last":"KOC", "country":"TR"}`,
	`{"id":17, "first":"Rasim", "last":"KOC", "country":"TR"}`,
	`{"id":18, "first":"Ali Ihsan", "last":"KOC", "country":"TR"}`,
	`{"id":19, "first":"Ali Osman", "last":"KOC", "country":"TR"}`,
	`{"id":20, "first":"Hamit", "last":"KOC", "country":"USA"}`,
}

// byCountry groups docs by their country, as the example's key_by does,
// in order of first appearance, each group starting from acc.
func byCountry(acc []byte, docs []string) []AggGroup {
	var groups []AggGroup
	index := map[string]int{}
	for _, d := range docs {
		_, c, _ := strings.Cut(d, `"country":"`)
		c, _, _ = strings.Cut(c, `"`)
		i, ok := index[c]
		if !ok {
			i = len(groups)
			index[c] = i
			groups = append(groups, AggGroup{Acc: acc})
		}
		groups[i].Records = append(groups[i].Records, jsonRecs(c, d)...)
	}
	return groups
}

func TestGoCustomersPerCountry(t *testing.T) {
	ctx := context.Background()
	_, w := mustLoad(t, sharedRuntime(t), goConfig(t, countryDir, abi.OpAggregate))
	acc0, err := w.AggCreate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := aggAdd(t, w, byCountry(acc0, customers)...)
	if len(out.Dead) != 0 {
		t.Fatalf("dead letters %+v", out.Dead)
	}
	if err := w.AggResult(ctx, out.Accs, nil, out); err != nil {
		t.Fatal(err)
	}
	want := `{"country":"JP","count":2} | {"country":"GB","count":2} | {"country":"TR","count":13} | {"country":"USA","count":3}`
	if got := describeValues(out.Values, false); got != want {
		t.Errorf("results %s\nwant    %s", got, want)
	}

	// The same events in two partial aggregates (two workers, or two
	// panes of a window), merged, give the same counts. A fresh
	// accumulator merged first takes the other's country.
	first := aggAdd(t, w, byCountry(acc0, customers[:10])...)
	second := aggAdd(t, w, byCountry(acc0, customers[10:])...)
	// Both halves see JP, GB, TR and USA in that order.
	pairs := []AggPair{{acc0, first.Accs[0]}}
	for i := range first.Accs {
		pairs = append(pairs, AggPair{first.Accs[i], second.Accs[i]})
	}
	merged := new(AggOutput)
	if err := w.AggMerge(ctx, pairs, merged); err != nil {
		t.Fatal(err)
	}
	accs := make([][]byte, len(merged.Values))
	for i, v := range merged.Values {
		if v.Err != "" {
			t.Fatalf("merge %d: %s", i, v.Err)
		}
		accs[i] = v.Value
	}
	if err := w.AggResult(ctx, accs, nil, merged); err != nil {
		t.Fatal(err)
	}
	want = `{"country":"JP","count":1} | ` + want
	if got := describeValues(merged.Values[len(accs):], false); got != want {
		t.Errorf("merged results %s\nwant           %s", got, want)
	}

	bad := aggAdd(t, w, AggGroup{Acc: acc0, Records: jsonRecs("?", `{"id":21}`, `{"country":7}`, `[]`)})
	var reasons []string
	for _, d := range bad.Dead {
		reasons = append(reasons, d.Reason)
	}
	sort.Strings(reasons)
	wantReasons := []string{
		"aggregate error: field country is not a string",
		"aggregate error: missing field country",
		"aggregate error: missing field country",
	}
	if !equal(reasons, wantReasons) {
		t.Errorf("dead letters %q, want %q", reasons, wantReasons)
	}
}

// TestGoNoAggregate loads a Go plugin that registers no aggregate as an
// aggregate operator: weir_agg_create panics, and Load reports it.
func TestGoNoAggregate(t *testing.T) {
	_, err := sharedRuntime(t).Load(context.Background(), goConfig(t, "plugins/identity", abi.OpAggregate))
	if !errors.Is(err, ErrInit) || !strings.Contains(err.Error(), "plugin has no aggregate handler") {
		t.Fatalf("err = %v, want ErrInit naming the missing handler", err)
	}
	t.Log(err)
}

// BenchmarkAggAddGo folds JSON records through the average plugin's
// weir_agg_add in groups of 64 records: one group per call, and 8 groups
// (512 records) per call.
func BenchmarkAggAddGo(b *testing.B) {
	ctx := context.Background()
	_, w := mustLoad(b, sharedRuntime(b), goConfig(b, averageDir, abi.OpAggregate))
	acc0, err := w.AggCreate(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("groups=%dx64", n), func(b *testing.B) {
			groups := benchGroups(n, 64, func(i int) []byte {
				return fmt.Appendf(nil, `{"id": "%d", "kind": "temp", "n": %.2f, "timestamp": %d}`, 100+i%50, 20+float64(i%5)*0.25, 1722960137000+int64(i))
			})
			for i := range groups {
				groups[i].Acc = acc0
			}
			benchAggAdd(b, w, groups)
		})
	}
}

// BenchmarkAggCountryGo is BenchmarkAggAddGo for the customers-per-country
// count plugin: 4 country groups of 64 customers per call.
func BenchmarkAggCountryGo(b *testing.B) {
	ctx := context.Background()
	_, w := mustLoad(b, sharedRuntime(b), goConfig(b, countryDir, abi.OpAggregate))
	acc0, err := w.AggCreate(ctx)
	if err != nil {
		b.Fatal(err)
	}
	countries := []string{"TR", "JP", "GB", "USA"}
	groups := benchGroups(len(countries), 64, func(i int) []byte {
		return fmt.Appendf(nil, `{"id":%d, "first":"Name", "last":"KOC", "country":"%s"}`, i, countries[i/64])
	})
	for i := range groups {
		groups[i].Acc = acc0
	}
	benchAggAdd(b, w, groups)
}
