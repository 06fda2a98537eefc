package dbio

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

// The drivers a DB may name.
const (
	MySQL    = "mysql"    // MySQL and MariaDB, by github.com/go-sql-driver/mysql
	Postgres = "postgres" // PostgreSQL, by github.com/jackc/pgx/v5/stdlib
)

// DB names a database. Driver is "mysql" (MySQL or MariaDB) or "postgres"
// (PostgreSQL); DSN is that driver's data source name, such as
// root@tcp(127.0.0.1:3306)/test or
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable. A DB is a plain
// value, safe to copy and share, and usable as a map key.
type DB struct{ Driver, DSN string }

// String names the database for errors: the driver and the DSN with any
// password removed.
func (d DB) String() string { return d.Driver + " database " + redactDSN(d.Driver, d.DSN) }

// The pool Open sets up: small, since each operator instance runs one query
// at a time and a sink one transaction.
const (
	maxOpenConns    = 8
	maxIdleConns    = 4
	connMaxIdleTime = time.Minute
	connMaxLifetime = 30 * time.Minute
)

// Open opens the database and pings it, bounded by ctx, with a small pool
// (at most 8 connections, 4 idle). For MySQL it sets parseTime=true unless
// the DSN sets parseTime itself, so that DATE, DATETIME and TIMESTAMP
// columns read as times, and interpolateParams=true unless the DSN sets
// it, so that a statement run once (the sink's multi-row INSERT of each
// batch) is one round trip rather than a prepare, an execute and a close.
// The caller owns the returned *sql.DB and closes it.
// Errors name the driver and the DSN with any password removed.
func Open(ctx context.Context, db DB) (*sql.DB, error) {
	var name, dsn string
	switch db.Driver {
	case MySQL:
		cfg, err := mysql.ParseDSN(db.DSN)
		if err != nil {
			return nil, fmt.Errorf("dbio: %s: bad DSN: %w", db, err)
		}
		if !strings.Contains(db.DSN, "parseTime=") {
			cfg.ParseTime = true
		}
		if !strings.Contains(db.DSN, "interpolateParams=") {
			cfg.InterpolateParams = true
		}
		name, dsn = "mysql", cfg.FormatDSN()
	case Postgres:
		name, dsn = "pgx", db.DSN
	default:
		return nil, fmt.Errorf("dbio: unknown database driver %q: want %q or %q", db.Driver, MySQL, Postgres)
	}
	h, err := sql.Open(name, dsn)
	if err != nil {
		return nil, fmt.Errorf("dbio: opening %s: %w", db, err)
	}
	h.SetMaxOpenConns(maxOpenConns)
	h.SetMaxIdleConns(maxIdleConns)
	h.SetConnMaxIdleTime(connMaxIdleTime)
	h.SetConnMaxLifetime(connMaxLifetime)
	if err := h.PingContext(ctx); err != nil {
		h.Close()
		return nil, fmt.Errorf("dbio: connecting to %s: %w", db, err)
	}
	return h, nil
}

// The registry shares one *sql.DB among the lookup instances and sinks of a
// process that name the same DB, counting references: the handle is opened
// by the first acquire and closed by the last release. Acquire holds the
// registry's lock while it opens a database, so it also serializes opening
// (at pipeline start, bounded by each caller's ctx).
var registry = struct {
	sync.Mutex
	m map[DB]*shared
}{m: make(map[DB]*shared)}

type shared struct {
	db   *sql.DB
	refs int
}

// acquire returns the shared handle for d, opening it if need be; the caller
// calls release once when done with it.
func acquire(ctx context.Context, d DB) (*sql.DB, error) {
	registry.Lock()
	defer registry.Unlock()
	if s := registry.m[d]; s != nil {
		s.refs++
		return s.db, nil
	}
	h, err := Open(ctx, d)
	if err != nil {
		return nil, err
	}
	registry.m[d] = &shared{db: h, refs: 1}
	return h, nil
}

// release drops a reference taken by acquire, closing the handle with the
// last one.
func release(d DB) error {
	registry.Lock()
	s := registry.m[d]
	if s == nil {
		registry.Unlock()
		return nil
	}
	s.refs--
	if s.refs > 0 {
		registry.Unlock()
		return nil
	}
	delete(registry.m, d)
	registry.Unlock()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("dbio: closing %s: %w", d, err)
	}
	return nil
}

var pgPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)`)

// redactDSN returns dsn with any password replaced by "xxxxx".
func redactDSN(driver, dsn string) string {
	switch driver {
	case MySQL:
		// [user[:password]@][net[(addr)]]/dbname[?params]: the password is
		// between the first ':' and the last '@' before the last '/'.
		slash := strings.LastIndexByte(dsn, '/')
		if slash < 0 {
			slash = len(dsn)
		}
		at := strings.LastIndexByte(dsn[:slash], '@')
		if at < 0 {
			return dsn
		}
		if colon := strings.IndexByte(dsn[:at], ':'); colon >= 0 {
			dsn = dsn[:colon+1] + "xxxxx" + dsn[at:]
		}
		return dsn
	default:
		if u, err := url.Parse(dsn); err == nil && u.Scheme != "" && u.Host != "" {
			if _, ok := u.User.Password(); ok {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
			}
			q := u.Query()
			if q.Has("password") {
				q.Set("password", "xxxxx")
				u.RawQuery = q.Encode()
			}
			return u.String()
		}
		// The keyword=value form.
		return pgPassword.ReplaceAllString(dsn, "${1}xxxxx")
	}
}

// Retrying: a failed transaction or query is tried again after each of
// these pauses, so three tries in all.
var retryPauses = []time.Duration{100 * time.Millisecond, 400 * time.Millisecond}

// retry calls try until it succeeds, it has been tried len(retryPauses)+1
// times, or ctx is done. It returns the number of tries and the last error.
func retry(ctx context.Context, try func(context.Context) error) (int, error) {
	n := 0
	for {
		n++
		err := try(ctx)
		if err == nil || n > len(retryPauses) || ctx.Err() != nil {
			return n, err
		}
		t := time.NewTimer(retryPauses[n-1])
		select {
		case <-ctx.Done():
			t.Stop()
			return n, err
		case <-t.C:
		}
	}
}

// quoteIdent quotes a table or column name for driver: each dot-separated
// part in backquotes for MySQL, in double quotes for PostgreSQL, with the
// quote character doubled inside. Names are thus used exactly as written
// (PostgreSQL does not fold them to lower case).
func quoteIdent(driver, name string) string {
	q := `"`
	if driver == MySQL {
		q = "`"
	}
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = q + strings.ReplaceAll(p, q, q+q) + q
	}
	return strings.Join(parts, ".")
}

// checkDriver reports an unknown driver name.
func checkDriver(d DB) error {
	if d.Driver != MySQL && d.Driver != Postgres {
		return fmt.Errorf("unknown database driver %q: want %q or %q", d.Driver, MySQL, Postgres)
	}
	return nil
}
