package engine

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/weir-stream/weir/abi/wjson"
	"github.com/weir-stream/weir/host/internal/record"
)

// GenKind is the kind of a generated field; a plain value.
type GenKind int

const (
	GenSequence     GenKind = iota + 1 // Start, Start+1, …, End (or without end)
	GenRandomInt                       // uniform integer in [Min, Max]
	GenRandomFloat                     // uniform float in [Min, Max], rounded to Decimals
	GenRandomChoice                    // one of Values
	GenRandomString                    // Length random lowercase letters and digits
	GenRandomBool                      // true or false
	GenConstant                        // Value
	GenTimestamp                       // the record's event time, epoch milliseconds
)

// GenField describes one generated JSON field. A generator reads it while
// it runs: it must not change after NewGenerator.
type GenField struct {
	Name       string
	Kind       GenKind
	Start, End int64
	Bounded    bool // a sequence with an End
	Min, Max   float64
	MinInt     int64
	MaxInt     int64
	Decimals   int // random_float: digits after the point; -1 for all
	Length     int
	// Values holds the choices of GenRandomChoice, and Value the constant of
	// GenConstant, each as JSON text.
	Values [][]byte
	Value  []byte
}

// GeneratorConfig configures a generator source, after Flink's datagen.
// NewGenerator copies it but not what its slices hold, which must not
// change afterwards.
type GeneratorConfig struct {
	// Count is the number of records to produce; 0 means no limit, in which
	// case the source ends when a bounded sequence runs out. With a Count,
	// bounded sequences wrap around.
	Count int64
	// Rate is records per second; 0 means as fast as the pipeline takes them.
	Rate float64
	// Seed makes random fields reproducible.
	Seed uint64
	// Key names the field whose value (string text unquoted, other values as
	// JSON text) becomes the record key; empty for no key.
	Key    string
	Fields []GenField
	// Linger bounds how long a partly filled batch waits when Rate throttles
	// the source.
	Linger time.Duration
}

type generator struct {
	name string
	cfg  GeneratorConfig
	now  func() time.Time
}

// NewGenerator returns a source producing JSON objects with cfg's fields, in
// field order.
func NewGenerator(name string, cfg GeneratorConfig) Source {
	return &generator{name: name, cfg: cfg, now: time.Now}
}

func (g *generator) Name() string { return g.name }

// Replayable implements Replayable: record i of a run is record i of any
// run (random fields are the same with the same Seed; event times follow
// the clock of the run that makes them).
func (g *generator) Replayable() bool { return true }

const alnum = "abcdefghijklmnopqrstuvwxyz0123456789"

// Run implements Source.
func (g *generator) Run(ctx context.Context, out *Out) error {
	cfg := g.cfg
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	keyField := -1
	for i, f := range cfg.Fields {
		if f.Name == cfg.Key {
			keyField = i
		}
	}
	limit, prefixes := g.limit(), g.prefixes()
	var (
		buf     []byte
		key     []byte
		pace    = NewPacer(cfg.Rate, cfg.Linger, g.now)
		start   = pace.Start()
		now     int64
		stopped = ctx.Done()
	)
	for i := int64(0); limit == 0 || i < limit; i++ {
		select {
		case <-stopped:
			return out.Flush()
		default:
		}
		if stop, err := pace.Wait(ctx, out, i); stop || err != nil {
			return err
		}
		// With a rate, event time is evenly spaced from the start, so it is
		// reproducible relative to it; without, it is the wall clock when
		// the batch was started.
		if out.Pending() == 0 {
			age := g.now()
			pace.BatchStarted(age)
			now = age.UnixMilli()
		}
		ts := now
		if cfg.Rate > 0 {
			ts = start.UnixMilli() + int64(float64(i)*1000/cfg.Rate)
		}
		buf = append(buf[:0], '{')
		for fi := range cfg.Fields {
			buf = append(buf, prefixes[fi]...)
			valStart := len(buf)
			var err error
			if buf, err = g.appendValue(buf, &cfg.Fields[fi], i, ts, rng); err != nil {
				return err
			}
			if fi == keyField {
				key = appendKeyText(key[:0], buf[valStart:])
			}
		}
		buf = append(buf, '}')
		rec := record.Record{Value: buf, Timestamp: ts, Origin: record.Origin{Partition: -1, Offset: i}}
		if keyField >= 0 {
			rec.Key = key
		}
		if err := out.Add(rec); err != nil {
			return err
		}
	}
	return out.Flush()
}

// limit is the number of records to produce: the Count, or, without one,
// the records before the shortest bounded sequence runs out; 0 for no end.
func (g *generator) limit() int64 {
	limit := g.cfg.Count
	if limit == 0 {
		for _, f := range g.cfg.Fields {
			if f.Kind == GenSequence && f.Bounded {
				if n := f.End - f.Start + 1; limit == 0 || n < limit {
					limit = n
				}
			}
		}
	}
	return limit
}

