package dbio

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/record"
)

// devices creates the devices table of the user story, with rows d1 →
// Berlin and d2 → Paris.
func devices(t *testing.T, h *sql.DB, d DB) string {
	t.Helper()
	table := newTable(t, h, "CREATE TABLE %s (id VARCHAR(32) PRIMARY KEY, city VARCHAR(64))")
	mustExec(t, h, ph(d, "INSERT INTO "+table+" (id, city) VALUES (?, ?), (?, ?)"), "d1", "Berlin", "d2", "Paris")
	return table
}

func newLookup(t testing.TB, cfg LookupConfig) *lookup {
	t.Helper()
	op, err := NewLookup(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := op.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return op.(*lookup)
}

// run processes values as one batch and returns the output values and the
// dead letters' reasons.
func run(t *testing.T, op engine.Operator, values ...string) (outs, reasons []string) {
	t.Helper()
	in := make([]record.Record, len(values))
	for i, v := range values {
		in[i] = record.Record{Value: []byte(v), Origin: record.Origin{Source: "test", Partition: -1, Offset: int64(i)}}
	}
	var out record.Output
	if err := op.Process(context.Background(), in, &out); err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Records {
		outs = append(outs, string(r.Value))
	}
	for _, d := range out.Dead {
		if d.Stage != op.Name() {
			t.Errorf("dead letter stage %q, want %q", d.Stage, op.Name())
		}
		reasons = append(reasons, d.Reason)
	}
	return outs, reasons
}

func TestLookupJoin(t *testing.T) {
	for _, tdb := range testDBs {
		t.Run(tdb.name, func(t *testing.T) {
			h := connect(t, tdb)
			table := devices(t, h, tdb.db)
			query := "SELECT city FROM " + table + " WHERE id = ?"
			tests := []struct {
				name    string
				left    bool
				keyPath []string
				in      []string
				want    []string
				dead    []string
			}{
				{name: "inner hit and miss keep order",
					in:   []string{`{"device_id":"d2","t":1}`, `{"device_id":"d9","t":2}`, `{"device_id":"d1","t":3}`},
					want: []string{`{"device_id":"d2","t":1,"city":"Paris"}`, `{"device_id":"d1","t":3,"city":"Berlin"}`}},
				{name: "left miss adds null", left: true,
					in:   []string{`{"device_id":"d9"}`, `{"device_id":"d1"}`},
					want: []string{`{"device_id":"d9","city":null}`, `{"device_id":"d1","city":"Berlin"}`}},
				{name: "inner null key dropped",
					in: []string{`{"device_id":null}`}},
				{name: "left null key adds null", left: true,
					in:   []string{`{"device_id":null}`},
					want: []string{`{"device_id":null,"city":null}`}},
				{name: "field replaced where it stands",
					in:   []string{`{"city":"old","device_id":"d1","t":1}`},
					want: []string{`{"city":"Berlin","device_id":"d1","t":1}`}},
				{name: "repeated field replaced once", left: true,
					in:   []string{`{"city":1,"device_id":"d9","city":2}`},
					want: []string{`{"city":null,"device_id":"d9"}`}},
				{name: "escaped field name replaced",
					in:   []string{`{"c\u0069ty":"old","device_id":"d2"}`},
					want: []string{`{"c\u0069ty":"Paris","device_id":"d2"}`}},
				{name: "nested key path", keyPath: []string{"d", "id"},
					in:   []string{` {"d": {"id": "d1"}, "v": [1, 2]} `},
					want: []string{`{"d":{"id": "d1"},"v":[1, 2],"city":"Berlin"}`}},
				{name: "empty object", left: true, keyPath: []string{"d", "id"},
					in: []string{`{}`}, dead: []string{`lookup "city": field d.id not found`}},
				{name: "bad records are dead letters",
					in:   []string{`not json`, `[1]`, `"d1"`, `{"id":"d1"}`, `{"device_id":{"a":1}}`, `{"device_id":[1]}`, `{"device_id":1e999}`, `{"device_id":"d1"}`},
					want: []string{`{"device_id":"d1","city":"Berlin"}`},
					dead: []string{
						`lookup "city": value is not JSON: wjson: invalid character 'o' in literal null (expecting 'u') at byte offset 1`,
						`lookup "city": value is not a JSON object`,
						`lookup "city": value is not a JSON object`,
						`lookup "city": field device_id not found`,
						`lookup "city": field device_id is an object, not a string, number or bool`,
						`lookup "city": field device_id is an array, not a string, number or bool`,
						`lookup "city": field device_id: number 1e999 is out of range`,
					}},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					keyPath := tt.keyPath
					if keyPath == nil {
						keyPath = []string{"device_id"}
					}
					op := newLookup(t, LookupConfig{Name: "city", DB: tdb.db, Query: query, KeyPath: keyPath, Left: tt.left})
					got, dead := run(t, op, tt.in...)
					if !slices.Equal(got, tt.want) {
						t.Errorf("records:\n got %q\nwant %q", got, tt.want)
					}
					if len(dead) > 0 && strings.HasPrefix(tt.dead[0], `lookup "city": value is not JSON`) {
						// The syntax error's wording is wjson's; check the prefix.
						if strings.HasPrefix(dead[0], `lookup "city": value is not JSON: `) {
							dead[0] = tt.dead[0]
						}
					}
					if !slices.Equal(dead, tt.dead) {
						t.Errorf("dead letters:\n got %q\nwant %q", dead, tt.dead)
					}
				})
			}
		})
	}
}

