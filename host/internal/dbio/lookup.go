package dbio

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/weir-stream/weir/abi/wjson"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/record"
)

// LookupConfig configures a lookup join. It is a plain value; NewLookup
// keeps a copy.
type LookupConfig struct {
	Name string // the operator's name, for dead-letter reasons and errors
	DB   DB
	// Query is a SELECT with exactly one parameter, written ? for both
	// drivers (for PostgreSQL it is rewritten to $1, outside quoted
	// strings, identifiers and comments). Its result columns are added to
	// the record; when it returns several rows the first counts.
	Query string
	// KeyPath is the JSON field of the record value whose value is the
	// query's parameter: a JSON string is passed as a string, an integer
	// number as int64, another number as float64, a bool as bool. A null
	// field matches no row, as NULL = NULL is not true in SQL.
	KeyPath []string
	// Left makes a left join: a record with no row gets the columns as
	// null. Otherwise (an inner join, like Flink's lookup JOIN) it is
	// dropped.
	Left bool
	// CacheTTL is how long, in processing time, a looked-up row (or a miss)
	// is reused; 0 means no cache.
	CacheTTL time.Duration
	// CacheSize caps the keys cached per operator instance, evicting the
	// least recently used; 0 means 10,000.
	CacheSize int
}

// DefaultCacheSize is the CacheSize used when the config gives 0.
const DefaultCacheSize = 10_000

// attemptTimeout bounds one try of a query or transaction.
const attemptTimeout = 30 * time.Second

// lookup is the lookup-join operator: one instance per worker, used by one
// goroutine (see NewLookup).
type lookup struct {
	cfg   LookupConfig
	field string // KeyPath dotted, for messages
	db    *sql.DB
	stmt  *sql.Stmt
	query string // as sent to the database
	cols  []string
	kinds []colKind
	cache *cache // nil without a TTL
	now   func() time.Time

	closed  bool
	queries atomic.Int64 // queries run, for tests

	// Per batch, reused.
	slots []slot
	batch map[any]*row // key → its row (nil: a miss, pending: not yet queried)
	todo  []any        // keys to query, in first-seen order
	done  []bool       // per column: written into the current value
	buf   []byte
	rows  []*row // lookupAll's results, reused
}

// slot is what the first pass over a batch learned of one record.
type slot struct {
	ok  bool // the record has a key; false: dead-lettered
	key any  // nil for a null key
}

// pending marks a key of the current batch not yet looked up.
var pending = &row{}

// NewLookup prepares cfg.Query, checking that it has exactly one parameter
// and returns at least one column (by running it once with a NULL parameter
// in a read-only transaction that is rolled back), and returns the
// operator.
//
// The operator is one instance per worker (engine.Step.New is called per
// worker) and is used by one goroutine. Instances naming the same DB share
// one *sql.DB (a pool of at most 8 connections) through a process-wide
// registry that counts references: the first instance opens it, the last
// Close closes it. Each instance has its own prepared statement and cache.
//
// Process adds to each record the first row the query returns for its key,
// querying each distinct uncached key of a batch once, in the order first
// seen, and keeping the records in input order. A record whose value is not
// a JSON object, or lacks the key field, or whose key is an object or array,
// becomes a dead letter, as does one whose key the database refuses as the
// parameter's value (PostgreSQL's parameters are typed: "abc" for an
// integer, or a number for a text, is refused). A database error is retried twice, after 100 ms
// and 400 ms; then Process returns an error naming the operator and the
// query, which stops the pipeline.
func NewLookup(ctx context.Context, cfg LookupConfig) (engine.Operator, error) {
	what := "lookup " + strconv.Quote(cfg.Name)
	switch {
	case cfg.Query == "":
		return nil, fmt.Errorf("%s: no query", what)
	case len(cfg.KeyPath) == 0:
		return nil, fmt.Errorf("%s: no key field", what)
	case cfg.CacheTTL < 0:
		return nil, fmt.Errorf("%s: negative cache TTL %v", what, cfg.CacheTTL)
	case cfg.CacheSize < 0:
		return nil, fmt.Errorf("%s: negative cache size %d", what, cfg.CacheSize)
	}
	if err := checkDriver(cfg.DB); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	at := placeholders(cfg.DB.Driver, cfg.Query)
	if len(at) != 1 {
		return nil, fmt.Errorf("%s: query %q has %d parameters (?); a lookup query takes exactly one, the key", what, cfg.Query, len(at))
	}
	cfg.KeyPath = slices.Clone(cfg.KeyPath)
	l := &lookup{
		cfg:   cfg,
		field: strings.Join(cfg.KeyPath, "."),
		query: rewritePlaceholders(cfg.DB.Driver, cfg.Query, at),
		now:   time.Now,
		batch: make(map[any]*row),
	}
	if cfg.CacheTTL > 0 {
		size := cfg.CacheSize
		if size == 0 {
			size = DefaultCacheSize
		}
		l.cache = newCache(cfg.CacheTTL, size)
	}
	db, err := acquire(ctx, cfg.DB)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	l.db = db
	if err := l.prepare(ctx); err != nil {
		release(cfg.DB)
		return nil, fmt.Errorf("%s: query %q: %w", what, l.query, err)
	}
	return l, nil
}

