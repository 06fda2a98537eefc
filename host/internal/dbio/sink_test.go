package dbio

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/record"
)

func newSink(t testing.TB, cfg SinkConfig) *Sink {
	t.Helper()
	s, err := NewSink(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// write writes values as one batch and returns the dead letters' reasons.
func write(t *testing.T, s *Sink, values ...string) []string {
	t.Helper()
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{Value: []byte(v), Origin: record.Origin{Source: "test", Partition: -1, Offset: int64(i)}}
	}
	ack := engine.NewAck(func(err error) { t.Errorf("ack done(%v): the sink is synchronous", err) })
	dead, err := s.Write(recs, nil, ack)
	if err != nil {
		t.Fatal(err)
	}
	if ack.Pending() != 1 {
		t.Errorf("Write left %d pending on the ack, want 1 (the engine's own)", ack.Pending())
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, d := range dead {
		if d.Stage != s.Name() {
			t.Errorf("dead letter stage %q, want %q", d.Stage, s.Name())
		}
		reasons = append(reasons, d.Reason)
	}
	return reasons
}

// dump returns the table's rows, each as its columns' text joined by |
// (NULL as ∅), sorted.
func dump(t testing.TB, h *sql.DB, table, cols string) []string {
	t.Helper()
	rows, err := h.Query("SELECT " + cols + " FROM " + table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := len(strings.Split(cols, ","))
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, n)
		ptrs := make([]any, n)
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, n)
		for i, v := range vals {
			parts[i] = "∅"
			if v.Valid {
				parts[i] = v.String
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// cityAvg is the table of the user story's materialized view.
const cityAvg = `CREATE TABLE %s (city VARCHAR(64) NOT NULL, minute BIGINT NOT NULL, avg_temp DOUBLE PRECISION, readings BIGINT,
	PRIMARY KEY (city, minute))`

var cityAvgColumns = []Column{
	{"city", []string{"city"}},
	{"minute", []string{"window", "start"}},
	{"avg_temp", []string{"avg"}},
	{"readings", []string{"n"}},
}

func TestSinkUpsert(t *testing.T) {
	for _, tdb := range testDBs {
		t.Run(tdb.name, func(t *testing.T) {
			h := connect(t, tdb)
			tests := []struct {
				name    string
				batches [][]string
				want    []string
			}{
				{name: "a batch written twice gives the same rows",
					batches: [][]string{
						{`{"city":"Berlin","window":{"start":0},"avg":20.5,"n":2}`, `{"city":"Paris","window":{"start":0},"avg":18,"n":1}`},
						{`{"city":"Berlin","window":{"start":0},"avg":20.5,"n":2}`, `{"city":"Paris","window":{"start":0},"avg":18,"n":1}`},
					},
					want: []string{"Berlin|0|20.5|2", "Paris|0|18|1"}},
				{name: "a later batch replaces the row",
					batches: [][]string{
						{`{"city":"Berlin","window":{"start":0},"avg":20.5,"n":2}`},
						{`{"city":"Berlin","window":{"start":0},"avg":21.25,"n":4}`, `{"city":"Berlin","window":{"start":60000},"avg":3,"n":1}`},
					},
					want: []string{"Berlin|0|21.25|4", "Berlin|60000|3|1"}},
				{name: "duplicate keys in one batch: the last wins",
					batches: [][]string{{
						`{"city":"Berlin","window":{"start":0},"avg":1,"n":1}`,
						`{"city":"Paris","window":{"start":0},"avg":5,"n":1}`,
						`{"city":"Berlin","window":{"start":0},"avg":2,"n":2}`,
						`{"city":"Berlin","window":{"start":0.0},"avg":3,"n":3}`,
					}},
					want: []string{"Berlin|0|3|3", "Paris|0|5|1"}},
				{name: "null column",
					batches: [][]string{{`{"city":"Rome","window":{"start":0},"avg":null,"n":0}`}},
					want:    []string{"Rome|0|∅|0"}},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					table := newTable(t, h, cityAvg)
					s := newSink(t, SinkConfig{Name: "dash", DB: tdb.db, Table: table, Columns: cityAvgColumns, Key: []string{"city", "minute"}})
					for _, b := range tt.batches {
						if dead := write(t, s, b...); len(dead) > 0 {
							t.Fatalf("dead letters %q", dead)
						}
					}
					if got := dump(t, h, table, "city, minute, avg_temp, readings"); !slices.Equal(got, tt.want) {
						t.Errorf("rows:\n got %q\nwant %q", got, tt.want)
					}
				})
			}
		})
	}
}

// TestSinkLargeBatch writes more rows than one statement takes, with
// duplicate keys across statements.
func TestSinkLargeBatch(t *testing.T) {
	for _, tdb := range testDBs {
		t.Run(tdb.name, func(t *testing.T) {
			h := connect(t, tdb)
			table := newTable(t, h, cityAvg)
			s := newSink(t, SinkConfig{Name: "dash", DB: tdb.db, Table: table, Columns: cityAvgColumns, Key: []string{"city", "minute"}})
			var batch []string
			for i := range 2500 {
				batch = append(batch, fmt.Sprintf(`{"city":"c%d","window":{"start":0},"avg":%d,"n":%d}`, i%1800, i, i))
			}
			if dead := write(t, s, batch...); len(dead) > 0 {
				t.Fatalf("dead letters %q", dead)
			}
			var n, sum int64
			if err := h.QueryRow("SELECT COUNT(*), SUM(readings) FROM "+table).Scan(&n, &sum); err != nil {
				t.Fatal(err)
			}
			// c0..c699 were written twice, the second time with i+1800.
			want := int64(0)
			for i := range 1800 {
				if i < 700 {
					want += int64(i + 1800)
				} else {
					want += int64(i)
				}
			}
			if n != 1800 || sum != want {
				t.Errorf("%d rows summing to %d, want 1800 summing to %d", n, sum, want)
			}
		})
	}
}

func TestSinkInsert(t *testing.T) {
	for _, tdb := range testDBs {
		t.Run(tdb.name, func(t *testing.T) {
			h := connect(t, tdb)
			table := newTable(t, h, pick(tdb.db,
				"CREATE TABLE %s (s VARCHAR(64), i BIGINT, f DOUBLE, b BOOLEAN, j TEXT, n VARCHAR(8))",
				"CREATE TABLE %s (s VARCHAR(64), i BIGINT, f DOUBLE PRECISION, b BOOLEAN, j TEXT, n VARCHAR(8))"))
			cols := []Column{{"s", []string{"s"}}, {"i", []string{"i"}}, {"f", []string{"f"}}, {"b", []string{"b"}}, {"j", []string{"j"}}, {"n", []string{"n"}}}
			s := newSink(t, SinkConfig{Name: "all", DB: tdb.db, Table: table, Columns: cols})
			batch := []string{
				`{"s":"h\u00e9llo \"q\"","i":-9007199254740993,"f":0.1,"b":true,"j":{"a":[1,2]},"n":null}`,
				`{"s":"","i":0,"f":1e300,"b":false,"j":[ "x" ],"n":"y"}`,
			}
			write(t, s, batch...)
			write(t, s, batch[:1]...) // at least once: written again, a second row
			want := []string{
				`h\u00e9llo "q"|-9007199254740993|0.1|1|{"a":[1,2]}|∅`,
				`h\u00e9llo "q"|-9007199254740993|0.1|1|{"a":[1,2]}|∅`,
				`|0|1e+300|0|[ "x" ]|y`,
			}
			if tdb.db.Driver == Postgres {
				want = []string{
					`h\u00e9llo "q"|-9007199254740993|0.1|true|{"a":[1,2]}|∅`,
					`h\u00e9llo "q"|-9007199254740993|0.1|true|{"a":[1,2]}|∅`,
					`|0|1e+300|false|[ "x" ]|y`,
				}
			}
			for i := range want {
				want[i] = strings.ReplaceAll(want[i], `h\u00e9llo`, "héllo")
			}
			slices.Sort(want)
			if got := dump(t, h, table, "s, i, f, b, j, n"); !slices.Equal(got, want) {
				t.Errorf("rows:\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestSinkDeadLetters(t *testing.T) {
	for _, tdb := range testDBs {
		t.Run(tdb.name, func(t *testing.T) {
			h := connect(t, tdb)
			table := newTable(t, h, "CREATE TABLE %s (city VARCHAR(64) PRIMARY KEY, temp DOUBLE PRECISION)")
			s := newSink(t, SinkConfig{Name: "dash", DB: tdb.db, Table: table, Columns: []Column{
				{"city", []string{"d", "city"}}, {"temp", []string{"t"}},
			}, Key: []string{"city"}})
			dead := write(t, s,
				`{"d":{"city":"Berlin"},"t":20}`,
				`{"d":{},"t":1}`,
				`{"d":{"city":"Oslo"}}`,
				`[1,2]`,
				`{"d":{"city":"Paris"},"t":1e999}`,
				`{"d":`,
				`{"d":{"city":"Rome"},"t":25.5}`,
			)
			want := []string{
				`sink "dash": column city: field d.city not found`,
				`sink "dash": column temp: field t not found`,
				`sink "dash": value is not a JSON object`,
				`sink "dash": column temp: field t: number 1e999 is out of range`,
				`sink "dash": value is not JSON: wjson: unexpected end of JSON input at byte offset 5`,
			}
			if !slices.Equal(dead, want) {
				t.Errorf("dead letters:\n got %q\nwant %q", dead, want)
			}
			if got, want := dump(t, h, table, "city, temp"), []string{"Berlin|20", "Rome|25.5"}; !slices.Equal(got, want) {
				t.Errorf("rows %q, want %q", got, want)
			}
			// A batch of only bad records writes nothing and is no error.
			if dead := write(t, s, `1`); len(dead) != 1 {
				t.Errorf("dead letters %q", dead)
			}
		})
	}
}

func TestNewSinkErrors(t *testing.T) {
	for _, tdb := range testDBs {
		t.Run(tdb.name, func(t *testing.T) {
			h := connect(t, tdb)
			table := newTable(t, h, "CREATE TABLE %s (city VARCHAR(64) PRIMARY KEY, minute BIGINT, temp DOUBLE PRECISION)")
			cols := []Column{{"city", []string{"city"}}, {"temp", []string{"t"}}}
			tests := []struct {
				name string
				cfg  SinkConfig
				want string
			}{
				{"missing table", SinkConfig{Table: table + "_none", Columns: cols}, "table " + table + "_none: "},
				{"missing column", SinkConfig{Table: table, Columns: append(slices.Clone(cols), Column{"town", []string{"town"}})}, "town"},
				{"key not unique", SinkConfig{Table: table, Columns: append(slices.Clone(cols), Column{"minute", []string{"m"}}), Key: []string{"city", "minute"}}, "upsert key (city, minute)"},
				{"key not a column", SinkConfig{Table: table, Columns: cols, Key: []string{"minute"}}, "key column minute is not one of the columns"},
				{"column twice", SinkConfig{Table: table, Columns: append(slices.Clone(cols), cols[0])}, "column city is given twice"},
				{"column without field", SinkConfig{Table: table, Columns: []Column{{"city", nil}}}, "column city: no field"},
				{"no columns", SinkConfig{Table: table}, "no columns"},
				{"no table", SinkConfig{Columns: cols}, "no table"},
				{"unknown driver", SinkConfig{DB: DB{"mssql", "x"}, Table: table, Columns: cols}, `unknown database driver "mssql"`},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					cfg := tt.cfg
					cfg.Name = "dash"
					if cfg.DB == (DB{}) {
						cfg.DB = tdb.db
					}
					s, err := NewSink(context.Background(), cfg)
					if err == nil {
						s.Close()
						t.Fatal("NewSink succeeded")
					}
					if !strings.HasPrefix(err.Error(), `sink "dash": `) || !strings.Contains(err.Error(), tt.want) {
						t.Errorf("error %q, want it to start with sink \"dash\" and contain %q", err, tt.want)
					}
				})
			}
		})
	}
}

// TestSinkDatabaseError checks that a failing transaction is retried, then
// reported with what the runtime does about it, and that none of the batch
// is written.
func TestSinkDatabaseError(t *testing.T) {
	for _, tdb := range testDBs {
		t.Run(tdb.name, func(t *testing.T) {
			h := connect(t, tdb)
			table := newTable(t, h, "CREATE TABLE %s (city VARCHAR(4) PRIMARY KEY, temp DOUBLE PRECISION)")
			if tdb.db.Driver == MySQL {
				mustExec(t, h, "ALTER TABLE "+table+" ADD CONSTRAINT "+table+"_short CHECK (CHAR_LENGTH(city) <= 4)")
			}
			s := newSink(t, SinkConfig{Name: "dash", DB: tdb.db, Table: table, Columns: []Column{{"city", []string{"c"}}, {"temp", []string{"t"}}}, Key: []string{"city"}})
			_, err := s.Write([]record.Record{
				{Value: []byte(`{"c":"Rome","t":1}`)},
				{Value: []byte(`{"c":"Berlin","t":2}`)}, // too long for the column
			}, nil, engine.NewAck(func(error) {}))
			if err == nil {
				t.Fatal("Write succeeded")
			}
			for _, w := range []string{`sink "dash": upserting 2 rows into table ` + table + ` failed after 3 tries: `, "the pipeline stops, and its input not yet acknowledged is read again on restart"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if got := dump(t, h, table, "city"); len(got) != 0 {
				t.Errorf("rows %q written by a failed transaction", got)
			}
		})
	}
}

func TestUpsertClause(t *testing.T) {
	tests := []struct {
		name, driver string
		keyIdx       []int
		want         string
	}{
		{"mysql", MySQL, []int{0}, " ON DUPLICATE KEY UPDATE `b` = VALUES(`b`), `c` = VALUES(`c`)"},
		{"mysql all key", MySQL, []int{0, 1, 2}, " ON DUPLICATE KEY UPDATE `a` = `a`"},
		{"postgres", Postgres, []int{0, 2}, ` ON CONFLICT ("a", "c") DO UPDATE SET "b" = EXCLUDED."b"`},
		{"postgres all key", Postgres, []int{0, 1, 2}, ` ON CONFLICT ("a", "b", "c") DO NOTHING`},
		{"no key", Postgres, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			names := []string{quoteIdent(tt.driver, "a"), quoteIdent(tt.driver, "b"), quoteIdent(tt.driver, "c")}
			if got := upsertClause(tt.driver, names, tt.keyIdx); got != tt.want {
				t.Errorf("got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestDedup(t *testing.T) {
	s := &Sink{cfg: SinkConfig{Columns: make([]Column, 2)}, keyIdx: []int{0}, last: make(map[string]int)}
	tests := []struct {
		name string
		in   []any
		want []any
	}{
		{"no duplicates", []any{"a", 1, "b", 2}, []any{"a", 1, "b", 2}},
		{"last wins at the first place", []any{"a", 1, "b", 2, "a", 3, "c", 4, "b", 5}, []any{"a", 3, "b", 5, "c", 4}},
		{"integral float is the integer", []any{int64(1), "x", 1.0, "y", 1.5, "z"}, []any{1.0, "y", 1.5, "z"}},
		{"null keys are all kept", []any{nil, 1, nil, 2, "a", 3, "a", 4}, []any{nil, 1, nil, 2, "a", 4}},
		{"types are told apart", []any{"1", 1, int64(1), 2, true, 3, "b1", 4}, []any{"1", 1, int64(1), 2, true, 3, "b1", 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.dedup(slices.Clone(tt.in))
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
