// Package dbio connects weir to SQL databases: a lookup join that enriches
// each record with a row looked up by one of its fields, and a sink that
// writes records to a table, inserting or upserting them. It speaks to
// MySQL and MariaDB (driver "mysql", github.com/go-sql-driver/mysql) and to
// PostgreSQL (driver "postgres", github.com/jackc/pgx/v5/stdlib), and is the
// only package of weir that imports those drivers.
//
// # Lookup join
//
// NewLookup returns an engine.Operator that runs a one-parameter SELECT for
// the value of a JSON field of each record and adds the result columns to
// the record's JSON object, as Flink's processing-time lookup join
// (FOR SYSTEM_TIME AS OF proc_time) does. The query is written with ? for
// both drivers. An inner join drops a record whose key has no row; a left
// join adds the columns as null. Rows (and misses) may be cached for a
// while, per operator instance; the table is read as it is when the record
// is processed, so a changed row is seen once its cache entry expires.
// The distinct uncached keys of a batch are queried up to 8 at a time, as
// the capacity of Flink's async lookup bounds its requests in flight.
// Column values become JSON as appendColumn describes: text as strings,
// numbers as numbers (DECIMAL/NUMERIC included), times as RFC 3339 strings,
// JSON columns as JSON, NULL as null.
//
// # Sink
//
// NewSink returns a *Sink, a synchronous engine.Sink: each batch is written
// in one transaction, in multi-row INSERT statements, and Write returns
// after the commit. With an upsert key (a primary or unique key of the
// table) rows are upserted, so a batch written again after a restart, as
// at-least-once delivery does, leaves the table as if it had been written
// once: the table is a materialized view of the latest record per key. A
// record that cannot be made a row (not a JSON object, a missing field) is
// a dead letter; the rest of its batch is still written.
//
// # Errors
//
// A record's own problems become dead letters naming the stage, the column
// and the field. A database error is retried, three tries in all over about
// half a second; if it persists, Process or Write returns an error, which
// stops the pipeline, and the input not yet acknowledged is read again when
// it restarts. Configuration errors (an unknown table or column, a query
// with other than one parameter or no columns, an unreachable database) are
// returned by NewLookup and NewSink, before the pipeline runs.
//
// # Concurrency and lifetime
//
// Lookup instances and sinks that name the same DB share one *sql.DB (a
// pool of at most 8 connections) through a process-wide registry that
// counts references: it is opened by the first NewLookup or NewSink and
// closed by the last Close. Each lookup instance and each Sink is used by
// one goroutine; the registry is safe for concurrent use. Open returns a
// handle of the caller's own, outside the registry.
package dbio
