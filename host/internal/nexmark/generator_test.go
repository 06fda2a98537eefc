package nexmark

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/weir-stream/weir/host/internal/engine"
)

// event is any of the three kinds, decoded from the generator's JSON.
type event struct {
	Type     string `json:"type"`
	DateTime int64  `json:"dateTime"`
	// person and auction
	ID int64 `json:"id"`
	// person
	Name, EmailAddress, CreditCard, City, State string
	// auction
	ItemName, Description string
	InitialBid, Reserve   int64
	Expires, Seller       int64
	Category              int64
	// bid
	Auction, Bidder, Price int64
	Channel, URL           string
	Extra                  string
}

// specSize is the size the spec pads an event to, counted its way: 8 bytes
// a number, a string's length.
func (e *event) specSize() int {
	switch e.Type {
	case "person":
		return 8 + len(e.Name) + len(e.EmailAddress) + len(e.CreditCard) + len(e.City) + len(e.State) + len(e.Extra)
	case "auction":
		return 8 + len(e.ItemName) + len(e.Description) + 40 + len(e.Extra)
	}
	return 32 + len(e.Extra)
}

func decode(t testing.TB, b []byte) event {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var e event
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("event %s: %v", b, err)
	}
	return e
}

func TestJavaRandom(t *testing.T) {
	// Values of java.util.Random, well known.
	var r javaRandom
	r.setSeed(0)
	if a, b := r.next(32), r.next(32); a != -1155484576 || b != -723955400 {
		t.Errorf("Random(0).nextInt() = %d, %d", a, b)
	}
	r.setSeed(42)
	if a := r.next(32); a != -1170105035 {
		t.Errorf("Random(42).nextInt() = %d", a)
	}
	r.setSeed(0)
	if d := r.nextDouble(); d != 0.730967787376657 {
		t.Errorf("Random(0).nextDouble() = %v", d)
	}
	for _, bound := range []int32{1, 2, 3, 13, 26, 1 << 20, 1<<31 - 1} {
		for i := range 1000 {
			r.setSeed(int64(i))
			if v := r.nextInt(bound); v < 0 || v >= bound {
				t.Fatalf("nextInt(%d) = %d", bound, v)
			}
		}
	}
	r.setSeed(7)
	for range 1000 {
		if v := r.nextLong(5_000_000_000); v < 0 || v >= 5_000_000_000 {
			t.Fatalf("nextLong = %d", v)
		}
	}
}

