package rollingcardsums_test

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

type payment struct {
	Card   int64   `json:"card"`
	Amount float64 `json:"amount"`
	Seq    int64   `json:"seq"`
	TS     int64   `json:"ts"`
}

// windows are the pipeline's ranges in milliseconds, by name.
var windows = map[string]int64{"10m": 10 * 60_000, "1h": 60 * 60_000, "1d": 24 * 60 * 60_000, "7d": 7 * 24 * 60 * 60_000}

func payments(t *testing.T) []payment {
	t.Helper()
	f, err := os.Open("payments.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []payment
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var p payment
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	if len(out) != 20 {
		t.Fatalf("%d payments, want 20", len(out))
	}
	return out
}

// TestRollingSums runs pipeline.yaml and checks each of the 20 output rows
// against a brute-force sum over the card's payments in [ts - range, ts].
func TestRollingSums(t *testing.T) {
	ps := payments(t)
	res := weirtest.Run(t, ".", "", "run", "pipeline.yaml")
	if res.Code != 0 {
		t.Fatalf("exit %d\n%s", res.Code, res.Stderr)
	}
	if !strings.Contains(res.Stderr, "dead_letters=0") {
		t.Errorf("records were rejected:\n%s", res.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(lines) != len(ps) {
		t.Fatalf("%d output rows, want %d:\n%s", len(lines), len(ps), res.Stdout)
	}
	seen := map[int64]bool{}
	lastTS := map[float64]float64{}
	for _, line := range lines {
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		seq := int64(row["seq"].(float64))
		if seen[seq] || seq < 1 || seq > 20 {
			t.Fatalf("row %q: seq repeated or unknown", line)
		}
		seen[seq] = true
		p := ps[seq-1]
		card, ts := row["card"].(float64), row["ts"].(float64)
		if card != float64(p.Card) || row["amount"].(float64) != p.Amount || ts != float64(p.TS) {
			t.Errorf("row %q does not carry payment %+v", line, p)
		}
		if ts < lastTS[card] {
			t.Errorf("card %v: row %q out of event-time order", card, line)
		}
		lastTS[card] = ts
		// The input fields come first, in input order.
		if !strings.HasPrefix(line, `{"card":`) || strings.Index(line, `"sum_10m"`) > strings.Index(line, `"sum_1h"`) ||
			strings.Index(line, `"sum_1d"`) > strings.Index(line, `"sum_7d"`) {
			t.Errorf("field order: %s", line)
		}
		for name, r := range windows {
			var want float64
			for _, q := range ps {
				if q.Card == p.Card && q.TS >= p.TS-r && q.TS <= p.TS {
					want += q.Amount
				}
			}
			got, ok := row["sum_"+name].(float64)
			if !ok || math.Abs(got-want) > 1e-9 {
				t.Errorf("seq %d: sum_%s = %v, want %v", seq, name, row["sum_"+name], want)
			}
		}
	}
}
