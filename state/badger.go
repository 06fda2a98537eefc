package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// Defaults used by OpenBadger when the corresponding BadgerOptions field is 0.
const (
	// DefaultCacheBytes bounds the write-back cache of hot keys.
	DefaultCacheBytes int64 = 64 << 20
	// DefaultMemTableSize is badger's memtable size. Badger keeps up to five
	// memtables; 32 MiB each bounds that at 160 MiB while still allowing
	// single transactions of about 4.8 MiB (15% of a memtable).
	DefaultMemTableSize int64 = 32 << 20
	// DefaultBlockCacheSize is badger's cache of decompressed SST blocks. It is
	// smaller than badger's own default (256 MiB) because the write-back cache
	// already holds the hottest keys.
	DefaultBlockCacheSize int64 = 64 << 20
	// DefaultIndexCacheSize bounds the memory badger spends on table indexes
	// and bloom filters, so it stays bounded when state outgrows RAM (badger's
	// own default, 0, keeps every index in memory).
	DefaultIndexCacheSize int64 = 32 << 20
)

// valueLogGCInterval is how often an open Badger runs value-log GC.
var valueLogGCInterval = time.Minute

// ErrClosed is returned by operations on a closed Badger.
var ErrClosed = errors.New("state: store is closed")

// Limits badger places on keys and values; Apply checks them up front so a
// batch it accepts can always be written back later.
const (
	maxBadgerKey = 65000
	badgerPrefix = "!badger!" // badger's own
	// metaPrefix holds the store's own records. It is reserved, and Scan
	// never shows it.
	metaPrefix = "\x00\x00weir-meta\x00"
)

// The checkpoint records, under the reserved prefix. committedKey holds the
// last committed checkpoint's metadata, written at the version of the state
// it describes; preparedKey the metadata of a prepared checkpoint.
var (
	committedKey = []byte(metaPrefix + "checkpoint")
	preparedKey  = []byte(metaPrefix + "prepared")
)

// cacheEntryOverhead approximates the bytes a cache entry costs besides its
// key and value (entry struct, map slot, string header).
const cacheEntryOverhead = 96

// BadgerOptions configures OpenBadger. Only Dir is required.
type BadgerOptions struct {
	// Dir is the directory holding the database. It is created if missing.
	Dir string
	// CacheBytes bounds the write-back cache of hot keys, counting keys,
	// values and a fixed per-entry overhead. 0 means DefaultCacheBytes; a
	// negative value disables the cache, so every Apply writes through to
	// badger and every Get reads from it.
	CacheBytes int64
	// MemTableSize, BlockCacheSize and IndexCacheSize tune badger; 0 means
	// DefaultMemTableSize, DefaultBlockCacheSize and DefaultIndexCacheSize.
	MemTableSize, BlockCacheSize, IndexCacheSize int64
	// SyncWrites makes badger fsync every commit. It is off by default: weir's
	// durability comes from checkpoints, which Flush the store, not from each
	// write, and the write-back cache already holds unwritten state in memory.
	SyncWrites bool
	// Logger receives badger's log output. nil means slog.Default().
	Logger *slog.Logger
	// Checkpointed says that state is made durable only by checkpoints
	// (Checkpoint, or Prepare and Commit): Close then drops what was
	// applied since the last one, as a crash would, instead of writing it.
	// Without it Close flushes and commits everything, with no metadata.
	Checkpointed bool
}