// TestLookupKeepsRecord checks that an enriched record keeps everything but
// its value, and that the value is a copy in the output's arena.
func TestLookupKeepsRecord(t *testing.T) {
	tdb := testDBs[0]
	h := connect(t, tdb)
	table := devices(t, h, tdb.db)
	op := newLookup(t, LookupConfig{Name: "city", DB: tdb.db, Query: "SELECT city FROM " + table + " WHERE id = ?", KeyPath: []string{"device_id"}})
	in := []record.Record{{
		Key:       []byte("k"),
		Value:     []byte(`{"device_id":"d1"}`),
		Timestamp: 1234,
		Headers:   []record.Header{{Key: "h", Value: []byte("v")}},
		Origin:    record.Origin{Source: "kafka", Topic: "readings", Partition: 3, Offset: 42},
	}}
	var out record.Output
	if err := op.Process(context.Background(), in, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Records) != 1 {
		t.Fatalf("got %d records, want 1", len(out.Records))
	}
	r := out.Records[0]
	if string(r.Key) != "k" || r.Timestamp != 1234 || len(r.Headers) != 1 || r.Headers[0].Key != "h" || r.Origin != in[0].Origin {
		t.Errorf("record changed beyond its value: %+v", r)
	}
	if string(r.Value) != `{"device_id":"d1","city":"Berlin"}` {
		t.Errorf("value %s", r.Value)
	}
}

