package unbidauctions_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// event is the part of a Nexmark auction or bid the reference reads, and
// the line it came from.
type event struct {
	Type     string `json:"type"`
	DateTime int64  `json:"dateTime"`
	ID       int64  `json:"id"`      // an auction's
	Auction  int64  `json:"auction"` // a bid's
	line     string
}

// TestUnbidAuctions runs events.yaml for the stream, then each pipeline
// through the weir binary at parallelism 1 and 2, and requires exactly the
// auctions a brute-force search of the stream finds no bid for, each once
// and as generated, with bids null: within 2 s of its opening (the
// interval join, also read from two Kafka topics of one consumer group
// with checkpoints), and in its 2 s tumbling window (the window join).
func TestUnbidAuctions(t *testing.T) {
	res := weirtest.Run(t, ".", "", "run", "events.yaml")
	if res.Code != 0 {
		t.Fatalf("weir run events.yaml: exit %d\n%s", res.Code, res.Stderr)
	}
	var auctions, bids []event
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		var e event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		e.line = line
		switch e.Type {
		case "auction":
			auctions = append(auctions, e)
		case "bid":
			bids = append(bids, e)
		default:
			t.Fatalf("an event of type %q", e.Type)
		}
	}
	if len(auctions) != 1200 || len(bids) != 18400 {
		t.Fatalf("%d auctions and %d bids, want 1200 and 18400", len(auctions), len(bids))
	}
	const span = 2000 // ms: the interval's upper bound, and the window's size
	interval := func(a, b event) bool { return b.DateTime >= a.DateTime && b.DateTime <= a.DateTime+span }
	for _, tt := range []struct {
		file  string
		match func(a, b event) bool
		args  []string // weir run's, before the file
	}{
		{"pipeline.yaml", interval, nil},
		{"window.yaml", func(a, b event) bool { return a.DateTime/span == b.DateTime/span }, nil},
		// The same events through two Kafka topics, both read in one
		// consumer group with checkpoints.
		{"kafka.yaml", interval, []string{"--sequential", "auctions-to-kafka.yaml", "bids-to-kafka.yaml"}},
	} {
		// The reference: every auction no bid on it matches, by brute force.
		var want []string
		for _, a := range auctions {
			if !slices.ContainsFunc(bids, func(b event) bool { return b.Auction == a.ID && tt.match(a, b) }) {
				want = append(want, a.line)
			}
		}
		slices.Sort(want)
		if len(want) < 100 || len(want) > len(auctions)*3/4 {
			t.Fatalf("%s: %d of %d auctions have no bid: a weak test", tt.file, len(want), len(auctions))
		}
		for _, par := range []string{"1", "2"} {
			t.Run(tt.file+" parallelism "+par, func(t *testing.T) {
				t.Setenv("WEIR_ENGINE_PARALLELISM", par)
				t.Setenv("WEIR_STATE_DIR", t.TempDir())
				res := weirtest.Run(t, ".", "", append(append([]string{"run"}, tt.args...), tt.file)...)
				if res.Code != 0 {
					t.Fatalf("weir run %s: exit %d\n%s", tt.file, res.Code, res.Stderr)
				}
				if !strings.Contains(res.Stderr, "dead_letters=0") {
					t.Errorf("records were rejected:\n%s", res.Stderr)
				}
				var got []string
				for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
					var row struct{ Auctions, Bids json.RawMessage }
					if err := json.Unmarshal([]byte(line), &row); err != nil {
						t.Fatalf("%q: %v", line, err)
					}
					if string(row.Bids) != "null" {
						t.Fatalf("a row with bids: %s", line)
					}
					var compact bytes.Buffer
					if err := json.Compact(&compact, row.Auctions); err != nil {
						t.Fatal(err)
					}
					got = append(got, compact.String())
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("%d auctions without a bid, want %d", len(got), len(want))
					for i := 0; i < len(got) && i < len(want); i++ {
						if got[i] != want[i] {
							t.Errorf("first difference:\n got %.200s\nwant %.200s", got[i], want[i])
							break
						}
					}
				}
			})
		}
	}
}
