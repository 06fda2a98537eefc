// Package reference holds brute-force implementations of the Nexmark
// queries of this example, over the bids as parsed from the generator's
// JSON: the plainest code that gives each query's answer, for the tests to
// check weir's output against. It lives here, not beside the generator in
// host/internal/nexmark, because Go's internal rule keeps that package
// out of reach of the example's test, which runs the weir binary.
package reference

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Bid is a bid event, and the JSON line it was read from.
type Bid struct {
	Type     string `json:"type"`
	DateTime int64  `json:"dateTime"`
	Auction  int64  `json:"auction"`
	Bidder   int64  `json:"bidder"`
	Price    int64  `json:"price"`
	Channel  string `json:"channel"`
	URL      string `json:"url"`
	Extra    string `json:"extra"`
	Line     string `json:"-"`
}

// ReadBids reads the bids among JSON events, one a line, in order.
func ReadBids(r io.Reader) ([]Bid, error) {
	var bids []Bid
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		var b Bid
		if err := json.Unmarshal([]byte(line), &b); err != nil {
			return nil, fmt.Errorf("%q: %v", line, err)
		}
		if b.Type == "bid" {
			b.Line = line
			bids = append(bids, b)
		}
	}
	return bids, sc.Err()
}

// Q0 is the pass-through: every bid, as it was written.
func Q0(bids []Bid) []string {
	var out []string
	for _, b := range bids {
		out = append(out, b.Line)
	}
	return out
}

// Q1Price is q1's price in euros.
func Q1Price(b Bid) float64 { return float64(b.Price) * 0.908 }

// Q2 is the bids on auctions whose id is a multiple of 123.
func Q2(bids []Bid) []string {
	var out []string
	for _, b := range bids {
		if b.Auction%123 == 0 {
			out = append(out, b.Line)
		}
	}
	return out
}

// Q5Row is one sliding window's hottest auctions.
type Q5Row struct {
	Start, End int64
	Num        int64   // bids of each hottest auction
	Auctions   []int64 // sorted
}

// Q5 counts the bids per auction in every window of size ms sliding by
// slide ms (the windows [e−size, e) for e a multiple of slide), and gives,
// for each window with a bid, the auctions with the most. Rows by End.
func Q5(bids []Bid, size, slide int64) []Q5Row {
	counts := map[int64]map[int64]int64{} // window end → auction → bids
	for _, b := range bids {
		for e := floorDiv(b.DateTime, slide)*slide + slide; e-size <= b.DateTime; e += slide {
			if counts[e] == nil {
				counts[e] = map[int64]int64{}
			}
			counts[e][b.Auction]++
		}
	}
	var out []Q5Row
	for e, byAuction := range counts {
		row := Q5Row{Start: e - size, End: e}
		for a, n := range byAuction {
			switch {
			case n > row.Num:
				row.Num, row.Auctions = n, []int64{a}
			case n == row.Num:
				row.Auctions = append(row.Auctions, a)
			}
		}
		slices.Sort(row.Auctions)
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b Q5Row) int { return int(a.End - b.End) })
	return out
}

// Q7Row is one tumbling window's highest bids.
type Q7Row struct {
	Start, End int64
	Price      int64
	Bids       []Bid // in input order
}

// Q7 gives, for each tumbling window of size ms with a bid, the bids with
// the highest price. Rows by Start.
func Q7(bids []Bid, size int64) []Q7Row {
	rows := map[int64]*Q7Row{}
	for _, b := range bids {
		s := floorDiv(b.DateTime, size) * size
		r := rows[s]
		if r == nil {
			r = &Q7Row{Start: s, End: s + size, Price: -1}
			rows[s] = r
		}
		switch {
		case b.Price > r.Price:
			r.Price, r.Bids = b.Price, []Bid{b}
		case b.Price == r.Price:
			r.Bids = append(r.Bids, b)
		}
	}
	var out []Q7Row
	for _, r := range rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Q7Row) int { return int(a.Start - b.Start) })
	return out
}

// Session is one bidder's session: its bids, each at most gap after the
// previous one; End is the last bid's time + gap.
type Session struct {
	Bidder     int64
	Start, End int64
	Count      int64
}