// TestSpec checks a run of events against the spec: the 1:3:46
// proportions, the ids, categories, hot auctions, bidders and sellers,
// the price distribution, event times, expiry, and the padded sizes.
func TestSpec(t *testing.T) {
	const n = 200_000
	g := NewGenerator(Config{})
	var (
		counts                  = map[string]int{}
		sizes                   = map[string]float64{}
		jsonSizes               = map[string]float64{}
		hotAuction, hotBidder   int
		hotSeller               int
		lastPerson, lastAuction int64 = FirstPersonID - 1, FirstAuctionID - 1
		logPrice                float64
		prices                  int
		buf                     []byte
	)
	for i := int64(0); i < n; i++ {
		var kind Kind
		var ts int64
		buf, kind, ts = g.AppendEvent(buf[:0], i)
		if !json.Valid(buf) {
			t.Fatalf("event %d is not JSON: %s", i, buf)
		}
		e := decode(t, buf)
		if e.Type != kind.String() || kind != KindOf(i) {
			t.Fatalf("event %d: type %q, kind %v, KindOf %v", i, e.Type, kind, KindOf(i))
		}
		if want := DefaultBaseTime + int64(float64(i)*100)/1000; e.DateTime != want || ts != want {
			t.Fatalf("event %d: dateTime %d (returned %d), want %d", i, e.DateTime, ts, want)
		}
		counts[e.Type]++
		sizes[e.Type] += float64(e.specSize())
		jsonSizes[e.Type] += float64(len(buf))
		switch e.Type {
		case "person":
			if e.ID != lastPerson+1 {
				t.Fatalf("event %d: person id %d after %d", i, e.ID, lastPerson)
			}
			lastPerson = e.ID
			if !strings.Contains(e.EmailAddress, "@") || len(e.CreditCard) != 19 || e.City == "" || len(e.State) != 2 {
				t.Fatalf("event %d: person %+v", i, e)
			}
		case "auction":
			if e.ID != lastAuction+1 {
				t.Fatalf("event %d: auction id %d after %d", i, e.ID, lastAuction)
			}
			lastAuction = e.ID
			if e.Category < FirstCategoryID || e.Category >= FirstCategoryID+NumCategories {
				t.Fatalf("event %d: category %d", i, e.Category)
			}
			if e.Seller < FirstPersonID || e.Seller > lastPerson+PersonIDLead {
				t.Fatalf("event %d: seller %d, last person %d", i, e.Seller, lastPerson)
			}
			if e.Seller == (lastPerson-FirstPersonID)/100*100+FirstPersonID {
				hotSeller++
			}
			if e.Expires <= e.DateTime || e.Reserve < e.InitialBid || e.InitialBid < 1 {
				t.Fatalf("event %d: auction %+v", i, e)
			}
			logPrice += math.Log10(float64(e.InitialBid) / 100)
			prices++
		case "bid":
			if e.Auction < FirstAuctionID || e.Auction > lastAuction+AuctionIDLead {
				t.Fatalf("event %d: bid on %d, last auction %d", i, e.Auction, lastAuction)
			}
			if e.Bidder < FirstPersonID || e.Bidder > lastPerson+PersonIDLead+1 {
				t.Fatalf("event %d: bidder %d, last person %d", i, e.Bidder, lastPerson)
			}
			if e.Auction == (lastAuction-FirstAuctionID)/100*100+FirstAuctionID {
				hotAuction++
			}
			if e.Bidder == (lastPerson-FirstPersonID)/100*100+1+FirstPersonID {
				hotBidder++
			}
			if e.Price < 1 || e.Price > 100_000_000 || e.Channel == "" || !strings.HasPrefix(e.URL, "https://www.nexmark.com/") {
				t.Fatalf("event %d: bid %+v", i, e)
			}
			logPrice += math.Log10(float64(e.Price) / 100)
			prices++
		}
	}
	if counts["person"] != n/50 || counts["auction"] != 3*n/50 || counts["bid"] != 46*n/50 {
		t.Errorf("counts %v, want 1:3:46", counts)
	}
	// A random pick (not the hot one) can also land on the hot id, so the
	// observed share is a little above the spec's probability.
	check := func(what string, got, total int, lo, hi float64) {
		t.Helper()
		f := float64(got) / float64(total)
		t.Logf("%s: %.4f", what, f)
		if f < lo || f > hi {
			t.Errorf("%s: share %.4f, want in [%v, %v]", what, f, lo, hi)
		}
	}
	check("hot auctions", hotAuction, counts["bid"], 0.49, 0.52)
	check("hot bidders", hotBidder, counts["bid"], 0.74, 0.77)
	check("hot sellers", hotSeller, counts["auction"], 0.73, 0.78)
	if m := logPrice / float64(prices); math.Abs(m-3) > 0.03 {
		t.Errorf("mean log10(price/100) = %.4f, want 3 (log-uniform over 10^0..10^6)", m)
	}
	for kind, want := range map[string]float64{"person": AvgPersonByteSize, "auction": AvgAuctionByteSize, "bid": AvgBidByteSize} {
		avg := sizes[kind] / float64(counts[kind])
		t.Logf("%s: spec size %.1f, JSON %.1f bytes", kind, avg, jsonSizes[kind]/float64(counts[kind]))
		if math.Abs(avg-want)/want > 0.02 {
			t.Errorf("%s: average spec size %.1f, want %v ± 2%%", kind, avg, want)
		}
	}
}

