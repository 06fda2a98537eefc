package dbio

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The databases the tests use. They are services of this machine: a test
// that cannot reach one fails, saying which to start.
var (
	mariaDB  = DB{MySQL, "root@tcp(127.0.0.1:3306)/test"}
	postgres = DB{Postgres, "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"}
)

// testDB is one database the tests run against.
type testDB struct {
	name    string
	db      DB
	service string // how to start it
}

var testDBs = []testDB{
	{"mariadb", mariaDB, "MariaDB on 127.0.0.1:3306 (user root, no password, database test): start it, e.g. `service mariadb start`"},
	{"postgres", postgres, "PostgreSQL on 127.0.0.1:5432 (user postgres, trust auth, database test): start it, e.g. `service postgresql start`"},
}

// connect opens tdb for the test's own statements, failing the test if the
// database is unreachable.
func connect(t testing.TB, tdb testDB) *sql.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := Open(ctx, tdb.db)
	if err != nil {
		t.Fatalf("the tests need %s\n%v", tdb.service, err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

var tableSeq atomic.Int64

// newTable creates a table of a name unique to this run, from ddl with %s
// standing for the name, and drops it when the test ends. It returns the
// name.
func newTable(t testing.TB, h *sql.DB, ddl string) string {
	t.Helper()
	name := "dbio_" + strconv.FormatInt(time.Now().UnixNano(), 36) + "_" + strconv.FormatInt(tableSeq.Add(1), 10)
	mustExec(t, h, fmt.Sprintf(ddl, name))
	t.Cleanup(func() {
		if _, err := h.Exec("DROP TABLE IF EXISTS " + name); err != nil {
			t.Errorf("dropping %s: %v", name, err)
		}
	})
	return name
}

func mustExec(t testing.TB, h *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := h.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// pick returns my for MySQL and pg for PostgreSQL.
func pick[T any](d DB, my, pg T) T {
	if d.Driver == MySQL {
		return my
	}
	return pg
}

// ph rewrites the ? of a test's own statement for d.
func ph(d DB, q string) string {
	return rewritePlaceholders(d.Driver, q, placeholders(d.Driver, q))
}

func TestRedactDSN(t *testing.T) {
	tests := []struct {
		name, driver, dsn, want string
	}{
		{"mysql no password", MySQL, "root@tcp(127.0.0.1:3306)/test", "root@tcp(127.0.0.1:3306)/test"},
		{"mysql password", MySQL, "root:s3cr:et@tcp(127.0.0.1:3306)/test?parseTime=true", "root:xxxxx@tcp(127.0.0.1:3306)/test?parseTime=true"},
		{"mysql password with @", MySQL, "u:p@ss@tcp(h)/db", "u:xxxxx@tcp(h)/db"},
		{"mysql no user", MySQL, "/db", "/db"},
		{"postgres url", Postgres, "postgres://u:secret@h:5432/db?sslmode=disable", "postgres://u:xxxxx@h:5432/db?sslmode=disable"},
		{"postgres url password param", Postgres, "postgres://u@h/db?password=secret", "postgres://u@h/db?password=xxxxx"},
		{"postgres keywords", Postgres, "host=h user=u password=secret dbname=db", "host=h user=u password=xxxxx dbname=db"},
		{"postgres keywords quoted", Postgres, "host=h password='se cr\\'et' dbname=db", "host=h password=xxxxx dbname=db"},
		{"postgres no password", Postgres, "postgres://postgres@127.0.0.1:5432/test", "postgres://postgres@127.0.0.1:5432/test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := redactDSN(tt.driver, tt.dsn); got != tt.want {
				t.Errorf("redactDSN(%q) = %q, want %q", tt.dsn, got, tt.want)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name string
		db   DB
		want []string
	}{
		{"unknown driver", DB{"sqlite", "x.db"}, []string{`unknown database driver "sqlite"`}},
		{"mysql unreachable", DB{MySQL, "root:secret@tcp(127.0.0.1:1)/test"}, []string{"mysql database root:xxxxx@tcp(127.0.0.1:1)/test"}},
		{"postgres unreachable", DB{Postgres, "postgres://u:secret@127.0.0.1:1/test?connect_timeout=2"}, []string{"postgres database postgres://u:xxxxx@127.0.0.1:1/test"}},
		{"mysql bad dsn", DB{MySQL, "no slash"}, []string{"mysql database no slash: bad DSN"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			h, err := Open(ctx, tt.db)
			if err == nil {
				h.Close()
				t.Fatal("Open succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

func TestQuoteIdent(t *testing.T) {
	tests := []struct {
		name, driver, in, want string
	}{
		{"mysql plain", MySQL, "readings", "`readings`"},
		{"mysql schema", MySQL, "test.readings", "`test`.`readings`"},
		{"mysql quote inside", MySQL, "a`b", "`a``b`"},
		{"postgres plain", Postgres, "Readings", `"Readings"`},
		{"postgres quote inside", Postgres, `a"b`, `"a""b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := quoteIdent(tt.driver, tt.in); got != tt.want {
				t.Errorf("quoteIdent(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

// TestRegistryShares checks that lookups and sinks naming one DB share one
// handle, closed with the last of them.
func TestRegistryShares(t *testing.T) {
	for _, tdb := range testDBs {
		t.Run(tdb.name, func(t *testing.T) {
			h := connect(t, tdb)
			table := newTable(t, h, "CREATE TABLE %s (id VARCHAR(32) PRIMARY KEY, city VARCHAR(64))")
			ctx := context.Background()
			cfg := LookupConfig{Name: "city", DB: tdb.db, Query: "SELECT city FROM " + table + " WHERE id = ?", KeyPath: []string{"id"}}
			a, err := NewLookup(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			b, err := NewLookup(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			s, err := NewSink(ctx, SinkConfig{Name: "out", DB: tdb.db, Table: table, Columns: []Column{{"id", []string{"id"}}}})
			if err != nil {
				t.Fatal(err)
			}
			if a.(*lookup).db != b.(*lookup).db || a.(*lookup).db != s.db {
				t.Error("the instances do not share one *sql.DB")
			}
			refs := func() int {
				registry.Lock()
				defer registry.Unlock()
				if e := registry.m[tdb.db]; e != nil {
					return e.refs
				}
				return 0
			}
			if got := refs(); got != 3 {
				t.Errorf("references = %d, want 3", got)
			}
			for _, c := range []func() error{func() error { return a.Close(ctx) }, func() error { return a.Close(ctx) }, s.Close, func() error { return b.Close(ctx) }} {
				if err := c(); err != nil {
					t.Fatal(err)
				}
			}
			if got := refs(); got != 0 {
				t.Errorf("references after closing all = %d, want 0 (entry removed)", got)
			}
		})
	}
}
