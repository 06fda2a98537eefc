package dbio

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/weir-stream/weir/abi/wjson"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/record"
)

// Column maps a field of the record value to a table column.
type Column struct {
	Name string   // the table column
	Path []string // the JSON field of the record value that fills it
}

// SinkConfig configures a database sink. It is a plain value; NewSink keeps
// a copy.
type SinkConfig struct {
	Name    string
	DB      DB
	Table   string // may be schema.table; names are quoted, so used exactly as written
	Columns []Column
	// Key names the columns of the upsert key, a primary or unique key of
	// the table. Rows are then upserted (PostgreSQL: INSERT ... ON CONFLICT
	// (key) DO UPDATE SET ...; MySQL and MariaDB: INSERT ... ON DUPLICATE
	// KEY UPDATE c = VALUES(c)), so a record written again after a restart
	// replaces its row: the table ends up as if each record were written
	// once, like Flink's JDBC sink in upsert mode. Empty: plain INSERT,
	// at least once.
	Key []string
}

// maxRowsPerStatement caps the rows of one INSERT; the rows of a statement
// are further capped so that it has at most maxParams parameters, the
// limit of both MySQL's and PostgreSQL's protocols.
const (
	maxRowsPerStatement = 1000
	maxParams           = 65535
)

// Sink writes records to a table. It implements engine.Sink, synchronously:
// Write writes its batch in one transaction and returns after the commit,
// so the batch is durable when Write returns, Flush has nothing to do, and
// Write registers nothing on the Ack. Write, Flush and Close are called by
// one goroutine. The *sql.DB is shared with the lookups and sinks of the
// process that name the same DB (see NewLookup); Close releases it.
type Sink struct {
	cfg    SinkConfig
	what   string // `sink "name"`, for messages
	fields []string
	keyIdx []int // indices into cfg.Columns of the Key columns
	db     *sql.DB
	ctx    context.Context
	cancel context.CancelFunc
	table  string // quoted
	head   string // INSERT INTO table (cols) VALUES
	tail   string // the upsert clause, or ""
	per    int    // rows per statement
	full   string // the statement for per rows
	closed bool

	// Per batch, reused.
	args []any
	last map[string]int // upsert key → the row that has it last
	kb   []byte
}

var _ engine.Sink = (*Sink)(nil)