// Badger is a durable Store backed by badger, for state larger than memory.
//
// A bounded write-back cache sits in front of badger: Apply writes into the
// cache, marking entries dirty; least recently used entries are evicted to
// make room, dirty ones being written to badger first; Get reads the cache
// first. Get and Scan always see the latest completed Apply. Only after Flush
// or Close is everything in badger (and, without SyncWrites, only in the OS
// page cache until badger syncs); state applied since the last Flush is lost
// on a crash. Durable, consistent state is the job of checkpoints, which Flush.
//
// # Checkpoints
//
// Badger runs in badger's managed mode: every write carries a version, the
// number of the checkpoint epoch it belongs to. Checkpoint writes the
// epoch's dirty entries and then, as one small transaction, a record of
// the epoch's metadata (the engine's source positions, watermarks); that
// record is the commit point. On open, every key written after the last
// committed epoch (by evictions, or by a checkpoint that crashed before its
// record) is restored to its value at that epoch, so the store is exactly
// as checkpointed, however large the epoch was. A two-phase variant,
// Prepare then Commit, serves exactly-once runs, where the checkpoint also
// commits a Kafka transaction: a prepared epoch left by a crash is kept or
// rolled back by Resolve, once the caller knows whether the transaction
// committed. The first open with checkpoints commits the store as it
// stands (empty, or as a run without checkpoints left it), so a crash
// before the first checkpoint rolls back to that.
//
// A Badger is safe for concurrent use. Writes, cache hits and evictions are
// serialized by one mutex; reads that miss the cache go to badger without it.
type Badger struct {
	db         *badger.DB
	log        *slog.Logger
	capacity   int64 // cache bound in bytes; 0 means no cache
	maxValue   int64
	maxTxn     int64 // write-backs larger than this go straight to a WriteBatch
	stopGC     context.CancelFunc
	gcDone     chan struct{}
	closeOnce  sync.Once
	closeErr   error
	mu         sync.Mutex
	closed     bool
	entries    map[string]*cacheEntry
	head, tail *cacheEntry // most and least recently used
	used       int64
	dirty      int
	// written counts the mutations applied, and their bytes, since
	// TakeWritten last took them.
	written Written
	// writeSeq counts writes to badger; a Get that read badger without the
	// lock trusts its result only if no write happened meanwhile.
	writeSeq uint64
	// ver is the version of the current epoch: writes carry it, reads see
	// it and everything older.
	ver uint64
	// committed is the version and metadata of the last committed
	// checkpoint (hasCommitted is false if there is none).
	committed    Checkpoint
	hasCommitted bool
	// prepared is a prepared checkpoint not yet committed: one found on
	// open (awaiting Resolve), or one Prepare wrote.
	prepared    Checkpoint
	hasPrepared bool
	// unresolved is set while a prepared checkpoint found on open awaits
	// Resolve; reads and writes fail until then.
	unresolved   bool
	checkpointed bool // BadgerOptions.Checkpointed
}

// Checkpoint is a committed or prepared checkpoint of a store: the version
// of the state it describes, and the metadata given with it.
type Checkpoint struct {
	Version uint64
	Meta    []byte
}

// ErrUnresolved is returned by a Badger that found a prepared checkpoint on
// open, until Resolve is called.
var ErrUnresolved = errors.New("state: a prepared checkpoint awaits Resolve")

// cacheEntry is one cached key: a value, or a tombstone when del is set. val
// is never modified once stored, so Get may hand it out.
type cacheEntry struct {
	key        string
	val        []byte
	del, dirty bool
	prev, next *cacheEntry
}

func entrySize(keyLen, valLen int) int64 {
	return int64(keyLen+valLen) + cacheEntryOverhead
}

func (e *cacheEntry) size() int64 { return entrySize(len(e.key), len(e.val)) }