func TestDeterministic(t *testing.T) {
	for _, seed := range []int64{0, 1, -99} {
		a, b := NewGenerator(Config{Seed: seed}), NewGenerator(Config{Seed: seed})
		for _, i := range []int64{0, 1, 4, 49, 50, 12345, 1e9} {
			x, _, _ := a.AppendEvent(nil, i)
			y, _, _ := b.AppendEvent(nil, i)
			if !bytes.Equal(x, y) {
				t.Fatalf("seed %d, event %d: %s != %s", seed, i, x, y)
			}
		}
	}
	x, _, _ := NewGenerator(Config{Seed: 0}).AppendEvent(nil, 100)
	y, _, _ := NewGenerator(Config{Seed: 1}).AppendEvent(nil, 100)
	if bytes.Equal(x, y) {
		t.Errorf("seeds 0 and 1 give the same event %s", x)
	}
}

// FuzzEvent checks that any event of any generator is one valid JSON
// object of the right kind, with ids, times and prices in range.
func FuzzEvent(f *testing.F) {
	f.Add(int64(0), int64(0), 10000.0)
	f.Add(int64(1e12), int64(5), 1.0)
	f.Add(int64(49), int64(-1), 1e9)
	f.Fuzz(func(t *testing.T, n, seed int64, rate float64) {
		if n < 0 || n > 1<<50 || !(rate >= 1e-3 && rate <= 1e9) {
			t.Skip()
		}
		g := NewGenerator(Config{Seed: seed, FirstEventRate: rate})
		b, kind, ts := g.AppendEvent(nil, n)
		e := decode(t, b)
		if e.Type != kind.String() || kind != KindOf(n) || e.DateTime != ts || ts != g.Timestamp(n) {
			t.Fatalf("event %d: %s", n, b)
		}
		persons := lastBase0PersonID(n) + 1
		auctions := lastBase0AuctionID(n) + 1
		switch kind {
		case KindPerson:
			if e.ID != persons-1+FirstPersonID {
				t.Fatalf("event %d: %s", n, b)
			}
		case KindAuction:
			if e.ID != auctions-1+FirstAuctionID || e.Seller < FirstPersonID || e.Seller >= FirstPersonID+persons+PersonIDLead ||
				e.Category < 10 || e.Category > 14 || e.Expires <= ts {
				t.Fatalf("event %d: %s", n, b)
			}
		case KindBid:
			if e.Auction < FirstAuctionID || e.Auction >= FirstAuctionID+auctions+AuctionIDLead ||
				e.Bidder < FirstPersonID || e.Bidder > FirstPersonID+persons+PersonIDLead || e.Price < 1 || e.Price > 1e8 {
				t.Fatalf("event %d: %s", n, b)
			}
		}
	})
}

// TestSource runs the source in an engine pipeline, with a kinds filter,
// and compares its records with the generator's events.
func TestSource(t *testing.T) {
	var out bytes.Buffer
	p := &engine.Pipeline{
		Sources:   []engine.Source{NewSource("nx", SourceConfig{Count: 1000, Kinds: KindBid | KindPerson})},
		Sinks:     []engine.Sink{engine.NewWriterSink("out", "test", &out, engine.SinkRaw, false)},
		BatchSize: 64,
	}
	sum, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	g := NewGenerator(Config{})
	for i := int64(0); i < 1000; i++ {
		if KindOf(i) == KindAuction {
			continue
		}
		b, _, _ := g.AppendEvent(nil, i)
		want.Write(b)
		want.WriteByte('\n')
	}
	if out.String() != want.String() {
		t.Fatalf("source wrote %d bytes, want %d", out.Len(), want.Len())
	}
	if sum.Sources[0].Out != 940 {
		t.Errorf("source counts %+v, want 940 records (20 persons, 920 bids)", sum.Sources[0])
	}
}

func BenchmarkGenerator(b *testing.B) {
	g := NewGenerator(Config{})
	var buf []byte
	var bytes int
	for i := 0; b.Loop(); i++ {
		buf, _, _ = g.AppendEvent(buf[:0], int64(i))
		bytes += len(buf)
	}
	b.SetBytes(int64(bytes / b.N))
}

func TestNextIntConst(t *testing.T) {
	var a, b javaRandom
	for i := range 10000 {
		a.setSeed(int64(i))
		b.setSeed(int64(i))
		if a.nextInt26() != b.nextInt(26) || a.nextInt13() != b.nextInt(13) {
			t.Fatalf("seed %d: constant-bound nextInt differs", i)
		}
	}
}