// NewSink checks the config, and that the table and columns exist (by a
// SELECT of the columns that matches no row); with a Key, that the key is a
// unique key of the table (PostgreSQL: an upsert of no rows in a rolled-back
// transaction; MySQL: the table's unique indexes). It returns the sink.
func NewSink(ctx context.Context, cfg SinkConfig) (*Sink, error) {
	what := "sink " + strconv.Quote(cfg.Name)
	if err := checkSinkConfig(cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	cfg.Columns = slices.Clone(cfg.Columns)
	cfg.Key = slices.Clone(cfg.Key)
	s := &Sink{cfg: cfg, what: what, last: make(map[string]int)}
	d := cfg.DB.Driver
	s.table = quoteIdent(d, cfg.Table)
	names := make([]string, len(cfg.Columns))
	for i, c := range cfg.Columns {
		names[i] = quoteIdent(d, c.Name)
		s.fields = append(s.fields, strings.Join(c.Path, "."))
	}
	for _, k := range cfg.Key {
		s.keyIdx = append(s.keyIdx, slices.IndexFunc(cfg.Columns, func(c Column) bool { return c.Name == k }))
	}
	s.head = "INSERT INTO " + s.table + " (" + strings.Join(names, ", ") + ") VALUES "
	s.tail = upsertClause(d, names, s.keyIdx)
	s.per = min(maxRowsPerStatement, maxParams/len(cfg.Columns))
	s.full = s.statement(s.per)

	db, err := acquire(ctx, cfg.DB)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	s.db = db
	if err := s.check(ctx, names); err != nil {
		release(cfg.DB)
		return nil, fmt.Errorf("%s: table %s: %w", what, cfg.Table, err)
	}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	return s, nil
}

func checkSinkConfig(cfg SinkConfig) error {
	if err := checkDriver(cfg.DB); err != nil {
		return err
	}
	if cfg.Table == "" {
		return errors.New("no table")
	}
	if len(cfg.Columns) == 0 {
		return errors.New("no columns")
	}
	seen := make(map[string]bool)
	for _, c := range cfg.Columns {
		switch {
		case c.Name == "":
			return errors.New("a column has no name")
		case len(c.Path) == 0:
			return fmt.Errorf("column %s: no field", c.Name)
		case seen[c.Name]:
			return fmt.Errorf("column %s is given twice", c.Name)
		}
		seen[c.Name] = true
	}
	keys := make(map[string]bool)
	for _, k := range cfg.Key {
		switch {
		case !seen[k]:
			return fmt.Errorf("key column %s is not one of the columns", k)
		case keys[k]:
			return fmt.Errorf("key column %s is given twice", k)
		}
		keys[k] = true
	}
	return nil
}

// upsertClause returns what follows the VALUES of an upsert: the update of
// every non-key column from the new row (when every column is in the key,
// nothing is left to update: PostgreSQL does nothing, MySQL sets a key
// column to itself). Without a key it returns "".
func upsertClause(driver string, names []string, keyIdx []int) string {
	if len(keyIdx) == 0 {
		return ""
	}
	var set, keys []string
	for i, n := range names {
		if slices.Contains(keyIdx, i) {
			keys = append(keys, n)
			continue
		}
		if driver == MySQL {
			set = append(set, n+" = VALUES("+n+")")
		} else {
			set = append(set, n+" = EXCLUDED."+n)
		}
	}
	if driver == MySQL {
		if len(set) == 0 {
			set = []string{keys[0] + " = " + keys[0]}
		}
		return " ON DUPLICATE KEY UPDATE " + strings.Join(set, ", ")
	}
	if len(set) == 0 {
		return " ON CONFLICT (" + strings.Join(keys, ", ") + ") DO NOTHING"
	}
	return " ON CONFLICT (" + strings.Join(keys, ", ") + ") DO UPDATE SET " + strings.Join(set, ", ")
}

// statement returns the INSERT for n rows.
func (s *Sink) statement(n int) string {
	ncol := len(s.cfg.Columns)
	var b strings.Builder
	b.Grow(len(s.head) + n*ncol*5 + len(s.tail))
	b.WriteString(s.head)
	p := 0
	for r := range n {
		if r > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for c := range ncol {
			if c > 0 {
				b.WriteByte(',')
			}
			p++
			if s.cfg.DB.Driver == MySQL {
				b.WriteByte('?')
			} else {
				b.WriteByte('$')
				b.WriteString(strconv.Itoa(p))
			}
		}
		b.WriteByte(')')
	}
	b.WriteString(s.tail)
	return b.String()
}

// check checks that the table has the columns and, for an upsert, the key.
func (s *Sink) check(ctx context.Context, names []string) error {
	rows, err := s.db.QueryContext(ctx, "SELECT "+strings.Join(names, ", ")+" FROM "+s.table+" WHERE 1 = 0")
	if err != nil {
		return err
	}
	rows.Close()
	if len(s.keyIdx) == 0 {
		return nil
	}
	if s.cfg.DB.Driver == MySQL {
		return s.checkMySQLKey(ctx)
	}
	// Planning the upsert checks that a unique index matches the key.
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	nulls := strings.Repeat("NULL, ", len(names))
	_, err = tx.ExecContext(ctx, s.head[:strings.LastIndex(s.head, " VALUES ")]+
		" SELECT "+nulls[:len(nulls)-2]+" WHERE false"+s.tail)
	if err != nil {
		return fmt.Errorf("upsert key (%s): %w", strings.Join(s.cfg.Key, ", "), err)
	}
	return nil
}

// checkMySQLKey checks that a unique index of the table has exactly the key
// columns, since ON DUPLICATE KEY UPDATE does not name the key and would
// silently insert duplicates without one.
func (s *Sink) checkMySQLKey(ctx context.Context) error {
	schema, table := "", s.cfg.Table
	if i := strings.LastIndexByte(table, '.'); i >= 0 {
		schema, table = table[:i], table[i+1:]
	}
	q := "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS WHERE NON_UNIQUE = 0 AND TABLE_NAME = ? AND TABLE_SCHEMA = "
	args := []any{table}
	if schema == "" {
		q += "DATABASE()"
	} else {
		q += "?"
		args = append(args, schema)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	indexes := make(map[string][]string)
	for rows.Next() {
		var index, col string
		if err := rows.Scan(&index, &col); err != nil {
			return err
		}
		indexes[index] = append(indexes[index], col)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, cols := range indexes {
		if len(cols) == len(s.cfg.Key) && !slices.ContainsFunc(cols, func(c string) bool {
			return !slices.ContainsFunc(s.cfg.Key, func(k string) bool { return strings.EqualFold(k, c) })
		}) {
			return nil
		}
	}
	return fmt.Errorf("upsert key (%s): no primary or unique key of the table has exactly these columns", strings.Join(s.cfg.Key, ", "))
}

// Name returns the sink's name.
func (s *Sink) Name() string { return s.cfg.Name }

// Write writes recs in one transaction, upserting or inserting them, and
// returns after the commit. A record whose value is not a JSON object, or
// lacks a column's field, is appended to dead, and the others are written.
// Within an upsert, rows with the same key keep the last. A failed
// transaction is tried twice more, after 100 ms and 400 ms; then Write
// returns an error, which stops the pipeline. Nothing is registered on ack.
func (s *Sink) Write(recs []record.Record, dead []record.DeadLetter, _ *engine.Ack) ([]record.DeadLetter, error) {
	if s.closed {
		return dead, fmt.Errorf("%s: write after close", s.what)
	}
	ncol := len(s.cfg.Columns)
	clear(s.args)
	s.args = s.args[:0]
	for i := range recs {
		var reason string
		s.args, reason = s.row(s.args, recs[i].Value)
		if reason != "" {
			dead = append(dead, record.DeadLetter{Record: recs[i], Stage: s.cfg.Name, Reason: s.what + ": " + reason})
		}
	}
	if len(s.keyIdx) > 0 {
		s.args = s.dedup(s.args)
	}
	rows := len(s.args) / ncol
	if rows == 0 {
		return dead, nil
	}
	tries, err := retry(s.ctx, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
		defer cancel()
		return s.write(ctx, s.args)
	})
	if err != nil {
		verb := "inserting"
		if len(s.keyIdx) > 0 {
			verb = "upserting"
		}
		return dead, fmt.Errorf("%s: %s %d rows into table %s failed after %d tries: %w; the pipeline stops, and its input not yet acknowledged is read again on restart",
			s.what, verb, rows, s.cfg.Table, tries, err)
	}
	return dead, nil
}

// row appends to args the parameters of one record's row, or returns args
// unchanged and why the record cannot be written.
func (s *Sink) row(args []any, value []byte) ([]any, string) {
	if err := checkObject(value); err != "" {
		return args, err
	}
	start := len(args)
	for i, c := range s.cfg.Columns {
		v, err := wjson.Get(value, c.Path...)
		if err == nil && !v.Exists() {
			clear(args[start:])
			return args[:start], "column " + c.Name + ": field " + s.fields[i] + " not found"
		}
		p, err := param(v)
		if err != nil {
			clear(args[start:])
			return args[:start], "column " + c.Name + ": field " + s.fields[i] + ": " + err.Error()
		}
		args = append(args, p)
	}
	return args, ""
}

// checkObject says why value is not a JSON object, or "".
func checkObject(value []byte) string {
	v, err := wjson.Parse(value)
	switch {
	case err != nil:
		return "value is not JSON: " + err.Error()
	case v.Kind != wjson.Object:
		return "value is not a JSON object"
	}
	return ""
}

// dedup keeps, of the rows in args with the same upsert key, the last one,
// where the first stood. Rows with a NULL key column are all kept, as SQL
// never finds NULL keys equal.
func (s *Sink) dedup(args []any) []any {
	ncol := len(s.cfg.Columns)
	rows := len(args) / ncol
	clear(s.last)
	for r := range rows {
		if k, ok := s.rowKey(args[r*ncol : (r+1)*ncol]); ok {
			s.last[k] = r
		}
	}
	if len(s.last) == rows {
		return args
	}
	// Move each kept row to where its key first appeared.
	out := 0
	for r := range rows {
		row := args[r*ncol : (r+1)*ncol]
		k, ok := s.rowKey(row)
		if ok {
			last, first := s.last[k]
			if !first {
				continue // a later row with the key has taken its place already
			}
			delete(s.last, k)
			row = args[last*ncol : (last+1)*ncol]
		}
		copy(args[out*ncol:], row)
		out++
	}
	clear(args[out*ncol:])
	return args[:out*ncol]
}

// rowKey returns the upsert key of a row's parameters as a string, with a
// type tag before each part, or false if a part is NULL. Integral floats
// are keyed as the integers they equal, as SQL compares them.
func (s *Sink) rowKey(row []any) (string, bool) {
	b := s.kb[:0]
	for _, i := range s.keyIdx {
		switch v := row[i].(type) {
		case nil:
			return "", false
		case string:
			b = append(b, 's')
			b = strconv.AppendInt(b, int64(len(v)), 10)
			b = append(b, ':')
			b = append(b, v...)
		case int64:
			b = append(b, 'i')
			b = strconv.AppendInt(b, v, 10)
			b = append(b, ';')
		case float64:
			if v == math.Trunc(v) && math.Abs(v) < 1<<63 {
				b = append(b, 'i')
				b = strconv.AppendInt(b, int64(v), 10)
			} else {
				b = append(b, 'f')
				b = strconv.AppendFloat(b, v, 'g', -1, 64)
			}
			b = append(b, ';')
		case bool:
			if v {
				b = append(b, "b1"...)
			} else {
				b = append(b, "b0"...)
			}
		}
	}
	s.kb = b
	return string(b), true
}

// write writes the rows of args in one transaction.
func (s *Sink) write(ctx context.Context, args []any) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ncol := len(s.cfg.Columns)
	for len(args) > 0 {
		n := min(len(args)/ncol, s.per)
		q := s.full
		if n < s.per {
			q = s.statement(n)
		}
		if _, err := tx.ExecContext(ctx, q, args[:n*ncol]...); err != nil {
			return err
		}
		args = args[n*ncol:]
	}
	return tx.Commit()
}

// Flush does nothing: Write has committed everything it was given.
func (s *Sink) Flush() error { return nil }

// Close releases the database handle. It may be called more than once.
func (s *Sink) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.cancel()
	if err := release(s.cfg.DB); err != nil {
		return fmt.Errorf("%s: %w", s.what, err)
	}
	return nil
}