// prepare learns the query's columns and prepares it.
func (l *lookup) prepare(ctx context.Context) error {
	tx, err := l.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, l.query, nil)
	if err != nil {
		return err
	}
	types, err := rows.ColumnTypes()
	rows.Close()
	if err != nil {
		return err
	}
	if len(types) == 0 {
		return errors.New("it returns no columns")
	}
	seen := make(map[string]bool, len(types))
	for _, t := range types {
		name := t.Name()
		if seen[name] {
			return fmt.Errorf("it returns two columns named %s; give one an alias", name)
		}
		seen[name] = true
		l.cols = append(l.cols, name)
		l.kinds = append(l.kinds, kindOf(t.DatabaseTypeName()))
	}
	tx.Rollback()
	l.stmt, err = l.db.PrepareContext(ctx, l.query)
	if err != nil {
		return err
	}
	l.done = make([]bool, len(l.cols))
	return nil
}

func (l *lookup) Name() string { return l.cfg.Name }

// Close closes the prepared statement and releases the shared database
// handle. It may be called more than once.
func (l *lookup) Close(context.Context) error {
	if l.closed {
		return nil
	}
	l.closed = true
	err := l.stmt.Close()
	if rerr := release(l.cfg.DB); err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("lookup %q: closing: %w", l.cfg.Name, err)
	}
	return nil
}

func (l *lookup) Process(ctx context.Context, in []record.Record, out *record.Output) error {
	clear(l.batch)
	l.todo = l.todo[:0]
	l.slots = l.slots[:0]
	now := l.now()
	for i := range in {
		key, reason := l.keyOf(in[i].Value)
		if reason != "" {
			out.Dead = append(out.Dead, record.DeadLetter{Record: in[i], Stage: l.cfg.Name,
				Reason: "lookup " + strconv.Quote(l.cfg.Name) + ": " + reason})
			l.slots = append(l.slots, slot{})
			continue
		}
		l.slots = append(l.slots, slot{ok: true, key: key})
		if key == nil {
			continue
		}
		if _, ok := l.batch[key]; ok {
			continue
		}
		if l.cache != nil {
			if r, ok := l.cache.get(key, now); ok {
				l.batch[key] = r
				continue
			}
		}
		l.batch[key] = pending
		l.todo = append(l.todo, key)
	}
	rows, err := l.lookupAll(ctx, l.todo)
	if err != nil {
		return err
	}
	for i, key := range l.todo {
		r := rows[i]
		l.batch[key] = r
		if l.cache != nil && (r == nil || r.rejected == "") {
			l.cache.put(key, r, now)
		}
	}
	for i, s := range l.slots {
		if !s.ok {
			continue
		}
		var r *row
		if s.key != nil {
			r = l.batch[s.key]
		}
		if r != nil && r.rejected != "" {
			out.Dead = append(out.Dead, record.DeadLetter{Record: in[i], Stage: l.cfg.Name,
				Reason: "lookup " + strconv.Quote(l.cfg.Name) + ": " + r.rejected})
			continue
		}
		if r == nil && !l.cfg.Left {
			continue
		}
		rec := in[i]
		l.buf = l.enrich(l.buf[:0], rec.Value, r)
		rec.Value = out.Arena.Copy(l.buf)
		out.Records = append(out.Records, rec)
	}
	return nil
}

// keyOf returns the query parameter for a record value, or why there is
// none. A null field's key is nil.
func (l *lookup) keyOf(value []byte) (any, string) {
	v, err := wjson.Get(value, l.cfg.KeyPath...)
	switch {
	case err != nil:
		return nil, "value is not JSON: " + err.Error()
	case !wjson.IsObject(value):
		return nil, "value is not a JSON object"
	case !v.Exists():
		return nil, "field " + l.field + " not found"
	case v.Kind == wjson.Object || v.Kind == wjson.Array:
		return nil, "field " + l.field + " is an " + v.Kind.String() + ", not a string, number or bool"
	}
	p, err := param(v)
	if err != nil {
		return nil, "field " + l.field + ": " + err.Error()
	}
	return p, ""
}

