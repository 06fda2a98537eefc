package rollingcardsums_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// TestRollingTiesAcrossBatches runs the example's rolling sums on 2,000
// generated payments of 40 cards whose times repeat across cards, in time
// order, at engine batch sizes 1, 7, 64 and 512: with the watermark at the
// highest time seen (Flink's WATERMARK FOR ts AS ts), a payment whose time
// another card's payment in an earlier batch had is not late, so every
// payment must come out once, none dead-lettered, each with the
// brute-force sums over its card's payments in [ts - range, ts]. (Ties
// within one card across batches are late, as in Flink; the window
// package's property test covers them, batch by batch.)
func TestRollingTiesAcrossBatches(t *testing.T) {
	ps := tiedPayments(2000, 40)
	var in strings.Builder
	for _, p := range ps {
		b, _ := json.Marshal(p)
		in.Write(append(b, '\n'))
	}
	pipeline, err := os.ReadFile("pipeline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, batch := range []int{1, 7, 64, 512} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			dir := t.TempDir()
			yaml := strings.Replace(string(pipeline), "sources:", fmt.Sprintf("engine: {batch_size: %d}\nsources:", batch), 1)
			write(t, filepath.Join(dir, "pipeline.yaml"), yaml)
			write(t, filepath.Join(dir, "payments.jsonl"), in.String())
			res := weirtest.Run(t, dir, "", "run", "pipeline.yaml")
			if res.Code != 0 || !strings.Contains(res.Stderr, "dead_letters=0") {
				t.Fatalf("exit %d, or records were dead-lettered:\n%s", res.Code, res.Stderr)
			}
			checkSums(t, ps, strings.Split(strings.TrimSpace(res.Stdout), "\n"))
		})
	}
}

// tiedPayments makes n payments of cards cards, in time order, at times
// drawn from few enough minutes that most share their time with other
// cards' payments; a card has at most one payment a minute.
func tiedPayments(n, cards int) []payment {
	rng := rand.New(rand.NewPCG(2, 3))
	taken := map[[2]int64]bool{}
	var ps []payment
	for len(ps) < n {
		p := payment{Card: rng.Int64N(int64(cards)), Amount: float64(rng.IntN(1000)), TS: rng.Int64N(int64(n)/8) * 60_000}
		if taken[[2]int64{p.Card, p.TS}] {
			continue
		}
		taken[[2]int64{p.Card, p.TS}] = true
		p.Seq = int64(len(ps) + 1)
		ps = append(ps, p)
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].TS < ps[j].TS })
	return ps
}

// checkSums checks that lines hold each payment once, with its sums.
func checkSums(t *testing.T, ps []payment, lines []string) {
	t.Helper()
	if len(lines) != len(ps) {
		t.Fatalf("%d rows, want %d", len(lines), len(ps))
	}
	bySeq := map[int64]payment{}
	for _, p := range ps {
		bySeq[p.Seq] = p
	}
	for _, line := range lines {
		var row map[string]float64
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		p, ok := bySeq[int64(row["seq"])]
		if !ok {
			t.Fatalf("row %q: unknown or repeated seq", line)
		}
		delete(bySeq, p.Seq)
		for name, r := range windows {
			var want float64
			for _, q := range ps {
				if q.Card == p.Card && q.TS >= p.TS-r && q.TS <= p.TS {
					want += q.Amount
				}
			}
			if got := row["sum_"+name]; got != want {
				t.Errorf("seq %d (card %d, ts %d): sum_%s = %v, want %v", p.Seq, p.Card, p.TS, name, got, want)
			}
		}
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
