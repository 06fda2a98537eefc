package dbio

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/record"
)

// The benchmarks run against the same local databases as the tests:
//
//	go test -run='^$' -bench='Lookup|SinkWrite' -count=6 ./host/internal/dbio/
//
// Each reports ns/record (the benchmark's time over the records it
// processed) besides the usual ns/op, which is per batch of benchBatch
// records. Each first checks one batch's output, and every timed batch fails
// the benchmark on an error or a dead letter, so a broken path cannot pass
// for a fast one.

const (
	benchBatch = 512    // records per Process or Write
	benchRows  = 10_000 // rows of the lookup table
	benchSets  = 64     // distinct pre-built batches cycled through
)

func benchDevice(i int) string { return fmt.Sprintf("dev-%05d", i) }
func benchCity(i int) string   { return "city-" + strconv.Itoa(i%977) }
func benchFloor(i int) int     { return i % 50 }

// benchLookupTable creates the lookup table, benchRows rows of
// (id, city, floor), and returns its name.
func benchLookupTable(b *testing.B, tdb testDB) string {
	b.Helper()
	h := connect(b, tdb)
	table := newTable(b, h, "CREATE TABLE %s (id VARCHAR(32) PRIMARY KEY, city VARCHAR(64) NOT NULL, floor INTEGER NOT NULL)")
	for start := 0; start < benchRows; start += 1000 {
		var q strings.Builder
		q.WriteString("INSERT INTO " + table + " (id, city, floor) VALUES ")
		for i := start; i < min(start+1000, benchRows); i++ {
			if i > start {
				q.WriteByte(',')
			}
			fmt.Fprintf(&q, "('%s','%s',%d)", benchDevice(i), benchCity(i), benchFloor(i))
		}
		mustExec(b, h, q.String())
	}
	var n int
	if err := h.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil || n != benchRows {
		b.Fatalf("lookup table has %d rows (%v), want %d", n, err, benchRows)
	}
	return table
}

// benchReading is a record value of about 100 bytes keyed by device i.
func benchReading(i, seq int) string {
	return fmt.Sprintf(`{"device_id":"%s","ts":%d,"temp":%d.5,"humidity":%d,"seq":%d}`,
		benchDevice(i), 1_700_000_000_000+int64(seq), 15+seq%20, 30+seq%50, seq)
}

// benchLookupBatches returns benchSets batches of benchBatch readings with
// devices drawn uniformly from the table (about 499 distinct per batch),
// and the device of each record.
func benchLookupBatches() ([][]record.Record, [][]int) {
	rng := rand.New(rand.NewPCG(1, 2))
	batches := make([][]record.Record, benchSets)
	devs := make([][]int, benchSets)
	seq := 0
	for s := range batches {
		batches[s] = make([]record.Record, benchBatch)
		devs[s] = make([]int, benchBatch)
		for i := range batches[s] {
			d := rng.IntN(benchRows)
			devs[s][i] = d
			batches[s][i] = record.Record{Value: []byte(benchReading(d, seq)),
				Origin: record.Origin{Source: "bench", Partition: -1, Offset: int64(seq)}}
			seq++
		}
	}
	return batches, devs
}

// processBatch runs one batch through op, failing on an error, a dead
// letter or a dropped record.
func processBatch(b *testing.B, op *lookup, out *record.Output, in []record.Record) {
	out.Reset()
	if err := op.Process(context.Background(), in, out); err != nil {
		b.Fatal(err)
	}
	if len(out.Dead) > 0 || len(out.Records) != len(in) {
		b.Fatalf("%d records in, %d out, %d dead letters (first: %+v)", len(in), len(out.Records), len(out.Dead), out.Dead)
	}
}

func BenchmarkLookup(b *testing.B) {
	batches, devs := benchLookupBatches()
	distinct := 0
	for _, d := range devs {
		distinct += len(slices.Compact(slices.Sorted(slices.Values(d))))
	}
	for _, tdb := range testDBs {
		b.Run(tdb.db.Driver, func(b *testing.B) {
			table := benchLookupTable(b, tdb)
			query := "SELECT city, floor FROM " + table + " WHERE id = ?"
			for _, c := range []struct {
				name string
				ttl  time.Duration
			}{
				{"cache_hit", time.Hour},
				{"no_cache", 0},
			} {
				b.Run(c.name, func(b *testing.B) {
					op := newLookup(b, LookupConfig{Name: "enrich", DB: tdb.db, Query: query,
						KeyPath: []string{"device_id"}, CacheTTL: c.ttl, CacheSize: 2 * benchRows})
					var out record.Output

					// Check one batch's enriched values.
					processBatch(b, op, &out, batches[0])
					for i, r := range out.Records {
						d := devs[0][i]
						want := benchReading(d, i)
						want = want[:len(want)-1] + `,"city":"` + benchCity(d) + `","floor":` + strconv.Itoa(benchFloor(d)) + `}`
						if string(r.Value) != want {
							b.Fatalf("record %d enriched as\n %s\nwant\n %s", i, r.Value, want)
						}
					}

					if op.cache != nil {
						// Warm the cache with every key, so that every timed
						// lookup hits.
						var warm []record.Record
						for d := range benchRows {
							warm = append(warm, record.Record{Value: []byte(benchReading(d, d))})
							if len(warm) == benchBatch || d == benchRows-1 {
								processBatch(b, op, &out, warm)
								warm = warm[:0]
							}
						}
						if n := op.cache.len(); n != benchRows {
							b.Fatalf("cache holds %d keys after warming, want %d", n, benchRows)
						}
					}

					b.ReportAllocs()
					q0, n := op.queries.Load(), 0
					for b.Loop() {
						processBatch(b, op, &out, batches[n%benchSets])
						n++
					}
					queries := int(op.queries.Load() - q0)
					if op.cache != nil && queries != 0 {
						b.Fatalf("%d queries with a warm cache, want 0", queries)
					}
					if op.cache == nil && n >= benchSets && queries < n/benchSets*distinct {
						b.Fatalf("%d queries for %d batches, want at least %d (one per distinct key)", queries, n, n/benchSets*distinct)
					}
					records := float64(n * benchBatch)
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/records, "ns/record")
					b.ReportMetric(float64(queries)/records, "queries/record")
				})
			}
		})
	}
}

