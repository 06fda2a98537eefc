package activebidders_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

const within = 10_000 // ms, the pipeline's within

// bid is the part of a Nexmark bid the checks read, and its line.
type bid struct {
	Bidder   int64 `json:"bidder"`
	DateTime int64 `json:"dateTime"`
	line     string
}

func parse(t *testing.T, out string) []bid {
	t.Helper()
	var bids []bid
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var b bid
		if err := json.Unmarshal([]byte(line), &b); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		b.line = line
		bids = append(bids, b)
	}
	return bids
}

func near(a, b bid) bool {
	return a.Bidder == b.Bidder && max(a.DateTime-b.DateTime, b.DateTime-a.DateTime) < within
}

// TestActiveBidders runs events.yaml for the bids, then the pipeline
// through the weir binary. At parallelism 1 it requires exactly the bids a
// brute-force pass over the stream keeps: per bidder, in stream order, a
// bid passes when none of theirs that passed is within 10 s of it. At
// parallelism 2, where a bidder's bids may reach the dedupe in another
// order, it requires what holds for every order: each passed bid is one
// of the stream's, once; no two passed bids of a bidder are within 10 s;
// and every bid of the stream is within 10 s of a passed bid of its
// bidder.
func TestActiveBidders(t *testing.T) {
	res := weirtest.Run(t, ".", "", "run", "events.yaml")
	if res.Code != 0 {
		t.Fatalf("weir run events.yaml: exit %d\n%s", res.Code, res.Stderr)
	}
	stream := parse(t, res.Stdout)
	var want []string
	var passed []bid
	for _, b := range stream {
		if !slices.ContainsFunc(passed, func(p bid) bool { return near(p, b) }) {
			passed = append(passed, b)
			want = append(want, b.line)
		}
	}
	slices.Sort(want)
	if len(stream) != 18400 || len(want) < 500 || len(want) > len(stream)/2 {
		t.Fatalf("%d of %d bids pass: a weak test", len(want), len(stream))
	}
	for _, par := range []string{"1", "2"} {
		t.Run("parallelism "+par, func(t *testing.T) {
			t.Setenv("WEIR_ENGINE_PARALLELISM", par)
			res := weirtest.Run(t, ".", "", "run", "pipeline.yaml")
			if res.Code != 0 {
				t.Fatalf("weir run pipeline.yaml: exit %d\n%s", res.Code, res.Stderr)
			}
			if !strings.Contains(res.Stderr, "dead_letters=0") {
				t.Errorf("records were rejected:\n%s", res.Stderr)
			}
			got := parse(t, res.Stdout)
			if par == "1" {
				lines := make([]string, len(got))
				for i, b := range got {
					lines[i] = b.line
				}
				slices.Sort(lines)
				if !slices.Equal(lines, want) {
					t.Errorf("%d bids passed, want %d", len(lines), len(want))
				}
				return
			}
			checkAnyOrder(t, stream, got)
		})
	}
}

// checkAnyOrder checks what a dedupe within 10 s gives for any arrival
// order of stream.
func checkAnyOrder(t *testing.T, stream, got []bid) {
	t.Helper()
	inStream := map[string]int{}
	for _, b := range stream {
		inStream[b.line]++
	}
	byBidder := map[int64][]bid{}
	for _, b := range got {
		if inStream[b.line] == 0 {
			t.Fatalf("a passed bid not in the stream, or passed twice: %.200s", b.line)
		}
		inStream[b.line]--
		for _, p := range byBidder[b.Bidder] {
			if near(p, b) {
				t.Fatalf("two passed bids of bidder %d within 10 s: %d and %d", b.Bidder, p.DateTime, b.DateTime)
			}
		}
		byBidder[b.Bidder] = append(byBidder[b.Bidder], b)
	}
	for _, b := range stream {
		if !slices.ContainsFunc(byBidder[b.Bidder], func(p bid) bool { return near(p, b) }) {
			t.Fatalf("a bid dropped with no passed bid of its bidder within 10 s: %.200s", b.line)
		}
	}
}