// OpenBadger opens (creating if needed) the badger database in opts.Dir and
// starts its background value-log GC, which runs every minute until Close.
func OpenBadger(opts BadgerOptions) (*Badger, error) {
	if opts.Dir == "" {
		return nil, errors.New("state: BadgerOptions.Dir is required")
	}
	orDefault := func(v, def int64) int64 {
		if v == 0 {
			return def
		}
		return v
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	bo := badger.DefaultOptions(opts.Dir).
		WithLogger(slogAdapter{log.With("component", "badger")}).
		WithSyncWrites(opts.SyncWrites).
		WithMemTableSize(orDefault(opts.MemTableSize, DefaultMemTableSize)).
		WithBlockCacheSize(orDefault(opts.BlockCacheSize, DefaultBlockCacheSize)).
		WithIndexCacheSize(orDefault(opts.IndexCacheSize, DefaultIndexCacheSize)).
		WithNumVersionsToKeep(1).
		// Writes are serialized by Badger's mutex; conflict detection would
		// only cost memory.
		WithDetectConflicts(false).
		WithMetricsEnabled(false)
	db, err := badger.OpenManaged(bo)
	if err != nil {
		return nil, fmt.Errorf("state: open badger in %s: %w", opts.Dir, err)
	}
	capacity := orDefault(opts.CacheBytes, DefaultCacheBytes)
	if capacity < 0 {
		capacity = 0
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Badger{
		db:       db,
		log:      log,
		capacity: capacity,
		maxValue: bo.ValueLogFileSize,
		// Badger rejects a transaction above 15% of a memtable; stay
		// under it, allowing for badger's per-entry overhead.
		maxTxn:       bo.MemTableSize / 10,
		stopGC:       cancel,
		gcDone:       make(chan struct{}),
		entries:      make(map[string]*cacheEntry),
		ver:          db.MaxVersion() + 1,
		checkpointed: opts.Checkpointed,
	}
	if err := b.recover(); err != nil {
		cancel()
		return nil, errors.Join(fmt.Errorf("state: recovering badger in %s: %w", opts.Dir, err), db.Close())
	}
	go b.runGC(ctx)
	return b, nil
}

// recover reads the checkpoint records and rolls back whatever was written
// after the last committed checkpoint, unless a prepared checkpoint awaits
// Resolve. A checkpointed store without a committed checkpoint commits one
// with no metadata, as it stands.
func (b *Badger) recover() error {
	var err error
	if b.committed, b.hasCommitted, err = b.readRecord(committedKey); err != nil {
		return err
	}
	if b.prepared, b.hasPrepared, err = b.readRecord(preparedKey); err != nil {
		return err
	}
	if b.hasPrepared && (!b.hasCommitted || b.prepared.Version > b.committed.Version) {
		b.unresolved = true
		return nil
	}
	b.hasPrepared = false
	if !b.hasCommitted {
		if b.checkpointed {
			// The first checkpointed open: what the store holds now
			// (nothing, or what a run without checkpoints left) is
			// the checkpoint a crash before the first real one rolls
			// back to, so that writes evicted to badger before it do
			// not survive the crash.
			return b.commitLocked(nil)
		}
		return nil
	}
	return b.rollback(b.committed)
}

// readRecord reads a checkpoint record, whatever its version.
func (b *Badger) readRecord(key []byte) (Checkpoint, bool, error) { return readRecord(b.db, key) }

// readRecord reads a checkpoint record of db, whatever its version.
func readRecord(db *badger.DB, key []byte) (Checkpoint, bool, error) {
	txn := db.NewTransactionAt(math.MaxUint64, false)
	defer txn.Discard()
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return Checkpoint{}, false, nil
	}
	if err != nil {
		return Checkpoint{}, false, err
	}
	meta, err := item.ValueCopy(nil)
	if err != nil {
		return Checkpoint{}, false, err
	}
	return Checkpoint{Version: item.Version(), Meta: meta}, true, nil
}

// rollback restores every key written after checkpoint to to its value
// then, writing the restored values and the checkpoint record again at a
// new version, which becomes the committed one. Only the keys written since
// are visited (badger skips tables older than to.Version). A crash during
// rollback leaves the old record, so the next open rolls back again.
func (b *Badger) rollback(to Checkpoint) error {
	var keys [][]byte
	txn := b.db.NewTransactionAt(math.MaxUint64, false)
	io := badger.IteratorOptions{AllVersions: true, SinceTs: to.Version}
	it := txn.NewIterator(io)
	for it.Rewind(); it.Valid(); it.Next() {
		k := it.Item().Key()
		if bytes.HasPrefix(k, []byte(metaPrefix)) {
			continue
		}
		if n := len(keys); n == 0 || !bytes.Equal(keys[n-1], k) {
			keys = append(keys, it.Item().KeyCopy(nil))
		}
	}
	it.Close()
	txn.Discard()

	ver := b.db.MaxVersion() + 1
	wb := b.db.NewWriteBatchAt(ver)
	defer wb.Cancel()
	old := b.db.NewTransactionAt(to.Version, false)
	defer old.Discard()
	for _, k := range keys {
		item, err := old.Get(k)
		switch {
		case errors.Is(err, badger.ErrKeyNotFound):
			err = wb.Delete(k)
		case err == nil:
			var v []byte
			if v, err = item.ValueCopy(nil); err == nil {
				err = wb.Set(k, v)
			}
		}
		if err != nil {
			return err
		}
	}
	if err := wb.Delete(bytes.Clone(preparedKey)); err != nil {
		return err
	}
	if err := wb.Set(bytes.Clone(committedKey), to.Meta); err != nil {
		return err
	}
	if err := wb.Flush(); err != nil {
		return err
	}
	if len(keys) > 0 {
		b.log.Info("state: rolled back writes made after the last checkpoint", "keys", len(keys))
	}
	b.committed = Checkpoint{Version: ver, Meta: to.Meta}
	b.hasCommitted, b.hasPrepared, b.unresolved = true, false, false
	b.ver = ver + 1
	b.db.SetDiscardTs(ver)
	return nil
}

// ErrNoCheckpoint is returned by Rollback when the store has no committed
// checkpoint to go back to.
var ErrNoCheckpoint = errors.New("state: no committed checkpoint")

// Rollback discards everything applied since the last committed
// checkpoint, a prepared one included, as reopening after a crash would:
// the cache is emptied and every key written to badger since is restored
// to its value then. It fails with ErrNoCheckpoint if no checkpoint was
// ever committed. Nothing may be applied concurrently.
func (b *Badger) Rollback() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	if !b.hasCommitted {
		return ErrNoCheckpoint
	}
	clear(b.entries)
	b.head, b.tail, b.used, b.dirty = nil, nil, 0, 0
	b.writeSeq++
	if err := b.rollback(b.committed); err != nil {
		return fmt.Errorf("state: rolling back to the last checkpoint: %w", err)
	}
	return nil
}

