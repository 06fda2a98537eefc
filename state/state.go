package state

import (
	"encoding/binary"
	"slices"
	"strings"
	"sync"
)

// Store is a keyed state backend. Keys are opaque byte strings; the host
// composes them with Key so that state is scoped per operator and record key.
//
// Implementations must be safe for concurrent use. Get's result is owned by
// the store and must not be modified; it stays valid until the key is next
// written. Apply makes a batch of mutations visible atomically: a reader sees
// all of them or none.
type Store interface {
	Get(key []byte) (value []byte, found bool, err error)
	Apply(muts []Mutation) error
}

// Scanner is implemented by stores that can iterate their keys by prefix, as
// restoring window state needs. Memory and Badger implement it.
//
// Scan calls fn for each key starting with prefix, in ascending byte order,
// seeing every Apply completed before the call. key and value are valid only
// during the call and must not be modified. Scan stops at, and returns, fn's
// first error. Implementations must be safe for concurrent use; fn may call
// the store.
type Scanner interface {
	Scan(prefix []byte, fn func(key, value []byte) error) error
}

// Checkpointer is implemented by stores that take consistent checkpoints
// (Badger): Checkpoint makes everything applied so far durable, with meta,
// atomically; Prepare and Commit do the same in two steps, for a caller
// that must commit something else (a Kafka transaction) in between, and
// may commit with other meta (nil keeps Prepare's). Changes lists, after
// Prepare, what the epoch changed. Committed returns the last committed
// checkpoint. Nothing may be applied while a checkpoint is taken.
type Checkpointer interface {
	Checkpoint(meta []byte) error
	Prepare(meta []byte) error
	Changes(fn func(key, value []byte, deleted bool) error) error
	Commit(meta []byte) error
	Committed() (Checkpoint, bool)
}

var (
	_ Checkpointer = (*Badger)(nil)
	_ Scanner      = (*Memory)(nil)
	_ Scanner      = (*Badger)(nil)
	_ Store        = (*Memory)(nil)
	_ Store        = (*Badger)(nil)
)

// Mutation is one write in a batch given to Store.Apply. A Delete mutation
// ignores Value.
type Mutation struct {
	Key    []byte
	Value  []byte
	Delete bool
}

// Key appends to dst the store key for state named userKey, kept by operator
// for the record key recordKey. Each part is length-prefixed, so no choice of
// parts can collide with another.
func Key(dst []byte, operator string, recordKey, userKey []byte) []byte {
	dst = OperatorPrefix(dst, operator)
	dst = binary.AppendUvarint(dst, uint64(len(recordKey)))
	dst = append(dst, recordKey...)
	return append(dst, userKey...)
}

// OperatorPrefix appends to dst the prefix every Key of operator starts
// with.
func OperatorPrefix(dst []byte, operator string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(operator)))
	return append(dst, operator...)
}

// RecordKey returns the record key of a Key whose operator prefix (see
// OperatorPrefix) was cut off, and false if rest is malformed.
func RecordKey(rest []byte) ([]byte, bool) {
	rk, _, ok := SplitRest(rest)
	return rk, ok
}

// SplitRest splits a Key whose operator prefix was cut off into its
// record key and user key, and returns false if rest is malformed. Both
// alias rest.
func SplitRest(rest []byte) (recordKey, userKey []byte, ok bool) {
	n, w := binary.Uvarint(rest)
	if w <= 0 || uint64(len(rest)-w) < n {
		return nil, nil, false
	}
	return rest[w : w+int(n)], rest[w+int(n):], true
}

// SplitKey splits a Key into its operator, record key and user key, and
// returns false if k is malformed. The keys alias k.
func SplitKey(k []byte) (operator string, recordKey, userKey []byte, ok bool) {
	n, w := binary.Uvarint(k)
	if w <= 0 || uint64(len(k)-w) < n {
		return "", nil, nil, false
	}
	recordKey, userKey, ok = SplitRest(k[w+int(n):])
	if !ok {
		return "", nil, nil, false
	}
	return string(k[w : w+int(n)]), recordKey, userKey, true
}

// Memory is a Store held in a Go map. It is safe for concurrent use. It keeps
// nothing across restarts.
type Memory struct {
	mu sync.RWMutex
	m  map[string][]byte
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{m: make(map[string][]byte)} }

// Get implements Store.
func (s *Memory) Get(key []byte) ([]byte, bool, error) {
	s.mu.RLock()
	v, ok := s.m[string(key)]
	s.mu.RUnlock()
	return v, ok, nil
}

// Apply implements Store. It copies keys and values.
func (s *Memory) Apply(muts []Mutation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range muts {
		if m.Delete {
			delete(s.m, string(m.Key))
			continue
		}
		s.m[string(m.Key)] = append([]byte{}, m.Value...)
	}
	return nil
}

// Len returns the number of keys held.
func (s *Memory) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.m)
}

// Scan implements Scanner. It iterates a snapshot taken when called, so fn may
// call the store.
func (s *Memory) Scan(prefix []byte, fn func(key, value []byte) error) error {
	type kv struct {
		k string
		v []byte
	}
	s.mu.RLock()
	var snap []kv
	for k, v := range s.m {
		if strings.HasPrefix(k, string(prefix)) {
			snap = append(snap, kv{k, v})
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(snap, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	for _, e := range snap {
		if err := fn([]byte(e.k), e.v); err != nil {
			return err
		}
	}
	return nil
}
