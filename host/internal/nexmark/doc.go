// Package nexmark generates the events of the Nexmark benchmark (an online
// auction: people register, open auctions and bid), following the
// generator of Apache Beam's Nexmark suite, which Flink's nexmark copies,
// and provides them to weir as a source (`type: nexmark`).
//
// # The spec, as implemented
//
// Events are numbered from 0; event n's id is n. Of every 50 consecutive
// events, 1 is a person, 3 are auctions and 46 are bids (KindOf). Event n's
// choices are drawn, in the spec's order, from java.util.Random(n) (a port,
// javaRandom), or Random(n ^ mix(seed)) with a nonzero seed, so event n
// depends on nothing but n and the Config: a run is deterministic, and a
// source filtering kinds skips the others without making them.
//
//   - Person ids and auction ids start at 1000; categories are 10 to 14.
//   - A bid goes to the hot auction (the last auction id rounded down to a
//     multiple of 100) with p = 1/2, else to one of the 100 auctions in
//     flight (plus a lead of 10 ids not yet created); its bidder is the hot
//     bidder (the last person id rounded down to a multiple of 100, plus 1)
//     with p = 3/4, else one of the 1,000 active people (plus a lead of 10).
//   - An auction's seller is the hot seller (the last person id rounded
//     down to a multiple of 100) with p = 3/4, else an active person.
//   - Prices (bid price, an auction's initialBid, reserve − initialBid)
//     are round(10^(6U) × 100) cents for U uniform in [0, 1): log-uniform
//     from 1 to 100,000,000.
//   - Event time: event n's dateTime is BaseTime + ⌊n × 10⁶/FirstEventRate⌋
//     / 1000 ms (the spec's first-event rate; a single rate, no rate
//     shapes or out-of-order groups). BaseTime defaults to a fixed instant,
//     not the wall clock, for reproducibility.
//   - An auction expires 1 ms to twice the event time of 1,666 events
//     (NumInFlightAuctions × 50/3) after it opens, uniformly.
//   - Strings are the spec's: names from its lists, 3-to-n-character
//     random strings with spaces (URL parts: underscores), credit cards of
//     four 4-digit groups, US cities and states; a bid's channel is one of
//     four hot channels with p = 1/2, else one of 10,000 "channel-N".
//   - extra pads each event to the spec's average size, counted the spec's
//     way (8 bytes per number, a string's length in characters): 200 bytes
//     for a person, 500 for an auction, 100 for a bid, ±20% uniformly. The
//     JSON encoding is larger (field names, quotes, decimal numbers): about
//     300, 640 and 200 bytes on average.
//
// # Event JSON
//
// One flat JSON object per event, with a "type" discriminator first and
// the event time, "dateTime" (epoch milliseconds), second — early, so that
// `event_time: {field: dateTime}` finds it without scanning the event —
// then the kind's fields in the spec's order, with Flink's names:
//
//	{"type":"person","dateTime":1436918400000,"id":1000,"name":"Peter Shultz","emailAddress":"abc@xyz.com","creditCard":"1234 5678 9012 3456","city":"Boise","state":"OR","extra":"…"}
//	{"type":"auction","dateTime":1436918400000,"id":1000,"itemName":"…","description":"…","initialBid":1234,"reserve":5678,"expires":1436918400123,"seller":1000,"category":12,"extra":"…"}
//	{"type":"bid","dateTime":1436918400000,"auction":1000,"bidder":1001,"price":4321,"channel":"Google","url":"https://www.nexmark.com/…","extra":"…"}
//
// No string needs escaping (the spec's alphabets are letters, digits,
// spaces and URL punctuation). A source record's Timestamp is the event's
// dateTime too, so `event_time: {}` (the record's own timestamp) also works.
//
// Differences from Flink's generator: Flink's channel URLs come from an
// unseeded Random and are seeded here; Beam and Flink wrap events in
// {"event_type":…, "person":…, "auction":…, "bid":…}, flattened here.
package nexmark
