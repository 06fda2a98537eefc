package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseLookupAndDatabaseSink(t *testing.T) {
	setupDir(t)
	doc := `name: cities
sources: [{name: in, type: stdin}]
operators:
  - name: city
    type: lookup
    database: {driver: mysql, dsn: "root@tcp(127.0.0.1:3306)/test"}
    query: "SELECT city FROM device_metadata WHERE device_id = ? AND note <> '?'"
    field: m.device_id
    join: left
    cache_ttl: 30s
    cache_size: 500
sinks:
  - name: dash
    type: database
    database: {driver: postgres, dsn: "postgres://postgres@127.0.0.1:5432/test"}
    table: public.average_temperatures
    columns: {city: city, window_time: window_end, avg_temperature: avg.temperature}
    key: [city, window_time]
`
	p, err := Parse("pipeline.yaml", []byte(doc), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := p.Operators[0].Lookup
	if l.Database.Driver != DatabaseMySQL || l.Database.DSN != "root@tcp(127.0.0.1:3306)/test" || l.Field != "m.device_id" ||
		!slices.Equal(l.Path, []string{"m", "device_id"}) || l.Join != JoinLeft || l.CacheTTL != 30*time.Second ||
		l.CacheSize != 500 || p.Operators[0].BatchSize != DefaultBatchSize {
		t.Errorf("lookup = %+v", l)
	}
	s := p.Sinks[0]
	want := []SinkColumn{{"city", "city", []string{"city"}}, {"window_time", "window_end", []string{"window_end"}},
		{"avg_temperature", "avg.temperature", []string{"avg", "temperature"}}}
	if s.Database.Driver != DatabasePostgres || s.Table != "public.average_temperatures" ||
		!slices.EqualFunc(s.Columns, want, func(a, b SinkColumn) bool {
			return a.Name == b.Name && a.Field == b.Field && slices.Equal(a.Path, b.Path)
		}) || !slices.Equal(s.Key, []string{"city", "window_time"}) {
		t.Errorf("sink = %+v", s)
	}
}

func TestParseLookupAndDatabaseSinkErrors(t *testing.T) {
	const lookup = `{name: l, type: lookup, database: {driver: mysql, dsn: x}, field: id, query: "SELECT a FROM t WHERE id = ?"`
	const sink = `{name: out, type: database, database: {driver: postgres, dsn: x}, table: t, columns: {a: a}`
	tests := []struct {
		name, op, sink, want string
		line                 int
	}{
		{name: "no database", op: `{name: l, type: lookup, field: id, query: "SELECT a FROM t WHERE id = ?"}`,
			want: `operators[0] "l": missing required field "database"`, line: 4},
		{name: "unknown driver", op: `{name: l, type: lookup, database: {driver: oracle, dsn: x}, field: id, query: "SELECT a FROM t WHERE id = ?"}`,
			want: `operators[0] "l".database.driver: invalid value "oracle" (want one of mysql, postgres)`, line: 4},
		{name: "no dsn", op: `{name: l, type: lookup, database: {driver: mysql}, field: id, query: "SELECT a FROM t WHERE id = ?"}`,
			want: `missing required field "dsn"`, line: 4},
		{name: "query without a parameter", op: `{name: l, type: lookup, database: {driver: mysql, dsn: x}, field: id, query: "SELECT a FROM t WHERE id = '?'"}`,
			want: `the query must have exactly one ? parameter (the value of field), not 0`, line: 4},
		{name: "query with two parameters", op: `{name: l, type: lookup, database: {driver: mysql, dsn: x}, field: id, query: "SELECT a FROM t WHERE id = ? OR b = ?"}`,
			want: `not 2`, line: 4},
		{name: "bad join", op: lookup + `, join: outer}`, want: `invalid value "outer" (want one of inner, left)`, line: 4},
		{name: "cache size without ttl", op: lookup + `, cache_size: 10}`, want: `cache_size: applies only with a cache_ttl`, line: 4},
		{name: "window field on a lookup", op: lookup + `, size: 1s}`, want: `field "size" does not apply to lookup operators`, line: 4},
		{name: "sink without columns", sink: `{name: out, type: database, database: {driver: postgres, dsn: x}, table: t}`,
			want: `sinks[0] "out": missing required field "columns"`, line: 6},
		{name: "bad table", sink: `{name: out, type: database, database: {driver: postgres, dsn: x}, table: "t; DROP TABLE u", columns: {a: a}}`,
			want: `is not a plain SQL name`, line: 6},
		{name: "bad column", sink: `{name: out, type: database, database: {driver: postgres, dsn: x}, table: t, columns: {"a b": a}}`,
			want: `column "a b" is not a plain SQL name`, line: 6},
		{name: "key not a column", sink: sink + `, key: [b]}`, want: `key column "b" is not one of the sink's columns`, line: 6},
		{name: "format on a database sink", sink: sink + `, format: raw}`, want: `field "format" does not apply to database sinks`, line: 6},
		{name: "format on a discard sink", sink: `{name: out, type: discard, format: raw}`, want: `field "format" does not apply to discard sinks`, line: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setupDir(t)
			op, sk := tt.op, tt.sink
			if op == "" {
				op = `{name: k, type: key_by, field: id}`
			}
			if sk == "" {
				sk = `{name: out, type: stdout}`
			}
			doc := "name: p\nsources: [{name: in, type: stdin}]\noperators:\n  - " + op + "\nsinks:\n  - " + sk + "\n"
			_, err := Parse("pipeline.yaml", []byte(doc), nil, nil)
			at := "pipeline.yaml:" + string(rune('0'+tt.line)) + ":"
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), at) {
				t.Fatalf("err = %v\nwant it to contain %q at %s", err, tt.want, at)
			}
		})
	}
}

func TestCountPlaceholders(t *testing.T) {
	tests := []struct {
		q    string
		want int
	}{
		{"SELECT a FROM t WHERE id = ?", 1},
		{"SELECT '?' FROM t WHERE id = ? AND b = \"?\" AND `c?` = 1", 1},
		{"SELECT a FROM t", 0},
		{"SELECT a FROM t WHERE a = ? AND b = ?", 2},
	}
	for _, tt := range tests {
		if got := countPlaceholders(tt.q); got != tt.want {
			t.Errorf("countPlaceholders(%q) = %d, want %d", tt.q, got, tt.want)
		}
	}
}
