package config

import (
	"fmt"
	"strings"
	"time"
)

// Database drivers, for lookup operators and database sinks.
const (
	DatabaseMySQL    = "mysql"    // MySQL and MariaDB
	DatabasePostgres = "postgres" // PostgreSQL
)

// Join kinds of a lookup operator.
const (
	JoinInner = "inner" // a record with no row is dropped, as Flink's lookup JOIN (default)
	JoinLeft  = "left"  // a record with no row keeps going, its columns null (LEFT JOIN)
)

// Database names the SQL database of a lookup operator or a database sink.
type Database struct {
	Meta
	Driver string // DatabaseMySQL or DatabasePostgres
	DSN    string // the driver's data source name; may come from the environment
}

// Lookup holds a lookup operator's settings: a processing-time lookup join,
// as Flink's JOIN ... FOR SYSTEM_TIME AS OF proc_time.
type Lookup struct {
	Database Database
	// Query is a SELECT with exactly one ? parameter, the value of Field;
	// its result columns are added to the record as fields.
	Query string
	Field string   // dotted JSON path of the lookup key, as written
	Path  []string // Field split at the dots
	Join  string   // JoinInner (default) or JoinLeft
	// CacheTTL is how long a looked-up row (or its absence) is reused, in
	// processing time; 0 = every record asks the database.
	CacheTTL  time.Duration
	CacheSize int // most cached keys per worker; 0 = the operator's default
}

// SinkColumn is one column a database sink writes: Field's value of each
// record.
type SinkColumn struct {
	Name  string   // the table column
	Field string   // dotted JSON path, as written
	Path  []string // Field split at the dots
}

var (
	lookupFields   = []string{"name", "type", "database", "query", "field", "join", "cache_ttl", "cache_size", "batch_size"}
	dbSinkFields   = []string{"name", "type", "database", "table", "columns", "key"}
	databaseFields = []string{"driver", "dsn"}
	dbDrivers      = []string{DatabaseMySQL, DatabasePostgres}
	joinKinds      = []string{JoinInner, JoinLeft}
)

// database decodes the database block of o.
func (d *decoder) database(o *object, db *Database) {
	n := o.get("database", kNode)
	if n == nil {
		o.missing("database")
		return
	}
	do := d.object(n, o.meta.Pos, o.path("database"), joinEnv(o.env, "database"), &db.Meta, false)
	if do == nil {
		return
	}
	if v, st := do.enum("driver", dbDrivers...); st == absent {
		do.missing("driver")
	} else if st == good {
		db.Driver = v
	}
	if v, st := do.nonEmpty("dsn"); st == absent {
		do.missing("dsn")
	} else if st == good {
		db.DSN = v
	}
	do.finish(databaseFields, databaseFields, "")
}

// lookup decodes a lookup operator's fields.
func (d *decoder) lookup(o *object, op *Operator, engineBatch int) {
	l := &op.Lookup
	l.Join = JoinInner
	op.BatchSize = engineBatch
	d.database(o, &l.Database)
	if q, st := o.nonEmpty("query"); st == absent {
		o.missing("query")
	} else if st == good {
		if n := countPlaceholders(q); n != 1 {
			o.fail("query", o.get("query", kString), "the query must have exactly one ? parameter (the value of field), not %d", n)
		} else {
			l.Query = q
		}
	}
	if f, segs, st := o.fieldPath("field"); st == absent {
		o.missing("field")
	} else if st == good {
		l.Field, l.Path = f, segs
	}
	if v, st := o.enum("join", joinKinds...); st == good {
		l.Join = v
	}
	if v, st := o.duration("cache_ttl"); st == good {
		l.CacheTTL = v
	}
	if v, st := o.int("cache_size", 1, 1<<30); st == good {
		if l.CacheTTL == 0 {
			o.fail("cache_size", o.get("cache_size", kScalar), "applies only with a cache_ttl")
		}
		l.CacheSize = int(v)
	}
	if v, st := o.int("batch_size", 1, MaxBatchSize); st == good {
		op.BatchSize = int(v)
	}
}

// countPlaceholders counts the ? of a query outside quoted strings and
// identifiers.
func countPlaceholders(q string) int {
	n := 0
	var quote byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '?':
			n++
		}
	}
	return n
}

// databaseSink decodes a database sink's fields.
func (d *decoder) databaseSink(o *object, s *Sink) {
	d.database(o, &s.Database)
	if t, st := o.nonEmpty("table"); st == absent {
		o.missing("table")
	} else if st == good {
		if !isSQLName(t) {
			o.fail("table", o.get("table", kString), "table %q is not a plain SQL name (letters, digits, _ and $, optionally schema.table)", t)
		} else {
			s.Table = t
		}
	}
	cn := o.get("columns", kNode)
	if cn == nil || isNull(cn) {
		o.missing("columns")
	} else if co := d.object(cn, s.Pos, o.path("columns"), "", &Meta{}, false); co != nil {
		for _, e := range co.entries {
			name, path := e.key.Value, co.path(e.key.Value)
			if !isSQLName(name) || strings.Contains(name, ".") {
				d.errorf(e.key, path, "column %q is not a plain SQL name (letters, digits, _ and $)", name)
				continue
			}
			f, segs, ok := d.fieldPathItem(e.val, path)
			if !ok {
				continue
			}
			s.Columns = append(s.Columns, SinkColumn{Name: name, Field: f, Path: segs})
		}
		if len(co.entries) == 0 {
			o.fail("columns", cn, "at least one column is required")
		}
	}
	items, st := o.list("key")
	if st == good {
		seen := map[string]bool{}
		for i, item := range items {
			path := fmt.Sprintf("%s[%d]", o.path("key"), i)
			k, v, ok := d.strItem(item, path)
			if !ok {
				continue
			}
			switch {
			case seen[k]:
				d.errorf(v, path, "column %q is in the key twice", k)
			case !hasColumn(s.Columns, k):
				d.errorf(v, path, "key column %q is not one of the sink's columns", k)
			default:
				seen[k] = true
				s.Key = append(s.Key, k)
			}
		}
	}
}

func hasColumn(cols []SinkColumn, name string) bool {
	for _, c := range cols {
		if c.Name == name {
			return true
		}
	}
	return false
}

// isSQLName reports whether s is a plain SQL identifier, or two joined by
// a dot: what a sink may splice into its statements unquoted.
func isSQLName(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) > 2 {
		return false
	}
	for _, p := range parts {
		if p == "" || p[0] >= '0' && p[0] <= '9' {
			return false
		}
		for i := 0; i < len(p); i++ {
			c := p[i]
			if !(c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
				return false
			}
		}
	}
	return true
}
