package state

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	badger "github.com/dgraph-io/badger/v4"
)

// ErrLocked is wrapped by OpenBadgerView's error when another process (a
// running pipeline) holds the directory's badger lock.
var ErrLocked = errors.New("state: the badger directory is locked by another process")

// BadgerView is a read-only view of a Badger store's directory, as the
// store would be found by its next OpenBadger: as of the last committed
// checkpoint (every later write rolled back, a prepared checkpoint that
// awaits Resolve rolled back too), or, in a store that never committed
// one, everything written. It is for tools (inspecting, exporting) and
// writes nothing to the directory: badger is opened read-only, sharing
// its lock with other readers and failing with ErrLocked while a
// read-write Badger has the directory open. Only when badger must first
// recover a write-ahead log that a crash left (as the next OpenBadger
// would) is the directory opened read-write for that.
//
// A BadgerView is safe for concurrent use until Close; Scan and Keys must
// have returned before Close is called.
type BadgerView struct {
	db           *badger.DB
	readTs       uint64
	committed    Checkpoint
	hasCommitted bool
	prepared     Checkpoint
	hasPrepared  bool
}

// OpenBadgerView opens the Badger store in dir read-only. It fails with an
// error wrapping fs.ErrNotExist if dir holds no badger database (it does
// not create one), and with one wrapping ErrLocked if the store is open
// read-write elsewhere. log receives badger's messages; nil means none.
func OpenBadgerView(dir string, log *slog.Logger) (*BadgerView, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if _, err := os.Stat(filepath.Join(dir, badger.ManifestFilename)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("state: no badger database in %s: %w", dir, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("state: %w", err)
	}
	bo := badger.DefaultOptions(dir).
		WithLogger(slogAdapter{log.With("component", "badger")}).
		WithReadOnly(true).
		WithNumVersionsToKeep(1).
		WithBlockCacheSize(16 << 20).
		WithIndexCacheSize(16 << 20).
		WithMetricsEnabled(false)
	db, err := badger.OpenManaged(bo)
	if errors.Is(err, badger.ErrTruncateNeeded) || (err != nil && strings.Contains(err.Error(), badger.ErrTruncateNeeded.Error())) {
		// A crash left a write-ahead log with a torn tail: badger can
		// read it only after truncating it, as the next OpenBadger would.
		db, err = badger.OpenManaged(bo.WithReadOnly(false).WithCompactL0OnClose(false))
	}
	if err != nil {
		if isLockErr(err) {
			return nil, fmt.Errorf("state: open %s: %w", dir, ErrLocked)
		}
		return nil, fmt.Errorf("state: open badger in %s read-only: %w", dir, err)
	}
	v := &BadgerView{db: db}
	if v.committed, v.hasCommitted, err = v.readRecord(committedKey); err == nil {
		v.prepared, v.hasPrepared, err = v.readRecord(preparedKey)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("state: reading the checkpoint records in %s: %w", dir, err), db.Close())
	}
	// As Badger.recover: a prepared checkpoint newer than the committed
	// one awaits Resolve, which the pipeline's next start calls to roll
	// it back (then replaying its changelog, if it has one).
	if v.hasPrepared && v.hasCommitted && v.prepared.Version <= v.committed.Version {
		v.hasPrepared = false
	}
	switch {
	case v.hasCommitted:
		v.readTs = v.committed.Version
	case v.hasPrepared:
		v.readTs = 0 // rolled back to before everything
	default:
		v.readTs = math.MaxUint64
	}
	return v, nil
}

// isLockErr reports whether err is badger failing to take its directory
// lock. Badger formats the cause into its message rather than wrapping it.
func isLockErr(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || // EWOULDBLOCK on Linux
		strings.Contains(err.Error(), "Cannot acquire directory lock")
}

func (v *BadgerView) readRecord(key []byte) (Checkpoint, bool, error) { return readRecord(v.db, key) }

// Committed returns the last committed checkpoint, which the view shows
// the state of. ok is false if the store has none.
func (v *BadgerView) Committed() (cp Checkpoint, ok bool) { return v.committed, v.hasCommitted }

// Prepared returns a prepared checkpoint that was never committed (a
// crash between Prepare and Commit). The view does not include its
// writes, as the store's next open rolls it back. ok is false if there is
// none.
func (v *BadgerView) Prepared() (cp Checkpoint, ok bool) { return v.prepared, v.hasPrepared }

// Scan calls fn for each key starting with prefix that holds a value, in
// ascending order, with the store's reserved records left out, as
// Badger.Scan does. key and value are valid only during the call. Scan
// stops at, and returns, fn's first error.
func (v *BadgerView) Scan(prefix []byte, fn func(key, value []byte) error) error {
	return v.iterate(prefix, true, func(item *badger.Item) error {
		return item.Value(func(val []byte) error { return fn(item.Key(), val) })
	})
}

// Keys is Scan without the values, which it does not read.
func (v *BadgerView) Keys(prefix []byte, fn func(key []byte) error) error {
	return v.iterate(prefix, false, func(item *badger.Item) error { return fn(item.Key()) })
}

func (v *BadgerView) iterate(prefix []byte, values bool, fn func(*badger.Item) error) error {
	if v.db == nil {
		return ErrClosed
	}
	txn := v.db.NewTransactionAt(v.readTs, false)
	defer txn.Discard()
	io := badger.DefaultIteratorOptions
	io.Prefix = prefix
	io.PrefetchValues = values
	it := txn.NewIterator(io)
	defer it.Close()
	for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
		item := it.Item()
		k := item.Key()
		if bytes.HasPrefix(k, []byte(metaPrefix)) || bytes.HasPrefix(k, []byte(badgerPrefix)) {
			continue
		}
		if err := fn(item); err != nil {
			return err
		}
	}
	return nil
}

// Close closes badger and releases the directory. Calling it again does
// nothing.
func (v *BadgerView) Close() error {
	if v.db == nil {
		return nil
	}
	err := v.db.Close()
	v.db = nil
	return err
}

// CheckKey reports why a Badger store would refuse key in a Mutation:
// it is empty, longer than badger allows, or under a prefix reserved for
// badger's or the store's own records. Tools that write stores from files
// use it to name the offending line rather than a whole batch.
func CheckKey(key []byte) error {
	b := Badger{maxValue: math.MaxInt64}
	return b.checkMutation(&Mutation{Key: key, Delete: true})
}
