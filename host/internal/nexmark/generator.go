package nexmark

import (
	"math"
	"slices"
	"strconv"
)

// Constants of the spec (Beam's GeneratorConfig, Person/Auction/Bid
// generators; Flink's nexmark copies them).
const (
	PersonProportion  = 1
	AuctionProportion = 3
	BidProportion     = 46
	TotalProportion   = PersonProportion + AuctionProportion + BidProportion // 50

	FirstPersonID   = 1000
	FirstAuctionID  = 1000
	FirstCategoryID = 10
	NumCategories   = 5

	NumActivePeople     = 1000 // people a random bidder or seller is drawn from
	NumInFlightAuctions = 100  // auctions a random bid is drawn from
	PersonIDLead        = 10   // ids a little past the last person, as the spec allows
	AuctionIDLead       = 10

	HotAuctionRatio  = 2 // a bid goes to the hot auction with p = 1 − 1/2
	HotBiddersRatio  = 4 // a bid comes from a hot bidder with p = 1 − 1/4
	HotSellersRatio  = 4 // an auction is a hot seller's with p = 1 − 1/4
	hotAuctionGroup  = 100
	hotBidderGroup   = 100
	hotSellerGroup   = 100
	hotChannelsRatio = 2
	numChannels      = 10000

	AvgPersonByteSize  = 200
	AvgAuctionByteSize = 500
	AvgBidByteSize     = 100

	// DefaultFirstEventRate is the spec's default event rate (events per
	// second of event time), which spaces the events' dateTime.
	DefaultFirstEventRate = 10000
	// DefaultBaseTime is the dateTime of event 0, epoch milliseconds
	// (2015-07-15T00:00:00Z): fixed, so that a seed gives the same events
	// on every run. Beam's default is the wall clock at start.
	DefaultBaseTime = 1436918400000
)

// Kind is the kind of an event.
type Kind uint8

// Event kinds.
const (
	KindPerson Kind = 1 << iota
	KindAuction
	KindBid
	AllKinds = KindPerson | KindAuction | KindBid
)

