package nexmark_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/examples/nexmark/reference"
)

// The tests run each query on the first 20,000 events (18,400 bids) at 500
// events per second of event time: 40 s, several windows of each kind.
const (
	count = "20000"
	rate  = "500"
)

// run runs `weir run file` with the source's count and rate set through
// the environment, and returns its standard output's lines.
func run(t *testing.T, file, source string) []string {
	t.Helper()
	prefix := "WEIR_SOURCES_" + strings.ToUpper(source) + "_"
	t.Setenv(prefix+"COUNT", count)
	t.Setenv(prefix+"FIRST_EVENT_RATE", rate)
	res := weirtest.Run(t, ".", "", "run", file)
	if res.Code != 0 {
		t.Fatalf("weir run %s: exit %d\n%s", file, res.Code, res.Stderr)
	}
	if !strings.Contains(res.Stderr, "dead_letters=0") {
		t.Errorf("%s: records were rejected:\n%s", file, tail(res.Stderr))
	}
	out := strings.TrimSuffix(res.Stdout, "\n")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

// events runs events.yaml, the whole event stream, and returns its lines.
func events(t *testing.T) string {
	t.Helper()
	lines := run(t, "events.yaml", "events")
	if len(lines) != 20000 {
		t.Fatalf("events.yaml wrote %d events, want 20000", len(lines))
	}
	return strings.Join(lines, "\n")
}

// bids returns the bids among the events.
func bids(t *testing.T, events string) []reference.Bid {
	t.Helper()
	b, err := reference.ReadBids(strings.NewReader(events))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 18400 {
		t.Fatalf("%d bids among 20000 events, want 18400 (46 in 50)", len(b))
	}
	return b
}

func decode(t *testing.T, line string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(line), v); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestQueries runs every query through the weir binary and checks its
// output against the brute-force reference over the same bids.
func TestQueries(t *testing.T) {
	stream := events(t)
	all := bids(t, stream)

	t.Run("q0", func(t *testing.T) {
		if got, want := run(t, "q0.yaml", "bids"), reference.Q0(all); !slices.Equal(got, want) {
			t.Errorf("q0: %d lines, want the %d bids unchanged", len(got), len(want))
		}
	})

	var q1 []string
	for _, file := range []string{"q1.yaml", "q1-c.yaml"} {
		t.Run(file, func(t *testing.T) {
			if file == "q1-c.yaml" {
				weirtest.NeedToolchain(t, "c")
			}
			got := run(t, file, "bids")
			if q1 == nil {
				q1 = got
			} else if !slices.Equal(got, q1) {
				t.Fatalf("%s's output differs from q1.yaml's (the same map in Go)", file)
			}
			checkQ1(t, all, got)
		})
	}

	t.Run("q2", func(t *testing.T) {
		got, want := run(t, "q2.yaml", "bids"), reference.Q2(all)
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("q2: %d bids, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
		}
	})

	ps, as, err := reference.ReadPeopleAndAuctions(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	for _, par := range []string{"1", "2"} {
		t.Run("q3 parallelism "+par, func(t *testing.T) {
			var got []reference.Q3Row
			for _, line := range runJoin(t, "q3.yaml", par) {
				var r reference.Q3Row
				decode(t, line, &r)
				got = append(got, r)
			}
			slices.SortFunc(got, func(x, y reference.Q3Row) int { return cmp.Compare(x.ID, y.ID) })
			checkRows(t, "q3", got, reference.Q3(ps, as))
		})
		t.Run("q8 parallelism "+par, func(t *testing.T) {
			var got []reference.Q8Row
			for _, line := range runJoin(t, "q8.yaml", par) {
				var r struct {
					ID    string `json:"id"`
					Start int64  `json:"window_start"`
					Name  string `json:"name"`
				}
				decode(t, line, &r)
				got = append(got, reference.Q8Row{ID: atoi(t, r.ID), Name: r.Name, Start: r.Start})
			}
			slices.SortFunc(got, func(x, y reference.Q8Row) int { return cmp.Compare(x.ID, y.ID) })
			checkRows(t, "q8", got, reference.Q8(ps, as, 10_000))
		})
	}

	for _, par := range []string{"1", "2"} {
		t.Run("q5 parallelism "+par, func(t *testing.T) { t.Setenv("WEIR_ENGINE_PARALLELISM", par); checkQ5(t, all) })
	}

	t.Run("q7", func(t *testing.T) {
		type bid struct {
			Auction, Bidder, Price, DateTime int64
			Extra                            string
		}
		type row struct {
			Start int64 `json:"window_start"`
			End   int64 `json:"window_end"`
			Price int64 `json:"price"`
			Bids  []bid `json:"bids"`
		}
		var got, want []row
		for _, line := range run(t, "q7.yaml", "bids") {
			var r row
			decode(t, line, &r)
			got = append(got, r)
		}
		for _, r := range reference.Q7(all, 10000) {
			w := row{Start: r.Start, End: r.End, Price: r.Price}
			for _, b := range r.Bids {
				w.Bids = append(w.Bids, bid{b.Auction, b.Bidder, b.Price, b.DateTime, b.Extra})
			}
			want = append(want, w)
		}
		if len(want) < 4 || !reflect.DeepEqual(got, want) {
			t.Errorf("q7:\n got %+v\nwant %+v", got, want)
		}
	})

	t.Run("q11", func(t *testing.T) {
		var got []reference.Session
		for _, line := range run(t, "q11.yaml", "bids") {
			var r struct {
				Bidder string `json:"bidder"`
				Start  int64  `json:"window_start"`
				End    int64  `json:"window_end"`
				Count  int64  `json:"bid_count"`
			}
			decode(t, line, &r)
			got = append(got, reference.Session{Bidder: atoi(t, r.Bidder), Start: r.Start, End: r.End, Count: r.Count})
		}
		reference.SortSessions(got)
		want := reference.Q11(all, 10000)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("q11: %d sessions, want %d\n got %v\nwant %v", len(got), len(want), got, want)
		}
	})

	t.Run("q12", func(t *testing.T) {
		got := map[int64]int64{}
		for _, line := range run(t, "q12.yaml", "bids") {
			var r struct {
				Bidder string `json:"bidder"`
				Start  int64  `json:"window_start"`
				End    int64  `json:"window_end"`
				Count  int64  `json:"bid_count"`
			}
			decode(t, line, &r)
			if r.End-r.Start != 10000 || r.Start%10000 != 0 {
				t.Fatalf("q12: window [%d, %d) is not a 10 s tumbling window", r.Start, r.End)
			}
			got[atoi(t, r.Bidder)] += r.Count
		}
		// Processing-time windows depend on when the run happens; their
		// totals per bidder do not.
		if want := reference.Q12Totals(all); !reflect.DeepEqual(got, want) {
			t.Errorf("q12: bids per bidder differ: %s", diff(got, want))
		}
	})
}

func diff(got, want map[int64]int64) string {
	var b strings.Builder
	for k, v := range want {
		if got[k] != v {
			fmt.Fprintf(&b, "bidder %d: %d, want %d; ", k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			fmt.Fprintf(&b, "bidder %d: %d, want none; ", k, v)
		}
	}
	return b.String()
}

// checkQ5 runs q5 and compares its rows, in window order, with the
// reference.
func checkQ5(t *testing.T, all []reference.Bid) {
	t.Helper()
	var got []reference.Q5Row
	for _, line := range run(t, "q5.yaml", "bids") {
		var r struct {
			Start    int64 `json:"window_start"`
			End      int64 `json:"window_end"`
			Num      int64 `json:"num"`
			Auctions []struct {
				Auction string `json:"auction"`
			} `json:"auctions"`
		}
		decode(t, line, &r)
		row := reference.Q5Row{Start: r.Start, End: r.End, Num: r.Num}
		for _, a := range r.Auctions {
			row.Auctions = append(row.Auctions, atoi(t, a.Auction))
		}
		slices.Sort(row.Auctions)
		got = append(got, row)
	}
	slices.SortFunc(got, func(a, b reference.Q5Row) int { return cmp.Compare(a.Start, b.Start) })
	want := reference.Q5(all, 10000, 2000)
	if len(want) < 20 || !reflect.DeepEqual(got, want) {
		t.Errorf("q5:\n got %v\nwant %v", got, want)
	}
}

// checkQ1 checks q1's output against the reference: each bid, its price in
// euros.
func checkQ1(t *testing.T, all []reference.Bid, got []string) {
	t.Helper()
	if len(got) != len(all) {
		t.Fatalf("q1: %d lines, want %d", len(got), len(all))
	}
	for i, line := range got {
		var r struct {
			reference.Bid
			Price float64 `json:"price"`
		}
		decode(t, line, &r)
		b := all[i]
		want := reference.Q1Price(b)
		if r.Price != want {
			t.Fatalf("q1 line %d: price %v, want %v × 0.908 = %v", i, r.Price, b.Price, want)
		}
		r.Bid.Price, r.Bid.Line = b.Price, b.Line
		if r.Bid != b {
			t.Fatalf("q1 line %d: %s\nother fields differ from %s", i, line, b.Line)
		}
	}
}

// TestBench runs `weir bench` on a few thousand events: a row per query
// and path, the join queries in process only.
func TestBench(t *testing.T) {
	res := weirtest.Run(t, "../..", "", "bench", "--events", "4000", "--queries", "q0,q3,q8")
	if res.Code != 0 {
		t.Fatalf("weir bench: exit %d\n%s", res.Code, tail(res.Stderr))
	}
	for _, want := range []string{"| q0 | in-process | 3680 |", "| q0 | kfake | 3680 |", "| q3 | in-process | 320 |",
		"| q3 | kfake | — (joins", "| q8 | in-process | 320 |"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("no row %q in\n%s", want, res.Stdout)
		}
	}
}

// runJoin runs a join query of the persons and auctions sources with
// parallelism par, and returns its output lines.
func runJoin(t *testing.T, file, par string) []string {
	t.Helper()
	t.Setenv("WEIR_ENGINE_PARALLELISM", par)
	t.Setenv("WEIR_SOURCES_PERSONS_COUNT", count)
	t.Setenv("WEIR_SOURCES_PERSONS_FIRST_EVENT_RATE", rate)
	return run(t, file, "auctions")
}

// checkRows requires got to equal want, which must not be tiny.
func checkRows[R comparable](t *testing.T, query string, got, want []R) {
	t.Helper()
	if len(want) < 20 || !slices.Equal(got, want) {
		t.Errorf("%s: %d rows, want %d\ngot  %v\nwant %v", query, len(got), len(want), got, want)
	}
	t.Logf("%s: %d rows", query, len(got))
}

// TestBadBids runs the plugins of q1, q2, q5 and q7, which declare the
// fields they read (the typed convention, ABI.md §14), on records from
// standard input whose fields are missing or of the wrong type: the host
// dead-letters those, with its reason, before the plugin sees them, and
// the others come out as the queries write them.
func TestBadBids(t *testing.T) {
	plugin := func(name string) string {
		abs, err := filepath.Abs(filepath.Join("plugins", name))
		if err != nil {
			t.Fatal(err)
		}
		return strconv.Quote(abs)
	}
	// A dead letter is "<input line>: <reason's end>": the host's reason
	// ends with the field's, after the operator's prefix.
	tests := []struct {
		name     string
		operator string // the operator's YAML
		in, out  []string
		dead     []string
	}{{
		name:     "q1 currency",
		operator: "{name: to-euros, type: map, plugin: " + plugin("currency") + "}",
		in: []string{
			`{"auction":1000,"bidder":1001,"price":32530001,"channel":"Google"}`,
			`{"auction":1}`,
			`{ "price" : 100 , "x" : [1] }`,
			`{"auction":2,"price":"12"}`,
			`{"price":null}`,
			`{"price":true}`,
			`{"price":1e400}`,
			`[100]`,
			`{"price":1e3,"price":7}`,
		},
		out: []string{
			`{"auction":1000,"bidder":1001,"price":29537240.908,"channel":"Google"}`,
			`{ "price" : 90.8 , "x" : [1] }`,
			`{"price":1e3,"price":6.356}`,
		},
		dead: []string{
			`2: field "price": missing`,
			`4: field "price": want float, found string`,
			`5: field "price": null`,
			`6: field "price": want float, found bool`,
			`7: field "price": want float, found number 1e400 (outside float64)`,
			`8: field "price": missing`,
		},
	}, {
		name:     "q2 auction-filter",
		operator: "{name: some-auctions, type: filter, plugin: " + plugin("auction-filter") + ", config: {modulus: 123}}",
		in: []string{
			`{"auction":246,"price":1}`,
			`{"auction":247}`,
			`{"auction":2.46e2}`,
			`{"auction":"246"}`,
			`{"auction":1.5}`,
			`{"bidder":246}`,
			`{"auction":null}`,
			`{"auction":-123}`,
		},
		out: []string{`{"auction":246,"price":1}`, `{"auction":2.46e2}`, `{"auction":-123}`},
		dead: []string{
			`4: field "auction": want int, found string`,
			`5: field "auction": want int, found number 1.5 (not an integer)`,
			`6: field "auction": missing`,
			`7: field "auction": null`,
		},
	}, {
		name: "q7 maxby",
		operator: "{name: highest-bid, type: window, kind: tumbling, size: 10s, plugin: " + plugin("maxby") +
			", config: {by: price, keep: [auction, bidder, price, dateTime, extra], rows: bids, window: true}}",
		in: []string{
			`{"auction":1,"bidder":5,"price":100,"dateTime":1000,"extra":"a"}`,
			`{"auction":2,"bidder":6,"price":300,"dateTime":2000}`,
			`{"auction":3,"bidder":7,"price":300,"dateTime":3000,"extra":null}`,
			`{"auction":4,"bidder":8,"price":"400","dateTime":4000}`,
			`{"auction":5,"bidder":9,"dateTime":5000}`,
			`{"auction":6,"bidder":9,"price":400.5,"dateTime":6000}`,
			`{"auction":7,"price":7,"dateTime":12000,"extra":{"x":[1, 2]}}`,
		},
		out: []string{
			`{"window_start":0,"window_end":10000,"price":300,"bids":[` +
				`{"auction":2,"bidder":6,"price":300,"dateTime":2000,"extra":null},` +
				`{"auction":3,"bidder":7,"price":300,"dateTime":3000,"extra":null}]}`,
			`{"window_start":10000,"window_end":20000,"price":7,"bids":[{"auction":7,"bidder":null,"price":7,"dateTime":12000,"extra":{"x":[1, 2]}}]}`,
		},
		dead: []string{
			`4: field "price": want int, found string`,
			`5: field "price": missing`,
			`6: field "price": want int, found number 400.5 (not an integer)`,
		},
	}, {
		name: "q5 maxby",
		operator: "{name: hottest, type: window, kind: tumbling, size: 2s, plugin: " + plugin("maxby") +
			", config: {by: num, keep: [auction], rows: auctions, copy: [window_start, window_end]}}",
		in: []string{
			`{"window_start":0,"window_end":10000,"auction":"1","num":3,"dateTime":9999}`,
			`{"window_start":0,"window_end":10000,"auction":"2","num":5,"dateTime":9999}`,
			`{"window_start":0,"window_end":10000,"auction":"3","num":"9","dateTime":9999}`,
			`{"window_start":0,"window_end":10000,"auction":"4","num":5,"dateTime":9999}`,
			`{"window_start":0,"window_end":10000,"auction":"5","dateTime":9999}`,
		},
		out: []string{`{"window_start":0,"window_end":10000,"num":5,"auctions":[{"auction":"2"},{"auction":"4"}]}`},
		dead: []string{
			`3: field "num": want int, found string`,
			`5: field "num": missing`,
		},
	}, {
		name: "maxby names members, dots and all",
		operator: "{name: m, type: window, kind: tumbling, size: 10s, plugin: " + plugin("maxby") +
			`, config: {by: "p.x", keep: ["a.b", "p.x"], copy: ["a\\"]}}`,
		in: []string{
			`{"a.b":1,"a":{"b":2},"p.x":5,"p":{"x":9},"a\\":true,"dateTime":1000}`,
			`{"a.b":3,"p":{"x":9},"dateTime":2000}`,
		},
		out:  []string{`{"a\\":true,"p.x":5,"rows":[{"a.b":1,"p.x":5}]}`},
		dead: []string{`2: field "p\\.x": missing`},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pipeline := "name: bad-bids\n" +
				"sources: [{name: in, type: stdin, event_time: {field: dateTime}}]\n" +
				"operators: [" + tc.operator + "]\n" +
				"sinks: [{name: out, type: stdout, format: raw}]\n"
			if !strings.Contains(tc.operator, "window") {
				pipeline = strings.Replace(pipeline, ", event_time: {field: dateTime}", "", 1)
			}
			if err := os.WriteFile(filepath.Join(dir, "pipeline.yaml"), []byte(pipeline), 0o644); err != nil {
				t.Fatal(err)
			}
			res := weirtest.Run(t, dir, strings.Join(tc.in, "\n")+"\n", "run", "pipeline.yaml")
			if res.Code != 0 {
				t.Fatalf("weir run: exit %d\n%s", res.Code, res.Stderr)
			}
			if got := strings.Split(strings.TrimSuffix(res.Stdout, "\n"), "\n"); !slices.Equal(got, tc.out) {
				t.Errorf("output:\n got %q\nwant %q", got, tc.out)
			}
			var dead []string
			for _, line := range strings.Split(res.Stderr, "\n") {
				if !strings.HasPrefix(line, "{") {
					continue
				}
				var d struct {
					Reason string `json:"reason"`
					Line   int    `json:"line"`
				}
				decode(t, line, &d)
				for _, w := range tc.dead {
					if n, reason, _ := strings.Cut(w, ": "); n == strconv.Itoa(d.Line) && strings.HasSuffix(d.Reason, ": "+reason) {
						d.Reason = reason
					}
				}
				dead = append(dead, fmt.Sprintf("%d: %s", d.Line, d.Reason))
			}
			slices.Sort(dead)
			if !slices.Equal(dead, tc.dead) {
				t.Errorf("dead letters:\n got %q\nwant %q", dead, tc.dead)
			}
			if want := fmt.Sprintf("dead_letters=%d", len(tc.dead)); !strings.Contains(res.Stderr, want) {
				t.Errorf("no %s in\n%s", want, tail(res.Stderr))
			}
		})
	}
}
