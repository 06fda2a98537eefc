package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weir-stream/weir/host"
)

// TestJoin joins auctions (left) with persons (right) on the auction's
// seller and the person's id, from two files with event time, and checks
// the pairs against a brute-force join of the inputs: an interval join
// (a person within 10 s before to 5 s after the auction), a regular join,
// the interval join on two workers, and a 10 s tumbling window join. Records of a third source reach
// the join too and become dead letters.
func TestJoin(t *testing.T) {
	const t0 = int64(1_700_000_000_000)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(7, 8))
	type event struct {
		ID     string `json:"id"`
		Seller string `json:"seller,omitempty"`
		TS     int64  `json:"ts"`
	}
	var persons, auctions []event
	for i := range 30 {
		persons = append(persons, event{ID: fmt.Sprintf("p%d", i), TS: t0 + int64(i)*2000})
	}
	for j := range 300 {
		auctions = append(auctions, event{ID: fmt.Sprintf("a%d", j), Seller: fmt.Sprintf("p%d", r.IntN(35)), TS: t0 + r.Int64N(70_000)})
	}
	write := func(name string, evs []event) string {
		var b strings.Builder
		for _, e := range evs {
			line, _ := json.Marshal(e)
			b.Write(line)
			b.WriteByte('\n')
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	aPath, pPath := write("auctions.jsonl", auctions), write("persons.jsonl", persons)
	nPath := write("noise.jsonl", []event{{ID: "n1", Seller: "p1", TS: t0}, {ID: "n2", Seller: "p2", TS: t0}})

	want := func(lower, upper int64, bounded bool) []string {
		var out []string
		for _, a := range auctions {
			for _, p := range persons {
				if a.Seller == p.ID && (!bounded || (p.TS >= a.TS+lower && p.TS <= a.TS+upper)) {
					out = append(out, a.ID+"-"+p.ID)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	wantWindow := func(size int64) []string {
		var out []string
		for _, a := range auctions {
			for _, p := range persons {
				if a.Seller == p.ID && a.TS/size == p.TS/size {
					out = append(out, a.ID+"-"+p.ID)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	for _, tt := range []struct {
		name        string
		parallelism int
		between     string
		want        []string
	}{
		{"interval", 1, "between: {lower: -10s, upper: 5s}", want(-10_000, 5_000, true)},
		{"regular", 1, "", want(0, 0, false)},
		{"interval on two workers", 2, "between: {lower: -10s, upper: 5s}", want(-10_000, 5_000, true)},
		{"tumbling window", 2, "window: 10s", wantWindow(10_000)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.want) < 20 {
				t.Fatalf("only %d pairs: a weak test", len(tt.want))
			}
			et := "event_time: {field: ts, max_out_of_orderness: 1h}"
			between := ""
			if tt.between != "" {
				between = ", " + tt.between
			}
			dlq := filepath.Join(t.TempDir(), "dead.jsonl")
			path := writePipeline(t, fmt.Sprintf(`name: sellers
engine: {parallelism: %d}
sources:
  - {name: auctions, type: file, path: %s, %s}
  - {name: persons, type: file, path: %s, %s}
  - {name: noise, type: file, path: %s, %s}
operators:
  - {name: by-person, type: key_by, field: seller, fields: {persons: id}}
  - {name: sellers, type: join, left: auctions, right: persons%s}
sinks: [{name: out, type: stdout}]
dead_letter: {type: file, path: %s}
`, tt.parallelism, aPath, et, pPath, et, nPath, et, between, dlq))
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(runOutput(t, path)), "\n") {
				var pair struct{ Auctions, Persons event }
				if err := json.Unmarshal([]byte(line), &pair); err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				if pair.Auctions.Seller != pair.Persons.ID {
					t.Fatalf("pair of different keys: %s", line)
				}
				got = append(got, pair.Auctions.ID+"-"+pair.Persons.ID)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("%d pairs, want %d\ngot  %v\nwant %v", len(got), len(tt.want), got, tt.want)
			}
			dead := deadLetters(t, dlq)
			if len(dead) != 2 || !strings.Contains(dead[0]["reason"].(string), `comes from source "noise", neither side of the join`) {
				t.Errorf("dead letters %v, want the noise source's 2", dead)
			}
		})
	}
}

// TestJoinConfigErrors: a join's sides must be two sources of the
// pipeline, after a key_by; a key_by's fields must name sources.
func TestJoinConfigErrors(t *testing.T) {
	for _, tt := range []struct{ name, ops, want string }{
		{"no key_by", `[{name: j, type: join, left: a, right: b}]`, "put a key_by before it"},
		{"unknown source", `[{name: k, type: key_by, field: x}, {name: j, type: join, left: a, right: c}]`, `no source is named "c" (the sources are a, b)`},
		{"same source twice", `[{name: k, type: key_by, field: x}, {name: j, type: join, left: a, right: a}]`, "a join needs two sources"},
		{"bounds reversed", `[{name: k, type: key_by, field: x}, {name: j, type: join, left: a, right: b, between: {lower: 5s, upper: -5s}}]`, "upper bound -5s is below the lower bound 5s"},
		{"one bound", `[{name: k, type: key_by, field: x}, {name: j, type: join, left: a, right: b, between: {lower: 5s}}]`, `missing required field "upper"`},
		{"ttl on an interval join", `[{name: k, type: key_by, field: x}, {name: j, type: join, left: a, right: b, ttl: 1h, between: {lower: 0s, upper: 1s}}]`, "bounds a regular join"},
		{"window and between", `[{name: k, type: key_by, field: x}, {name: j, type: join, left: a, right: b, window: 10s, between: {lower: 0s, upper: 1s}}]`, "not both"},
		{"key_by fields of no source", `[{name: k, type: key_by, field: x, fields: {z: y}}, {name: j, type: join, left: a, right: b}]`, `no source is named "z"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range []string{"a.jsonl", "b.jsonl"} {
				os.WriteFile(filepath.Join(dir, f), nil, 0o644)
			}
			path := writePipeline(t, fmt.Sprintf(`name: j
sources: [{name: a, type: file, path: %s/a.jsonl}, {name: b, type: file, path: %s/b.jsonl}]
operators: %s
sinks: [{name: out, type: stdout}]
`, dir, dir, tt.ops))
			_, err := host.Load(context.Background(), path, host.Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "pipeline.yaml:") {
				t.Fatalf("err = %v\nwant %q with file:line", err, tt.want)
			}
		})
	}
}

// TestJoinStateQuery reads a running join's stored records for one key
// through QueryState, decoded by side and event time.
func TestJoinStateQuery(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.jsonl"), []byte(`{"k":"x","ts":1000}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.jsonl"), []byte(`{"k":"x","ts":2000}`+"\n"+`{"k":"y","ts":3000}`+"\n"), 0o644)
	et := "event_time: {field: ts}"
	path := writePipeline(t, fmt.Sprintf(`name: q
sources: [{name: a, type: file, path: %s/a.jsonl, %s}, {name: b, type: file, path: %s/b.jsonl, %s}]
operators: [{name: k, type: key_by, field: k}, {name: j, type: join, left: a, right: b}]
sinks: [{name: out, type: discard}]
`, dir, et, dir, et))
	ctx := context.Background()
	p, err := host.Load(ctx, path, host.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	es, err := p.QueryState("j", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, fmt.Sprintf("%s@%d", e.Kind, e.Attrs["event_time"]))
	}
	if strings.Join(got, " ") != "join_left@1000 join_right@2000" {
		t.Errorf("join state of x: %v", got)
	}
	if _, err := p.QueryState("nope", []byte("x")); !errors.Is(err, host.ErrNoSuchOperator) {
		t.Errorf("an unknown operator: %v", err)
	}
}