// Q11 gives every bidder's sessions, sorted by bidder then start.
func Q11(bids []Bid, gap int64) []Session {
	times := map[int64][]int64{}
	for _, b := range bids {
		times[b.Bidder] = append(times[b.Bidder], b.DateTime)
	}
	var out []Session
	for bidder, ts := range times {
		slices.Sort(ts)
		cur := Session{Bidder: bidder, Start: ts[0], End: ts[0] + gap, Count: 1}
		for _, t := range ts[1:] {
			if t <= cur.End {
				cur.End = t + gap
				cur.Count++
				continue
			}
			out = append(out, cur)
			cur = Session{Bidder: bidder, Start: t, End: t + gap, Count: 1}
		}
		out = append(out, cur)
	}
	SortSessions(out)
	return out
}

// SortSessions sorts sessions by bidder, then start.
func SortSessions(s []Session) {
	slices.SortFunc(s, func(a, b Session) int {
		if a.Bidder != b.Bidder {
			return int(a.Bidder - b.Bidder)
		}
		return int(a.Start - b.Start)
	})
}

// Q12Totals is q12 summed over its processing-time windows, which depend
// on when the run happened: the bids of each bidder.
func Q12Totals(bids []Bid) map[int64]int64 {
	out := map[int64]int64{}
	for _, b := range bids {
		out[b.Bidder]++
	}
	return out
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Person and Auction are the fields of those events that q3 reads.
type Person struct {
	ID       int64  `json:"id"`
	Name     string `json:"name"`
	City     string `json:"city"`
	State    string `json:"state"`
	DateTime int64  `json:"dateTime"`
}

type Auction struct {
	ID       int64 `json:"id"`
	Seller   int64 `json:"seller"`
	Category int64 `json:"category"`
	DateTime int64 `json:"dateTime"`
}

// ReadPeopleAndAuctions reads the persons and auctions among JSON events,
// one a line.
func ReadPeopleAndAuctions(r io.Reader) ([]Person, []Auction, error) {
	var ps []Person
	var as []Auction
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := []byte(sc.Text())
		var t struct{ Type string }
		if err := json.Unmarshal(line, &t); err != nil {
			continue // blank
		}
		switch t.Type {
		case "person":
			var p Person
			if err := json.Unmarshal(line, &p); err != nil {
				return nil, nil, err
			}
			ps = append(ps, p)
		case "auction":
			var a Auction
			if err := json.Unmarshal(line, &a); err != nil {
				return nil, nil, err
			}
			as = append(as, a)
		}
	}
	return ps, as, sc.Err()
}

// Q3Row is a row of q3.
type Q3Row struct {
	Name  string `json:"name"`
	City  string `json:"city"`
	State string `json:"state"`
	ID    int64  `json:"id"`
}

// Q3 is local item suggestion: each auction of category 10 with its
// seller, when the seller lives in OR, ID or CA; sorted by auction id.
func Q3(ps []Person, as []Auction) []Q3Row {
	byID := map[int64]Person{}
	for _, p := range ps {
		if p.State == "OR" || p.State == "ID" || p.State == "CA" {
			byID[p.ID] = p
		}
	}
	var out []Q3Row
	for _, a := range as {
		if p, ok := byID[a.Seller]; ok && a.Category == 10 {
			out = append(out, Q3Row{Name: p.Name, City: p.City, State: p.State, ID: a.ID})
		}
	}
	slices.SortFunc(out, func(x, y Q3Row) int { return cmp.Compare(x.ID, y.ID) })
	return out
}

// Q8Row is a row of q8.
type Q8Row struct {
	ID    int64
	Name  string
	Start int64
}

// Q8 is monitor new users: each person who opened an auction in the same
// tumbling window of size ms as they registered, with the window's start;
// sorted by id.
func Q8(ps []Person, as []Auction, size int64) []Q8Row {
	sold := map[[2]int64]bool{} // seller, window start
	for _, a := range as {
		sold[[2]int64{a.Seller, floorDiv(a.DateTime, size) * size}] = true
	}
	var out []Q8Row
	for _, p := range ps {
		start := floorDiv(p.DateTime, size) * size
		if sold[[2]int64{p.ID, start}] {
			out = append(out, Q8Row{ID: p.ID, Name: p.Name, Start: start})
		}
	}
	slices.SortFunc(out, func(x, y Q8Row) int { return cmp.Compare(x.ID, y.ID) })
	return out
}