// Committed returns the last committed checkpoint, as found on open or
// written since. ok is false if the store has none.
func (b *Badger) Committed() (cp Checkpoint, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.committed, b.hasCommitted
}

// Prepared returns the prepared checkpoint found on open that awaits
// Resolve. ok is false if there is none.
func (b *Badger) Prepared() (cp Checkpoint, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.prepared, b.unresolved
}

// Resolve decides the prepared checkpoint found on open: commit keeps it as
// the committed checkpoint, otherwise the store rolls back to the one
// before. Either way, writes made after it are rolled back. It does nothing
// if nothing awaits resolution.
func (b *Badger) Resolve(commit bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	if !b.unresolved {
		return nil
	}
	to := b.committed
	if commit {
		to = b.prepared
	}
	if err := b.rollback(to); err != nil {
		return fmt.Errorf("state: resolving the prepared checkpoint: %w", err)
	}
	return nil
}

// Checkpoint makes everything applied so far durable and commits it with
// meta, atomically: after a crash the store reopens exactly as of the last
// Checkpoint (or Commit). Like Flush, it keeps cached entries cached.
func (b *Badger) Checkpoint(meta []byte) error {
	if err := b.Prepare(meta); err != nil {
		return err
	}
	return b.Commit(nil)
}

// Prepare makes everything applied so far durable as a prepared checkpoint
// with meta, without committing it: a crash before Commit leaves it for
// Resolve to keep or roll back on the next open. Nothing may be applied
// between Prepare and Commit.
func (b *Badger) Prepare(meta []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.usable(); err != nil {
		return err
	}
	if err := b.flushLocked(); err != nil {
		return err
	}
	b.writeSeq++
	txn := b.db.NewTransactionAt(b.ver, true)
	defer txn.Discard()
	if err := txn.Set(bytes.Clone(preparedKey), bytes.Clone(meta)); err != nil {
		return err
	}
	if err := txn.CommitAt(b.ver, nil); err != nil {
		return fmt.Errorf("state: badger prepare: %w", err)
	}
	b.prepared, b.hasPrepared = Checkpoint{Version: b.ver, Meta: bytes.Clone(meta)}, true
	return nil
}

// Written counts a store's writes: mutations applied and the bytes of
// their keys and values. It is a plain value.
type Written struct {
	Writes, Bytes int64
}

// TakeWritten returns what was applied since the last call, and starts
// counting again. It is safe for concurrent use.
func (b *Badger) TakeWritten() Written {
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.written
	b.written = Written{}
	return w
}