// prefixes returns each field's `"name":` prefix, encoded once, with the
// comma before every field but the first.
func (g *generator) prefixes() [][]byte {
	prefixes := make([][]byte, len(g.cfg.Fields))
	for fi, f := range g.cfg.Fields {
		if fi > 0 {
			prefixes[fi] = append(prefixes[fi], ',')
		}
		prefixes[fi] = strconv.AppendQuote(prefixes[fi], f.Name)
		prefixes[fi] = append(prefixes[fi], ':')
	}
	return prefixes
}

// appendValue appends the JSON value of field f in record i, whose event
// time is ts.
func (g *generator) appendValue(buf []byte, f *GenField, i, ts int64, rng *rand.Rand) ([]byte, error) {
	switch f.Kind {
	case GenSequence:
		v := f.Start + i
		if f.Bounded {
			v = f.Start + i%(f.End-f.Start+1)
		}
		return strconv.AppendInt(buf, v, 10), nil
	case GenRandomInt:
		span := uint64(f.MaxInt - f.MinInt)
		var off uint64
		if span == math.MaxUint64 {
			off = rng.Uint64()
		} else {
			off = rng.Uint64N(span + 1)
		}
		return strconv.AppendInt(buf, f.MinInt+int64(off), 10), nil
	case GenRandomFloat:
		v := f.Min + rng.Float64()*(f.Max-f.Min)
		if f.Decimals < 0 {
			return strconv.AppendFloat(buf, v, 'f', -1, 64), nil
		}
		p := math.Pow10(f.Decimals)
		return strconv.AppendFloat(buf, math.Round(v*p)/p, 'f', f.Decimals, 64), nil
	case GenRandomChoice:
		return append(buf, f.Values[rng.IntN(len(f.Values))]...), nil
	case GenRandomString:
		buf = append(buf, '"')
		buf = appendRandomString(buf, rng, f.Length)
		return append(buf, '"'), nil
	case GenRandomBool:
		return strconv.AppendBool(buf, rng.Uint64()&1 == 1), nil
	case GenConstant:
		return append(buf, f.Value...), nil
	case GenTimestamp:
		return strconv.AppendInt(buf, ts, 10), nil
	}
	return buf, fmt.Errorf("source %q: field %q has unknown kind %d", g.name, f.Name, f.Kind)
}

// appendRandomString appends n characters drawn from alnum, ten from each
// 64-bit random number: 2^64 is over 5000 times 36^10, so no character is
// more than 0.03% likelier than another.
func appendRandomString(dst []byte, rng *rand.Rand, n int) []byte {
	for n > 0 {
		x := rng.Uint64()
		for j := 0; j < 10 && n > 0; j++ {
			dst = append(dst, alnum[x%36])
			x /= 36
			n--
		}
	}
	return dst
}

// appendKeyText appends the key form of a JSON value: a string's text
// without quotes, anything else as its JSON text.
func appendKeyText(dst, v []byte) []byte {
	if len(v) > 0 && v[0] == '"' {
		return wjson.Value{Kind: wjson.String, Raw: v}.AppendString(dst)
	}
	return append(dst, v...)
}

// Pacer holds a source to a rate: record i is due at start + i/rate. A
// partial batch is flushed before a wait that would hold it longer than
// the linger. A Pacer is used by its source's goroutine only.
type Pacer struct {
	rate     float64
	linger   time.Duration
	now      func() time.Time
	start    time.Time
	batchAge time.Time
}

// NewPacer returns a Pacer for rate records per second (0: no limit),
// starting now.
func NewPacer(rate float64, linger time.Duration, now func() time.Time) *Pacer {
	if now == nil {
		now = time.Now
	}
	return &Pacer{rate: rate, linger: linger, now: now, start: now()}
}

// Start returns when the Pacer started.
func (p *Pacer) Start() time.Time { return p.start }

// BatchStarted notes when the batch being filled got its first record.
func (p *Pacer) BatchStarted(t time.Time) { p.batchAge = t }

// Wait returns when record i is due. stop is set when ctx ended the wait;
// out has then been flushed, and err is the flush's error.
func (p *Pacer) Wait(ctx context.Context, out *Out, i int64) (stop bool, err error) {
	if p.rate <= 0 {
		return false, nil
	}
	due := p.start.Add(time.Duration(float64(i) / p.rate * float64(time.Second)))
	wait := due.Sub(p.now())
	if wait <= 0 {
		return false, nil
	}
	if out.Pending() > 0 && (p.linger <= 0 || p.now().Add(wait).Sub(p.batchAge) >= p.linger) {
		if err := out.Flush(); err != nil {
			return true, err
		}
	}
	t := time.NewTimer(wait)
	select {
	case <-t.C:
		return false, nil
	case <-ctx.Done():
		t.Stop()
		return true, out.Flush()
	}
}