// lookupConcurrency bounds the queries one operator instance has in flight
// for a batch's uncached keys, as the capacity of Flink's async lookup
// does: each query is a round trip, and with several in flight the batch
// waits for about the slowest of each group rather than their sum.
const lookupConcurrency = 8

// lookupAll looks up keys, up to lookupConcurrency at a time, and returns
// their rows in the order of keys. The first error wins.
func (l *lookup) lookupAll(ctx context.Context, keys []any) ([]*row, error) {
	rows := l.rows[:0]
	for range keys {
		rows = append(rows, nil)
	}
	l.rows = rows
	if len(keys) == 1 {
		r, err := l.lookup(ctx, keys[0])
		rows[0] = r
		return rows, err
	}
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range min(lookupConcurrency, len(keys)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(keys) {
					return
				}
				r, err := l.lookup(ctx, keys[i])
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
				rows[i] = r
			}
		})
	}
	wg.Wait()
	return rows, first
}

// lookup queries the row for key, retrying on errors. It may run on
// several goroutines at once (lookupAll). A key the database
// refuses as a value of the parameter's type yields a row with rejected set.
func (l *lookup) lookup(ctx context.Context, key any) (*row, error) {
	var (
		r        *row
		rejected error // not retried: the same key fails the same way
	)
	tries, err := retry(ctx, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
		defer cancel()
		var err error
		r, err = l.queryRow(ctx, key)
		if err != nil && keyRejected(err) {
			rejected = err
			return nil
		}
		return err
	})
	if rejected != nil {
		return &row{rejected: "field " + l.field + ": the query refuses " + describeKey(key) + " as its parameter: " + rejected.Error()}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lookup %q: query %q for %s %s failed after %d tries: %w",
			l.cfg.Name, l.query, l.field, describeKey(key), tries, err)
	}
	return r, nil
}

// queryRow runs the query once for key and returns its first row, or nil.
func (l *lookup) queryRow(ctx context.Context, key any) (*row, error) {
	l.queries.Add(1)
	rows, err := l.stmt.QueryContext(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, rows.Err()
	}
	// Scan destinations of this query's own: queries run concurrently.
	vals := make([]any, len(l.kinds))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	r := &row{cols: make([][]byte, len(vals))}
	for i, v := range vals {
		r.cols[i] = appendColumn(nil, l.kinds[i], v)
	}
	return r, rows.Close()
}

// keyRejected reports whether err is the database refusing the parameter
// value itself, which trying again cannot change: for PostgreSQL a data
// exception (SQLSTATE class 22, such as "abc" for an integer) or a value
// pgx cannot encode as the parameter's type (such as a number for a text
// parameter).
func keyRejected(err error) bool {
	if pg, ok := errors.AsType[*pgconn.PgError](err); ok {
		return strings.HasPrefix(pg.Code, "22")
	}
	return strings.Contains(err.Error(), "failed to encode args[")
}

// describeKey renders a key for an error message.
func describeKey(key any) string {
	if s, ok := key.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(key)
}

// enrich appends to dst the object value with each result column of r (or
// null, for a nil r) as a field: a field of the same name is given the
// column's value where it stands, the others are added at the end. A
// repeated field of that name is dropped.
func (l *lookup) enrich(dst, value []byte, r *row) []byte {
	clear(l.done)
	dst = append(dst, '{')
	n := 0
	sep := func() {
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
	}
	wjson.Each(value, func(k, v wjson.Value) bool {
		c := l.column(k)
		switch {
		case c < 0:
			sep()
			dst = append(dst, k.Raw...)
			dst = append(dst, ':')
			dst = append(dst, v.Raw...)
		case !l.done[c]:
			l.done[c] = true
			sep()
			dst = append(dst, k.Raw...)
			dst = append(dst, ':')
			dst = l.appendValue(dst, r, c)
		}
		return true
	})
	for c, name := range l.cols {
		if l.done[c] {
			continue
		}
		sep()
		dst = wjson.AppendQuote(dst, name)
		dst = append(dst, ':')
		dst = l.appendValue(dst, r, c)
	}
	return append(dst, '}')
}

func (l *lookup) appendValue(dst []byte, r *row, c int) []byte {
	if r == nil {
		return append(dst, "null"...)
	}
	return append(dst, r.cols[c]...)
}

// column returns the index of the result column named by the object key k,
// or -1.
func (l *lookup) column(k wjson.Value) int {
	for i, name := range l.cols {
		if k.StringEquals(name) {
			return i
		}
	}
	return -1
}