// Changes calls fn for every key written since the last committed
// checkpoint, with its value now, or deleted set: after Prepare, the
// prepared epoch's changes, which a changelog records. Keys come in
// ascending order; key and value are valid only during the call. It must
// not run concurrently with Apply.
func (b *Badger) Changes(fn func(key, value []byte, deleted bool) error) error {
	b.mu.Lock()
	if err := b.usable(); err != nil {
		b.mu.Unlock()
		return err
	}
	if b.dirty > 0 {
		b.mu.Unlock()
		return errors.New("state: Changes before Prepare")
	}
	var since uint64
	if b.hasCommitted {
		since = b.committed.Version
	}
	txn := b.db.NewTransactionAt(b.ver, false)
	b.mu.Unlock()
	defer txn.Discard()
	it := txn.NewIterator(badger.IteratorOptions{AllVersions: true, SinceTs: since, PrefetchValues: false})
	defer it.Close()
	var last []byte
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		k := item.Key()
		if bytes.Equal(k, last) || bytes.HasPrefix(k, []byte(metaPrefix)) {
			continue // an older version; the newest came first
		}
		last = append(last[:0], k...)
		if item.IsDeletedOrExpired() {
			if err := fn(k, nil, true); err != nil {
				return err
			}
			continue
		}
		if err := item.Value(func(v []byte) error { return fn(k, v, false) }); err != nil {
			return err
		}
	}
	return nil
}

// Commit commits the checkpoint Prepare wrote, with meta, or with the meta
// given to Prepare when meta is nil.
func (b *Badger) Commit(meta []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.usable(); err != nil {
		return err
	}
	if !b.hasPrepared || b.prepared.Version != b.ver {
		return errors.New("state: Commit without Prepare")
	}
	if b.dirty > 0 {
		return errors.New("state: state was applied between Prepare and Commit")
	}
	b.hasPrepared = false
	if meta == nil {
		meta = b.prepared.Meta
	}
	return b.commitLocked(meta)
}

// commitLocked writes the committed record with meta at the current
// version, which must hold everything applied (flushed), and starts the
// next epoch. Call with b.mu held.
func (b *Badger) commitLocked(meta []byte) error {
	b.writeSeq++
	txn := b.db.NewTransactionAt(b.ver, true)
	defer txn.Discard()
	if err := txn.Set(bytes.Clone(committedKey), bytes.Clone(meta)); err != nil {
		return err
	}
	if err := txn.CommitAt(b.ver, nil); err != nil {
		return fmt.Errorf("state: badger commit: %w", err)
	}
	b.committed, b.hasCommitted = Checkpoint{Version: b.ver, Meta: bytes.Clone(meta)}, true
	b.db.SetDiscardTs(b.ver)
	b.ver++
	return nil
}

// usable returns why the store cannot be used now, if it cannot. Call with
// b.mu held.
func (b *Badger) usable() error {
	if b.closed {
		return ErrClosed
	}
	if b.unresolved {
		return ErrUnresolved
	}
	return nil
}

// runGC runs value-log GC every valueLogGCInterval until ctx is done.
func (b *Badger) runGC(ctx context.Context) {
	defer close(b.gcDone)
	t := time.NewTicker(valueLogGCInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for ctx.Err() == nil {
			err := b.db.RunValueLogGC(0.5)
			if err != nil {
				if !errors.Is(err, badger.ErrNoRewrite) && !errors.Is(err, badger.ErrRejected) {
					b.log.Warn("badger value-log GC failed", "err", err)
				}
				break
			}
		}
	}
}

// Get implements Store. The returned value is owned by the store, must not be
// modified, and stays valid (unchanged) even after the key is next written.
// Get is safe for concurrent use; it returns ErrClosed after Close.
func (b *Badger) Get(key []byte) ([]byte, bool, error) {
	b.mu.Lock()
	if err := b.usable(); err != nil {
		b.mu.Unlock()
		return nil, false, err
	}
	if e, ok := b.entries[string(key)]; ok {
		b.touch(e)
		b.mu.Unlock()
		return e.val, !e.del, nil
	}
	seq, ver := b.writeSeq, b.ver
	b.mu.Unlock()

	val, found, err := b.readDB(key, ver)

	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, false, ErrClosed
	}
	if e, ok := b.entries[string(key)]; ok {
		// Written (or read) meanwhile; the cache is authoritative.
		b.touch(e)
		return e.val, !e.del, nil
	}
	if b.writeSeq != seq {
		// Badger was written during the read: read again, holding the lock.
		val, found, err = b.readDB(key, b.ver)
	}
	if err != nil {
		return nil, false, err
	}
	if b.capacity > 0 {
		e := &cacheEntry{key: string(key), val: val, del: !found}
		if e.size() <= b.capacity && b.makeRoom(e.size()) == nil {
			b.insert(e)
		}
	}
	return val, found, nil
}