// benchAggregate is a window aggregate record for the cityAvg table: city
// c, a fixed window, and values that change with version v.
func benchAggregate(c, v int) string {
	return fmt.Sprintf(`{"city":"city-%04d","window":{"start":%d,"end":%d},"avg":%d.5,"n":%d,"v":%d}`,
		c, 1_700_000_000_000, 1_700_000_060_000, 10+(c+v)%30, 1+v, v)
}

// benchAggregateRow is the row benchAggregate(c, v) becomes, as dump gives
// it.
func benchAggregateRow(c, v int) string {
	return fmt.Sprintf("city-%04d|%d|%d.5|%d", c, 1_700_000_000_000, 10+(c+v)%30, 1+v)
}

func BenchmarkSinkWrite(b *testing.B) {
	// benchSets versions of the same benchBatch keys: an upsert of a batch
	// changes every row the previous batch wrote.
	batches := make([][]record.Record, benchSets)
	for v := range batches {
		batches[v] = make([]record.Record, benchBatch)
		for c := range batches[v] {
			batches[v][c] = record.Record{Value: []byte(benchAggregate(c, v)),
				Origin: record.Origin{Source: "bench", Partition: -1, Offset: int64(v*benchBatch + c)}}
		}
	}
	// truncateEvery is how many plain-insert batches are written before the
	// table is emptied, outside the timed region (about 100k rows).
	const truncateEvery = 200
	for _, tdb := range testDBs {
		b.Run(tdb.db.Driver, func(b *testing.B) {
			h := connect(b, tdb)
			for _, c := range []struct {
				name string
				ddl  string
				key  []string
			}{
				{"upsert", cityAvg, []string{"city", "minute"}},
				{"insert", `CREATE TABLE %s (city VARCHAR(64) NOT NULL, minute BIGINT NOT NULL, avg_temp DOUBLE PRECISION, readings BIGINT)`, nil},
			} {
				b.Run(c.name, func(b *testing.B) {
					table := newTable(b, h, c.ddl)
					s := newSink(b, SinkConfig{Name: "out", DB: tdb.db, Table: table, Columns: cityAvgColumns, Key: c.key})
					ack := engine.NewAck(func(error) {})
					var dead []record.DeadLetter
					writeBatch := func(recs []record.Record) {
						var err error
						dead, err = s.Write(recs, dead[:0], ack)
						if err != nil {
							b.Fatal(err)
						}
						if len(dead) > 0 {
							b.Fatalf("%d dead letters (first: %s)", len(dead), dead[0].Reason)
						}
					}

					// Check the rows of one batch.
					writeBatch(batches[0])
					want := make([]string, benchBatch)
					for i := range want {
						want[i] = benchAggregateRow(i, 0)
					}
					slices.Sort(want)
					if got := dump(b, h, table, "city, minute, avg_temp, readings"); !slices.Equal(got, want) {
						b.Fatalf("the table after one batch has %d rows, want %d; first %q, want %q", len(got), len(want), got[:min(3, len(got))], want[:3])
					}
					if c.key == nil {
						mustExec(b, h, "TRUNCATE TABLE "+table)
					}

					b.ReportAllocs()
					n := 0
					for b.Loop() {
						if c.key == nil && n > 0 && n%truncateEvery == 0 {
							b.StopTimer()
							mustExec(b, h, "TRUNCATE TABLE "+table)
							b.StartTimer()
						}
						writeBatch(batches[(n+1)%benchSets])
						n++
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*benchBatch), "ns/record")

					// Upserts left one row per key, as the last batch wrote it.
					var rows int
					if err := h.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&rows); err != nil {
						b.Fatal(err)
					}
					wantRows := benchBatch
					if c.key == nil {
						wantRows = (n - (n-1)/truncateEvery*truncateEvery) * benchBatch
					}
					if rows != wantRows {
						b.Fatalf("%d rows after %d batches, want %d", rows, n, wantRows)
					}
				})
			}
		})
	}
}