func TestLookupColumnTypes(t *testing.T) {
	tests := []struct {
		name        string
		tdb         testDB
		ddl, insert string
		want        string
	}{
		{
			name: "mariadb",
			tdb:  testDBs[0],
			ddl: `CREATE TABLE %s (id BIGINT PRIMARY KEY, s VARCHAR(32), q VARCHAR(32), i BIGINT, u BIGINT UNSIGNED, f DOUBLE, g DOUBLE, r FLOAT,
				d DECIMAL(10,2), b BOOLEAN, ts DATETIME(3), dt DATE, bin VARBINARY(8), n VARCHAR(8))`,
			insert: `INSERT INTO %s VALUES (7, 'héllo', 'say "hi"', -42, 18446744073709551615, 0.1, 1e-7, 1.5,
				12.50, TRUE, '2024-05-06 07:08:09.123', '2024-05-06', 'raw', NULL)`,
			want: `{"id":7,"s":"héllo","q":"say \"hi\"","i":-42,"u":18446744073709551615,"f":0.1,"g":1e-07,"r":1.5,` +
				`"d":12.50,"b":1,"ts":"2024-05-06T07:08:09.123Z","dt":"2024-05-06T00:00:00Z","bin":"raw","n":null}`,
		},
		{
			name: "postgres",
			tdb:  testDBs[1],
			ddl: `CREATE TABLE %s (id BIGINT PRIMARY KEY, s VARCHAR(32), q TEXT, i INTEGER, sm SMALLINT, f DOUBLE PRECISION, g DOUBLE PRECISION,
				nan DOUBLE PRECISION, r REAL, d NUMERIC(10,2), dn NUMERIC, b BOOLEAN, ts TIMESTAMP, tz TIMESTAMPTZ, j JSONB, bin BYTEA, n TEXT)`,
			insert: `INSERT INTO %s VALUES (7, 'héllo', 'say "hi"', -42, 3, 0.1, 1e-7, 'NaN', 1.5, 12.50, 'NaN', TRUE,
				'2024-05-06 07:08:09.123', '2024-05-06 07:08:09+02', '{"a": [1, "x"]}', 'raw', NULL)`,
			want: `{"id":7,"s":"héllo","q":"say \"hi\"","i":-42,"sm":3,"f":0.1,"g":1e-07,"nan":null,"r":1.5,` +
				`"d":12.50,"dn":null,"b":true,"ts":"2024-05-06T07:08:09.123Z","tz":"2024-05-06T05:08:09Z","j":{"a": [1, "x"]},"bin":"raw","n":null}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := connect(t, tt.tdb)
			table := newTable(t, h, tt.ddl)
			mustExec(t, h, strings.ReplaceAll(tt.insert, "%s", table))
			op := newLookup(t, LookupConfig{Name: "types", DB: tt.tdb.db, Query: "SELECT * FROM " + table + " WHERE id = ?", KeyPath: []string{"id"}})
			got, dead := run(t, op, `{"id":7}`)
			if len(dead) > 0 || len(got) != 1 {
				t.Fatalf("got %q, dead letters %q", got, dead)
			}
			if got[0] != tt.want {
				t.Errorf("enriched value:\n got %s\nwant %s", got[0], tt.want)
			}
		})
	}
}

// fakeClock is a processing-time clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestLookupCache(t *testing.T) {
	for _, tdb := range testDBs {
		t.Run(tdb.name, func(t *testing.T) {
			h := connect(t, tdb)
			type step struct {
				update  [2]string     // set this device's city first, if any
				advance time.Duration // move the clock first
				in      []string      // device ids
				want    []string      // cities, "-" for none (a left join's null)
				queries int           // queries the batch makes
			}
			tests := []struct {
				name  string
				ttl   time.Duration
				size  int
				steps []step
			}{
				{name: "no cache queries each batch, each key once", steps: []step{
					{in: []string{"d1", "d1", "d2", "d1"}, want: []string{"Berlin", "Berlin", "Paris", "Berlin"}, queries: 2},
					{update: [2]string{"d1", "Munich"}, in: []string{"d1"}, want: []string{"Munich"}, queries: 1},
				}},
				{name: "ttl serves the old row, then the new", ttl: time.Minute, steps: []step{
					{in: []string{"d1", "d2", "d1"}, want: []string{"Berlin", "Paris", "Berlin"}, queries: 2},
					{update: [2]string{"d1", "Munich"}, advance: 59 * time.Second, in: []string{"d1", "d2"}, want: []string{"Berlin", "Paris"}, queries: 0},
					{advance: time.Second, in: []string{"d1"}, want: []string{"Munich"}, queries: 1},
					{in: []string{"d1", "d2"}, want: []string{"Munich", "Paris"}, queries: 1},
				}},
				{name: "misses are cached too", ttl: time.Minute, steps: []step{
					{in: []string{"d3"}, want: []string{"-"}, queries: 1},
					{update: [2]string{"d3", "Rome"}, in: []string{"d3"}, want: []string{"-"}, queries: 0},
					{advance: time.Hour, in: []string{"d3"}, want: []string{"Rome"}, queries: 1},
				}},
				{name: "size bound evicts least recently used", ttl: time.Hour, size: 2, steps: []step{
					{in: []string{"d1", "d2"}, want: []string{"Berlin", "Paris"}, queries: 2},
					{in: []string{"d1"}, want: []string{"Berlin"}, queries: 0}, // d1 is now the most recent
					{in: []string{"d3"}, want: []string{"-"}, queries: 1},      // evicts d2
					{in: []string{"d1", "d3"}, want: []string{"Berlin", "-"}, queries: 0},
					{in: []string{"d2"}, want: []string{"Paris"}, queries: 1},
				}},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					table := devices(t, h, tdb.db)
					op := newLookup(t, LookupConfig{Name: "city", DB: tdb.db, Query: "SELECT city FROM " + table + " WHERE id = ?",
						KeyPath: []string{"id"}, Left: true, CacheTTL: tt.ttl, CacheSize: tt.size})
					clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
					op.now = clock.now
					for i, s := range tt.steps {
						if s.update[0] != "" {
							mustExec(t, h, ph(tdb.db, "DELETE FROM "+table+" WHERE id = ?"), s.update[0])
							mustExec(t, h, ph(tdb.db, "INSERT INTO "+table+" (id, city) VALUES (?, ?)"), s.update[0], s.update[1])
						}
						clock.t = clock.t.Add(s.advance)
						var in, want []string
						for j, id := range s.in {
							in = append(in, `{"id":"`+id+`"}`)
							city := `"` + s.want[j] + `"`
							if s.want[j] == "-" {
								city = "null"
							}
							want = append(want, `{"id":"`+id+`","city":`+city+`}`)
						}
						before := op.queries.Load()
						got, dead := run(t, op, in...)
						if len(dead) > 0 {
							t.Fatalf("step %d: dead letters %q", i, dead)
						}
						if !slices.Equal(got, want) {
							t.Errorf("step %d:\n got %q\nwant %q", i, got, want)
						}
						if n := int(op.queries.Load() - before); n != s.queries {
							t.Errorf("step %d: %d queries, want %d", i, n, s.queries)
						}
					}
				})
			}
		})
	}
}

// TestLookupPlaceholderInQuotes checks that a ? in a string literal is not
// taken for the parameter, by either database.
func TestLookupPlaceholderInQuotes(t *testing.T) {
	for _, tdb := range testDBs {
		t.Run(tdb.name, func(t *testing.T) {
			h := connect(t, tdb)
			table := devices(t, h, tdb.db)
			query := "SELECT city, 'why?' AS q, '' || '?''?' AS q2 /* ? */ FROM " + table + " WHERE id = ? -- is it?\n"
			if tdb.db.Driver == MySQL {
				query = "SELECT city, 'why?' AS q, CONCAT('', '?''?') AS q2 /* ? */ FROM " + table + " WHERE id = ? -- is it?\n"
			}
			op := newLookup(t, LookupConfig{Name: "q", DB: tdb.db, Query: query, KeyPath: []string{"id"}})
			if tdb.db.Driver == Postgres && !strings.Contains(op.query, "id = $1 --") {
				t.Errorf("query sent as %q", op.query)
			}
			got, dead := run(t, op, `{"id":"d2"}`)
			want := []string{`{"id":"d2","city":"Paris","q":"why?","q2":"?'?"}`}
			if !slices.Equal(got, want) || len(dead) > 0 {
				t.Errorf("got %q (dead %q), want %q", got, dead, want)
			}
		})
	}
}

// TestLookupKeyTypes checks the parameter types made from JSON keys, and
// that a key the database refuses (PostgreSQL's typed parameters) is a dead
// letter, not an error.
func TestLookupKeyTypes(t *testing.T) {
	for _, tdb := range testDBs {
		t.Run(tdb.name, func(t *testing.T) {
			h := connect(t, tdb)
			table := newTable(t, h, "CREATE TABLE %s (n BIGINT PRIMARY KEY, label VARCHAR(16), flag BOOLEAN)")
			mustExec(t, h, ph(tdb.db, "INSERT INTO "+table+" VALUES (?, ?, ?), (?, ?, ?)"), 7, "seven", true, 8, "eight", false)
			ints := newLookup(t, LookupConfig{Name: "n", DB: tdb.db, Query: "SELECT label FROM " + table + " WHERE n = ?", KeyPath: []string{"k"}})
			got, dead := run(t, ints, `{"k":7}`, `{"k":8.0}`, `{"k":9}`, `{"k":"abc"}`, `{"k":7}`)
			want := []string{`{"k":7,"label":"seven"}`, `{"k":8.0,"label":"eight"}`, `{"k":7,"label":"seven"}`}
			if !slices.Equal(got, want) {
				t.Errorf("integer keys:\n got %q\nwant %q", got, want)
			}
			wantDead := pick(tdb.db, 0, 1) // MariaDB compares "abc" with a number as 0: no row
			if len(dead) != wantDead {
				t.Errorf("dead letters %q, want %d", dead, wantDead)
			}
			if wantDead == 1 && !strings.HasPrefix(dead[0], `lookup "n": field k: the query refuses "abc" as its parameter: `) {
				t.Errorf("dead letter %q", dead[0])
			}

			bools := newLookup(t, LookupConfig{Name: "b", DB: tdb.db, Query: "SELECT label FROM " + table + " WHERE flag = ?", KeyPath: []string{"k"}})
			got, dead = run(t, bools, `{"k":false}`, `{"k":true}`)
			want = []string{`{"k":false,"label":"eight"}`, `{"k":true,"label":"seven"}`}
			if !slices.Equal(got, want) || len(dead) > 0 {
				t.Errorf("bool keys:\n got %q (dead %q)\nwant %q", got, dead, want)
			}

			strs := newLookup(t, LookupConfig{Name: "s", DB: tdb.db, Query: "SELECT n FROM " + table + " WHERE label = ?", KeyPath: []string{"k"}})
			got, dead = run(t, strs, `{"k":"s\u0065ven"}`, `{"k":1}`)
			want = []string{`{"k":"s\u0065ven","n":7}`}
			if !slices.Equal(got, want) {
				t.Errorf("string keys:\n got %q\nwant %q", got, want)
			}
			if len(dead) != pick(tdb.db, 0, 1) {
				t.Errorf("dead letters %q", dead)
			}
		})
	}
}

func TestNewLookupErrors(t *testing.T) {
	for _, tdb := range testDBs {
		t.Run(tdb.name, func(t *testing.T) {
			h := connect(t, tdb)
			table := devices(t, h, tdb.db)
			tests := []struct {
				name string
				cfg  LookupConfig
				want string
			}{
				{"no parameter", LookupConfig{Query: "SELECT city FROM " + table}, `has 0 parameters (?); a lookup query takes exactly one`},
				{"two parameters", LookupConfig{Query: "SELECT city FROM " + table + " WHERE id = ? OR id = ?"}, `has 2 parameters`},
				{"parameter only in quotes", LookupConfig{Query: "SELECT city FROM " + table + " WHERE id = '?'"}, `has 0 parameters`},
				{"unknown table", LookupConfig{Query: "SELECT city FROM " + table + "_none WHERE id = ?"}, table + "_none"},
				{"unknown column", LookupConfig{Query: "SELECT town FROM " + table + " WHERE id = ?"}, "town"},
				{"two columns of one name", LookupConfig{Query: "SELECT city, city FROM " + table + " WHERE id = ?"}, "two columns named city; give one an alias"},
				{"not a query", LookupConfig{Query: "UPDATE " + table + " SET city = 'x' WHERE id = ?"}, pick(tdb.db, "READ ONLY", "read-only")},
				{"no key field", LookupConfig{Query: "SELECT city FROM " + table + " WHERE id = ?", KeyPath: []string{}}, "no key field"},
				{"negative ttl", LookupConfig{Query: "SELECT city FROM " + table + " WHERE id = ?", CacheTTL: -1}, "negative cache TTL"},
				{"unknown driver", LookupConfig{DB: DB{"oracle", "x"}, Query: "SELECT 1 WHERE ? = 1"}, `unknown database driver "oracle"`},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					cfg := tt.cfg
					cfg.Name = "city"
					if cfg.DB == (DB{}) {
						cfg.DB = tdb.db
					}
					if cfg.KeyPath == nil {
						cfg.KeyPath = []string{"id"}
					}
					op, err := NewLookup(context.Background(), cfg)
					if err == nil {
						op.Close(context.Background())
						t.Fatal("NewLookup succeeded")
					}
					if !strings.HasPrefix(err.Error(), `lookup "city": `) || !strings.Contains(err.Error(), tt.want) {
						t.Errorf("error %q, want it to start with lookup \"city\" and contain %q", err, tt.want)
					}
				})
			}
			// The UPDATE was refused, not run and rolled back.
			var n int
			if err := h.QueryRow("SELECT COUNT(*) FROM " + table + " WHERE city = 'x'").Scan(&n); err != nil || n != 0 {
				t.Errorf("the UPDATE changed %d rows (%v)", n, err)
			}
		})
	}
}

// TestLookupDatabaseError checks that a database error is retried and then
// returned, naming the operator and the query.
func TestLookupDatabaseError(t *testing.T) {
	for _, tdb := range testDBs {
		t.Run(tdb.name, func(t *testing.T) {
			h := connect(t, tdb)
			table := devices(t, h, tdb.db)
			op := newLookup(t, LookupConfig{Name: "city", DB: tdb.db, Query: "SELECT city FROM " + table + " WHERE id = ?", KeyPath: []string{"id"}})
			mustExec(t, h, "DROP TABLE "+table)
			var out record.Output
			start := time.Now()
			err := op.Process(context.Background(), []record.Record{{Value: []byte(`{"id":"d1"}`)}}, &out)
			if err == nil {
				t.Fatal("Process succeeded on a dropped table")
			}
			for _, w := range []string{`lookup "city": query "SELECT city FROM `, `for id "d1" failed after 3 tries`} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if d := time.Since(start); d < 500*time.Millisecond {
				t.Errorf("failed after %v: not retried with backoff", d)
			}
		})
	}
}

func TestCacheLRU(t *testing.T) {
	now := time.Unix(0, 0)
	c := newCache(time.Minute, 2)
	a, b := &row{}, &row{}
	c.put("a", a, now)
	c.put(int64(1), b, now)
	if r, ok := c.get("a", now); !ok || r != a {
		t.Fatal("a not cached")
	}
	c.put(true, nil, now) // evicts int64(1), the least recently used
	if _, ok := c.get(int64(1), now); ok {
		t.Error("int64(1) not evicted")
	}
	if r, ok := c.get(true, now); !ok || r != nil {
		t.Error("the miss for true not cached")
	}
	if _, ok := c.get("a", now.Add(time.Minute)); ok {
		t.Error("a served at its expiry")
	}
	if c.len() != 1 {
		t.Errorf("len %d after expiry, want 1", c.len())
	}
	c.put(true, a, now) // an update keeps one entry
	if r, _ := c.get(true, now); r != a || c.len() != 1 {
		t.Errorf("update: got %v, len %d", r, c.len())
	}
}