func (b *Badger) readDB(key []byte, ver uint64) ([]byte, bool, error) {
	txn := b.db.NewTransactionAt(ver, false)
	defer txn.Discard()
	var val []byte
	item, err := txn.Get(key)
	if err == nil {
		val, err = item.ValueCopy(nil)
	}
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("state: badger get: %w", err)
	}
	return val, true, nil
}

// Apply implements Store: the batch becomes visible to Get and Scan
// atomically, and a failed Apply changes nothing. It copies keys and values,
// so the caller may reuse them once it returns. Apply is safe for concurrent
// use; it returns ErrClosed after Close.
//
// A batch that fits in the cache only updates the cache (evicting, and writing
// back, older entries first). A larger batch, or any batch when the cache is
// disabled, is written straight to badger in one transaction; if it exceeds
// badger's transaction size limit it is written with a WriteBatch, which
// commits in several transactions, so a crash in the middle can leave part of
// it on disk. Readers never see such a partial batch.
func (b *Badger) Apply(muts []Mutation) error {
	if len(muts) == 0 {
		return nil
	}
	var size, raw int64
	for i := range muts {
		m := &muts[i]
		if err := b.checkMutation(m); err != nil {
			return err
		}
		if m.Delete {
			size += entrySize(len(m.Key), 0)
		} else {
			size += entrySize(len(m.Key), len(m.Value))
		}
		raw += int64(len(m.Key) + len(m.Value))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.usable(); err != nil {
		return err
	}
	b.written.Writes += int64(len(muts))
	b.written.Bytes += raw
	if size > b.capacity {
		return b.writeAtLocked(b.ver, muts, size)
	}
	if err := b.makeRoom(size); err != nil {
		return err
	}
	for _, m := range muts {
		e := &cacheEntry{key: string(m.Key), del: m.Delete, dirty: true}
		if !m.Delete {
			e.val = bytes.Clone(m.Value)
			if e.val == nil {
				e.val = []byte{}
			}
		}
		if old, ok := b.entries[e.key]; ok {
			b.remove(old)
		}
		b.insert(e)
	}
	return nil
}

// writeAtLocked writes muts, of size bytes in the cache's measure,
// straight to badger at version ver, dropping the keys from the cache.
// Call with b.mu held.
func (b *Badger) writeAtLocked(ver uint64, muts []Mutation, size int64) error {
	if err := b.writeDB(ver, len(muts), size, func(yield func(key, val []byte, del bool) error) error {
		for _, m := range muts {
			if err := yield(m.Key, m.Value, m.Delete); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	for _, m := range muts {
		if e, ok := b.entries[string(m.Key)]; ok {
			b.remove(e)
		}
	}
	return nil
}

// ApplyCommitted writes a batch into the last committed checkpoint, for
// bulk writes of keys that nothing reads or writes meanwhile, and that a
// rollback need not undo because writing them again gives the same
// state (a replay of a changelog into keys not in use, as a task's
// catching up does). The batch goes straight to badger, at the committed
// checkpoint's version: Changes does not list it, Rollback and a reopen
// after a crash keep it, and the cache is left to the keys in use,
// losing any of the batch's. A later write of one of its keys, by Apply
// or ApplyCommitted after the next checkpoint, shadows it as usual. It
// may be called at any time, between Prepare and Commit too. Without a
// committed checkpoint it is Apply without the cache.
func (b *Badger) ApplyCommitted(muts []Mutation) error {
	var size int64
	for i := range muts {
		m := &muts[i]
		if err := b.checkMutation(m); err != nil {
			return err
		}
		size += entrySize(len(m.Key), len(m.Value))
	}
	if len(muts) == 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.usable(); err != nil {
		return err
	}
	ver := b.ver
	if b.hasCommitted {
		ver = b.committed.Version
	}
	return b.writeAtLocked(ver, muts, size)
}

func (b *Badger) checkMutation(m *Mutation) error {
	switch {
	case len(m.Key) == 0:
		return errors.New("state: badger: empty key")
	case len(m.Key) > maxBadgerKey:
		return fmt.Errorf("state: badger: key of %d bytes exceeds %d", len(m.Key), maxBadgerKey)
	case bytes.HasPrefix(m.Key, []byte(badgerPrefix)):
		return fmt.Errorf("state: badger: key %q uses reserved prefix %q", m.Key, badgerPrefix)
	case bytes.HasPrefix(m.Key, []byte(metaPrefix)):
		return fmt.Errorf("state: badger: key %q uses reserved prefix %q", m.Key, metaPrefix)
	case !m.Delete && int64(len(m.Value)) > b.maxValue:
		return fmt.Errorf("state: badger: value of %d bytes exceeds %d", len(m.Value), b.maxValue)
	}
	return nil
}

// writeDB writes n entries of about size bytes, produced by each, to badger
// in one transaction, or with a WriteBatch (several transactions) if they are
// too big for one. Call with b.mu held.
func (b *Badger) writeDB(ver uint64, n int, size int64, each func(yield func(key, val []byte, del bool) error) error) error {
	if n == 0 {
		return nil
	}
	b.writeSeq++
	err := badger.ErrTxnTooBig
	if size <= b.maxTxn {
		txn := b.db.NewTransactionAt(ver, true)
		err = each(func(key, val []byte, del bool) error {
			if del {
				return txn.Delete(key)
			}
			return txn.Set(key, val)
		})
		if err == nil {
			err = txn.CommitAt(ver, nil)
		}
		txn.Discard()
	}
	if errors.Is(err, badger.ErrTxnTooBig) {
		wb := b.db.NewWriteBatchAt(ver)
		defer wb.Cancel()
		err = each(func(key, val []byte, del bool) error {
			// WriteBatch keeps the slices until it commits; ours may
			// be reused by the caller, so hand it copies.
			if del {
				return wb.Delete(bytes.Clone(key))
			}
			return wb.Set(bytes.Clone(key), bytes.Clone(val))
		})
		if err == nil {
			err = wb.Flush()
		}
	}
	if err != nil {
		return fmt.Errorf("state: badger write: %w", err)
	}
	return nil
}

// makeRoom evicts least recently used entries until need more bytes fit in
// the cache, writing dirty victims to badger in one write first. If that
// write fails nothing is evicted. Once it has to evict, it frees an extra
// eighth of the cache, so write-backs go to badger in batches rather than a
// commit per Apply. Call with b.mu held.
func (b *Badger) makeRoom(need int64) error {
	if b.used+need <= b.capacity {
		return nil
	}
	target := b.capacity - min(b.capacity/8, b.maxTxn/2)
	if need > target {
		target = b.capacity
	}
	var victims []*cacheEntry
	dirty := 0
	freed, dirtyBytes := int64(0), int64(0)
	for e := b.tail; e != nil && b.used-freed+need > target; e = e.prev {
		victims = append(victims, e)
		freed += e.size()
		if e.dirty {
			dirty++
			dirtyBytes += e.size()
		}
	}
	if err := b.writeDB(b.ver, dirty, dirtyBytes, func(yield func(key, val []byte, del bool) error) error {
		for _, e := range victims {
			if e.dirty {
				if err := yield([]byte(e.key), e.val, e.del); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		return err
	}
	for _, e := range victims {
		b.remove(e)
	}
	return nil
}

// Flush writes every dirty cache entry to badger, in one transaction if it
// fits and otherwise in a WriteBatch of several. Cached entries stay cached,
// now clean. Flush is safe for concurrent use; it returns ErrClosed after
// Close.
func (b *Badger) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.usable(); err != nil {
		return err
	}
	return b.flushLocked()
}

func (b *Badger) flushLocked() error {
	var size int64
	for e := b.head; e != nil; e = e.next {
		if e.dirty {
			size += e.size()
		}
	}
	if err := b.writeDB(b.ver, b.dirty, size, func(yield func(key, val []byte, del bool) error) error {
		for e := b.head; e != nil; e = e.next {
			if e.dirty {
				if err := yield([]byte(e.key), e.val, e.del); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		return err
	}
	for e := b.head; e != nil; e = e.next {
		e.dirty = false
	}
	b.dirty = 0
	return nil
}

// Close flushes the cache, stops value-log GC and closes badger. Every other
// method returns ErrClosed afterwards; calling Close again returns the first
// call's result. If the flush fails, badger is still closed and the unflushed
// state is lost. Close is safe for concurrent use, but calls racing with it
// may fail with ErrClosed or a badger error, and it must not run while a Scan
// is iterating.
func (b *Badger) Close() error {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		var flushErr error
		if !b.checkpointed && !b.unresolved {
			flushErr = b.flushLocked()
			if flushErr == nil && b.hasCommitted {
				// A store once checkpointed rolls back to its last
				// checkpoint on open: commit what this run wrote.
				b.hasPrepared = false
				flushErr = b.commitLocked(nil)
			}
		}
		b.closed = true
		b.entries, b.head, b.tail, b.used, b.dirty = nil, nil, nil, 0, 0
		b.mu.Unlock()
		b.stopGC()
		<-b.gcDone
		b.closeErr = errors.Join(flushErr, b.db.Close())
	})
	return b.closeErr
}

// Scan calls fn for each key with the given prefix that holds a value, in
// ascending key order, seeing the state as of the call: the latest Apply,
// whether still in the cache (including deletions) or already in badger. key
// and value are valid only during the call and must not be modified. fn may
// call the store, but Close must not be called until Scan returns. Scan stops at, and returns, fn's first error. It is safe for
// concurrent use and returns ErrClosed after Close.
func (b *Badger) Scan(prefix []byte, fn func(key, value []byte) error) error {
	b.mu.Lock()
	if err := b.usable(); err != nil {
		b.mu.Unlock()
		return err
	}
	// Snapshot the cached entries under the prefix and badger together, so
	// the two agree. Cached values are immutable, so sharing them is safe.
	var cached []*cacheEntry
	for k, e := range b.entries {
		if strings.HasPrefix(k, string(prefix)) {
			cached = append(cached, e)
		}
	}
	txn := b.db.NewTransactionAt(b.ver, false)
	b.mu.Unlock()
	defer txn.Discard()
	slices.SortFunc(cached, func(x, y *cacheEntry) int { return strings.Compare(x.key, y.key) })

	io := badger.DefaultIteratorOptions
	io.Prefix = prefix
	it := txn.NewIterator(io)
	defer it.Close()
	it.Seek(prefix)
	for {
		var dbKey []byte
		if it.ValidForPrefix(prefix) {
			dbKey = it.Item().Key()
		}
		if dbKey != nil && bytes.HasPrefix(dbKey, []byte(metaPrefix)) {
			it.Next()
			continue
		}
		if dbKey == nil && len(cached) == 0 {
			return nil
		}
		if len(cached) > 0 {
			c := cached[0]
			cmp := -1
			if dbKey != nil {
				cmp = strings.Compare(c.key, string(dbKey))
			}
			if cmp <= 0 {
				cached = cached[1:]
				if cmp == 0 {
					it.Next()
				}
				if !c.del {
					if err := fn([]byte(c.key), c.val); err != nil {
						return err
					}
				}
				continue
			}
		}
		val, err := it.Item().ValueCopy(nil)
		if err != nil {
			return fmt.Errorf("state: badger scan: %w", err)
		}
		if err := fn(dbKey, val); err != nil {
			return err
		}
		it.Next()
	}
}

// touch marks e most recently used. Call with b.mu held.
func (b *Badger) touch(e *cacheEntry) {
	if b.head == e {
		return
	}
	b.unlink(e)
	b.pushFront(e)
}

func (b *Badger) insert(e *cacheEntry) {
	b.entries[e.key] = e
	b.used += e.size()
	if e.dirty {
		b.dirty++
	}
	b.pushFront(e)
}

func (b *Badger) remove(e *cacheEntry) {
	delete(b.entries, e.key)
	b.used -= e.size()
	if e.dirty {
		b.dirty--
	}
	b.unlink(e)
}

func (b *Badger) pushFront(e *cacheEntry) {
	e.prev, e.next = nil, b.head
	if b.head != nil {
		b.head.prev = e
	}
	b.head = e
	if b.tail == nil {
		b.tail = e
	}
}

func (b *Badger) unlink(e *cacheEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		b.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		b.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

// slogAdapter routes badger's logging to slog.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Errorf(f string, args ...any) {
	a.l.Error(strings.TrimSpace(fmt.Sprintf(f, args...)))
}

func (a slogAdapter) Warningf(f string, args ...any) {
	a.l.Warn(strings.TrimSpace(fmt.Sprintf(f, args...)))
}

// Infof logs at debug level: badger's info messages (tables opened, levels)
// are about its internals, not the pipeline.
func (a slogAdapter) Infof(f string, args ...any) {
	a.l.Debug(strings.TrimSpace(fmt.Sprintf(f, args...)))
}

func (a slogAdapter) Debugf(f string, args ...any) {
	a.l.Debug(strings.TrimSpace(fmt.Sprintf(f, args...)))
}