// String returns the kind's discriminator in the JSON: person, auction, bid.
func (k Kind) String() string {
	switch k {
	case KindPerson:
		return "person"
	case KindAuction:
		return "auction"
	case KindBid:
		return "bid"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// KindOf returns the kind of event number n: of every 50 consecutive
// events, 1 is a person, 3 are auctions and 46 are bids.
func KindOf(n int64) Kind {
	switch rem := n % TotalProportion; {
	case rem < PersonProportion:
		return KindPerson
	case rem < PersonProportion+AuctionProportion:
		return KindAuction
	}
	return KindBid
}

// Config configures a Generator.
type Config struct {
	// FirstEventRate is events per second of event time: event n's
	// dateTime is BaseTime + ⌊n · 10⁶/FirstEventRate⌋/1000 ms. It is not a
	// throttle (see SourceConfig.Rate). Default DefaultFirstEventRate.
	FirstEventRate float64
	// BaseTime is event 0's dateTime, epoch ms; default DefaultBaseTime.
	BaseTime int64
	// Seed 0 draws event n's choices from java.util.Random(n), as the
	// spec does; another seed from Random(n ^ mix(Seed)).
	Seed int64
}

// Generator makes Nexmark events. Event n depends only on n and the
// Config, so any event can be made on its own, in any order. A Generator
// is not safe for concurrent use (it reuses a random source).
type Generator struct {
	cfg     Config
	delayUs float64
	seedMix int64
	rng     javaRandom
	scratch []byte
}

// NewGenerator returns a Generator, defaults applied to cfg's zero fields.
func NewGenerator(cfg Config) *Generator {
	if cfg.FirstEventRate <= 0 {
		cfg.FirstEventRate = DefaultFirstEventRate
	}
	if cfg.BaseTime == 0 {
		cfg.BaseTime = DefaultBaseTime
	}
	g := &Generator{cfg: cfg, delayUs: 1e6 / cfg.FirstEventRate}
	if cfg.Seed != 0 {
		// splitmix64's finaliser, so nearby seeds give unrelated streams.
		z := uint64(cfg.Seed) + 0x9e3779b97f4a7c15
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		g.seedMix = int64(z ^ z>>31)
	}
	return g
}

// Config returns the generator's configuration, defaults applied.
func (g *Generator) Config() Config { return g.cfg }

// Timestamp returns event n's dateTime, epoch milliseconds.
func (g *Generator) Timestamp(n int64) int64 {
	return g.cfg.BaseTime + int64(float64(n)*g.delayUs)/1000
}

// lastBase0PersonID is the 0-based id of the last person created at or
// before event n.
func lastBase0PersonID(n int64) int64 {
	epoch, offset := n/TotalProportion, n%TotalProportion
	if offset >= PersonProportion {
		offset = PersonProportion - 1
	}
	return epoch*PersonProportion + offset
}

// lastBase0AuctionID is the 0-based id of the last auction created at or
// before event n (−1 before the first).
func lastBase0AuctionID(n int64) int64 {
	epoch, offset := n/TotalProportion, n%TotalProportion
	switch {
	case offset < PersonProportion:
		epoch--
		offset = AuctionProportion - 1
	case offset >= PersonProportion+AuctionProportion:
		offset = AuctionProportion - 1
	default:
		offset -= PersonProportion
	}
	return epoch*AuctionProportion + offset
}

func (g *Generator) nextBase0PersonID(n int64) int64 {
	numPeople := lastBase0PersonID(n) + 1
	active := min(numPeople, NumActivePeople)
	return numPeople - active + g.rng.nextLong(active+PersonIDLead)
}

func (g *Generator) nextBase0AuctionID(n int64) int64 {
	maxAuction := lastBase0AuctionID(n)
	minAuction := max(maxAuction-NumInFlightAuctions, 0)
	return minAuction + g.rng.nextLong(maxAuction-minAuction+1+AuctionIDLead)
}

// nextPrice is the spec's log-uniform price in cents: round(10^(6U)·100).
func (g *Generator) nextPrice() int64 {
	return int64(math.Floor(math.Pow(10, g.rng.nextDouble()*6)*100 + 0.5))
}

// AppendEvent appends event n as one JSON object (see the package
// documentation) and returns the buffer, the event's kind and dateTime.
func (g *Generator) AppendEvent(dst []byte, n int64) ([]byte, Kind, int64) {
	id := n // Beam's firstEventId is 0: an event's id is its number
	if g.seedMix == 0 {
		g.rng.setSeed(id)
	} else {
		g.rng.setSeed(id ^ g.seedMix)
	}
	ts := g.Timestamp(n)
	kind := KindOf(n)
	dst = append(dst, `{"type":"`...)
	dst = append(dst, kind.String()...)
	dst = append(dst, `","dateTime":`...)
	dst = strconv.AppendInt(dst, ts, 10)
	switch kind {
	case KindPerson:
		dst = g.appendPerson(dst, n)
	case KindAuction:
		dst = g.appendAuction(dst, n, ts)
	default:
		dst = g.appendBid(dst, n)
	}
	return append(dst, '}'), kind, ts
}

var (
	usStates   = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	usCities   = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	firstNames = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames  = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
)

func (g *Generator) pick(list []string) string { return list[g.rng.nextInt(int32(len(list)))] }

func (g *Generator) appendPerson(dst []byte, n int64) []byte {
	dst = append(dst, `,"id":`...)
	dst = strconv.AppendInt(dst, lastBase0PersonID(n)+FirstPersonID, 10)
	dst = append(dst, `,"name":"`...)
	first, last := g.pick(firstNames), g.pick(lastNames)
	dst = append(append(append(dst, first...), ' '), last...)
	size := 8 + len(first) + 1 + len(last)
	dst = append(dst, `","emailAddress":"`...)
	start := len(dst)
	dst = g.appendString(dst, 7, ' ')
	dst = append(dst, '@')
	dst = g.appendString(dst, 5, ' ')
	dst = append(dst, ".com"...)
	size += len(dst) - start
	dst = append(dst, `","creditCard":"`...)
	for i := range 4 {
		if i > 0 {
			dst = append(dst, ' ')
		}
		v := g.rng.nextInt(10000)
		dst = append(dst, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
	}
	size += 19
	city, state := g.pick(usCities), g.pick(usStates)
	size += len(city) + len(state)
	dst = append(dst, `","city":"`...)
	dst = append(dst, city...)
	dst = append(dst, `","state":"`...)
	dst = append(dst, state...)
	dst = append(dst, `","extra":"`...)
	dst = g.appendExtra(dst, size, AvgPersonByteSize)
	return append(dst, '"')
}

func (g *Generator) appendAuction(dst []byte, n, ts int64) []byte {
	dst = append(dst, `,"id":`...)
	dst = strconv.AppendInt(dst, lastBase0AuctionID(n)+FirstAuctionID, 10)
	var seller int64
	if g.rng.nextInt(HotSellersRatio) > 0 {
		seller = lastBase0PersonID(n) / hotSellerGroup * hotSellerGroup
	} else {
		seller = g.nextBase0PersonID(n)
	}
	seller += FirstPersonID
	category := FirstCategoryID + int64(g.rng.nextInt(NumCategories))
	initialBid := g.nextPrice()
	// The auction runs 1 ms to twice the event time it takes to create
	// NumInFlightAuctions more auctions.
	future := g.Timestamp(n + NumInFlightAuctions*TotalProportion/AuctionProportion)
	expires := ts + 1 + g.rng.nextLong(max((future-ts)*2, 1))
	dst = append(dst, `,"itemName":"`...)
	start := len(dst)
	dst = g.appendString(dst, 20, ' ')
	size := 8 + len(dst) - start
	dst = append(dst, `","description":"`...)
	start = len(dst)
	dst = g.appendString(dst, 100, ' ')
	size += len(dst) - start + 40
	reserve := initialBid + g.nextPrice()
	dst = append(dst, `","initialBid":`...)
	dst = strconv.AppendInt(dst, initialBid, 10)
	dst = append(dst, `,"reserve":`...)
	dst = strconv.AppendInt(dst, reserve, 10)
	dst = append(dst, `,"expires":`...)
	dst = strconv.AppendInt(dst, expires, 10)
	dst = append(dst, `,"seller":`...)
	dst = strconv.AppendInt(dst, seller, 10)
	dst = append(dst, `,"category":`...)
	dst = strconv.AppendInt(dst, category, 10)
	dst = append(dst, `,"extra":"`...)
	dst = g.appendExtra(dst, size, AvgAuctionByteSize)
	return append(dst, '"')
}

func (g *Generator) appendBid(dst []byte, n int64) []byte {
	var auction, bidder int64
	if g.rng.nextInt(HotAuctionRatio) > 0 {
		auction = lastBase0AuctionID(n) / hotAuctionGroup * hotAuctionGroup
	} else {
		auction = g.nextBase0AuctionID(n)
	}
	auction += FirstAuctionID
	if g.rng.nextInt(HotBiddersRatio) > 0 {
		bidder = lastBase0PersonID(n)/hotBidderGroup*hotBidderGroup + 1
	} else {
		bidder = g.nextBase0PersonID(n)
	}
	bidder += FirstPersonID
	price := g.nextPrice()
	var channel, url string
	if g.rng.nextInt(hotChannelsRatio) > 0 {
		i := g.rng.nextInt(int32(len(hotChannels)))
		channel, url = hotChannels[i], hotURLs[i]
	} else {
		c := &channels[g.rng.nextInt(numChannels)]
		channel, url = c.name, c.url
	}
	dst = append(dst, `,"auction":`...)
	dst = strconv.AppendInt(dst, auction, 10)
	dst = append(dst, `,"bidder":`...)
	dst = strconv.AppendInt(dst, bidder, 10)
	dst = append(dst, `,"price":`...)
	dst = strconv.AppendInt(dst, price, 10)
	dst = append(dst, `,"channel":"`...)
	dst = append(dst, channel...)
	dst = append(dst, `","url":"`...)
	dst = append(dst, url...)
	dst = append(dst, `","extra":"`...)
	dst = g.appendExtra(dst, 32, AvgBidByteSize)
	return append(dst, '"')
}

// appendString is the spec's nextString(maxLength, special): 3 to
// maxLength−1 characters, each special with p = 1/13, else a random
// lower-case letter, then trimmed of spaces at both ends (Java's trim).
func (g *Generator) appendString(dst []byte, maxLength int32, special byte) []byte {
	start := len(dst)
	for n := 3 + g.rng.nextInt(maxLength-3); n > 0; n-- {
		if g.rng.nextInt13() == 0 {
			dst = append(dst, special)
		} else {
			dst = append(dst, byte('a'+g.rng.nextInt26()))
		}
	}
	end := len(dst)
	for end > start && dst[end-1] <= ' ' {
		end--
	}
	lead := start
	for lead < end && dst[lead] <= ' ' {
		lead++
	}
	n := copy(dst[start:], dst[lead:end])
	return dst[:start+n]
}

// appendExtra is the spec's nextExtra: letters padding an event whose
// fields count currentSize bytes (8 per number, a string's length) to
// desired bytes on average, ±20% uniformly.
func (g *Generator) appendExtra(dst []byte, currentSize, desired int) []byte {
	if currentSize > desired {
		return dst
	}
	desired -= currentSize
	delta := int(math.Floor(float64(desired)*0.2 + 0.5))
	size := desired - delta
	if delta != 0 {
		size += int(g.rng.nextInt(int32(2 * delta)))
	}
	dst = slices.Grow(dst, size)
	r := g.rng
	for range size {
		dst = append(dst, byte('a'+r.nextInt26()))
	}
	g.rng = r
	return dst
}

type channel struct{ name, url string }

var (
	hotChannels = []string{"Google", "Facebook", "Baidu", "Apple"}
	hotURLs     []string
	// channels are the 10,000 other channels, "channel-N" with its URL.
	// Flink draws their URLs from an unseeded Random; here each comes from
	// Random(N), so that runs are reproducible.
	channels []channel
)

func init() {
	var r Generator
	baseURL := func() string {
		b := []byte("https://www.nexmark.com/")
		b = r.appendString(b, 5, '_')
		b = append(b, '/')
		b = r.appendString(b, 5, '_')
		b = append(b, '/')
		b = r.appendString(b, 5, '_')
		b = append(b, "/item.htm?query=1"...)
		return string(b)
	}
	r.rng.setSeed(-1)
	for range hotChannels {
		hotURLs = append(hotURLs, baseURL())
	}
	channels = make([]channel, numChannels)
	for i := range channels {
		r.rng.setSeed(int64(i))
		url := baseURL()
		if r.rng.nextInt(10) > 0 {
			url += "&channel_id=" + strconv.FormatInt(int64(absInt32(reverse32(int32(i)))), 10)
		}
		channels[i] = channel{name: "channel-" + strconv.Itoa(i), url: url}
	}
}

// reverse32 is Java's Integer.reverse: the bits in reverse order.
func reverse32(v int32) int32 {
	u := uint32(v)
	var r uint32
	for range 32 {
		r = r<<1 | u&1
		u >>= 1
	}
	return int32(r)
}

// absInt32 is Java's Math.abs(int): MinInt32 stays negative.
func absInt32(v int32) int32 {
	if v < 0 {
		return -v
	}
	return v
}
