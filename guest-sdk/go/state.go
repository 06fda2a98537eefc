package weir

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/weir-stream/weir/abi"
)

// StateKind is the first byte of every state key the SDK writes, telling the
// kinds of state apart: abi.StateKind, whose package defines the slot
// convention every weir SDK shares.
type StateKind = abi.StateKind

// The kinds of state (abi.ValueStateKind, abi.MapStateKind and
// abi.ListStateKind).
const (
	ValueStateKind = abi.ValueStateKind
	MapStateKind   = abi.MapStateKind
	ListStateKind  = abi.ListStateKind
)

// AppendStateKey appends to dst the key under which the SDK stores a state
// entry: abi.AppendStateKey, the convention shared by every weir guest SDK,
// so that state written by a plugin in one language can be read by its
// rewrite in another. mapKey is a MapState entry's key, or a ListState
// element's index suffix (abi.AppendStateListIndex); for ValueStateKind it
// is not used and should be nil. The host adds its own scoping (operator
// and record key) around this key.
//
// Typed values are stored as abi.StateNumberSize bytes: a float64 as the
// little-endian bits of its IEEE-754 binary64 form (math.Float64bits), an
// int64 as its little-endian two's complement.
func AppendStateKey(dst []byte, kind StateKind, name string, mapKey []byte) []byte {
	return abi.AppendStateKey(dst, kind, name, mapKey)
}

// StateError reports a state call the host refused. It is a plain value,
// not modified after it is returned.
type StateError struct {
	Call   string // the host function: abi.ImportStateGet, ImportStatePut or ImportStateDelete
	Name   string // the state's name
	Status int32  // the negative status the host returned; see abi.StatusText
}

// Error implements error.
func (e *StateError) Error() string {
	return "weir: " + e.Call + " on state " + strconv.Quote(e.Name) + ": " + abi.StatusText(e.Status)
}

// SizeError reports a typed read of a state value whose length is not the
// type's. It is a plain value, not modified after it is returned.
type SizeError struct {
	Name string // the state's name
	Type string // "float64" or "int64"
	Len  int    // the stored value's length
}

// Error implements error.
func (e *SizeError) Error() string {
	return "weir: state " + strconv.Quote(e.Name) + " holds " + strconv.Itoa(e.Len) + " bytes, not an 8-byte " + e.Type
}

// scratch buffers shared by all state calls (the host calls the module from
// one thread). val is where state_get copies values, so a returned value is
// valid until the next state call.
var stateBuf struct {
	key []byte
	val []byte
	num [abi.StateNumberSize]byte
}

// stateGetTries bounds the grow-and-retry loop of stateGet.
const stateGetTries = 4

func stateGet(r *Record, key []byte, name string) ([]byte, bool, error) {
	if cap(stateBuf.val) == 0 {
		stateBuf.val = make([]byte, 256)
	}
	buf := stateBuf.val[:cap(stateBuf.val)]
	for range stateGetTries {
		n := host.stateGet(r.index, key, buf)
		switch {
		case n == abi.StatusNotFound:
			return nil, false, nil
		case n < 0:
			return nil, false, &StateError{Call: abi.ImportStateGet, Name: name, Status: n}
		case int(n) <= len(buf):
			return buf[:n:n], true, nil
		}
		// The value is longer than the buffer: grow it and ask again.
		buf = make([]byte, n)
		stateBuf.val = buf
	}
	return nil, false, &StateError{Call: abi.ImportStateGet, Name: name, Status: abi.StatusTooLarge}
}

func statePut(r *Record, key, value []byte, name string) error {
	if s := host.statePut(r.index, key, value); s < 0 {
		return &StateError{Call: abi.ImportStatePut, Name: name, Status: s}
	}
	return nil
}

func stateDelete(r *Record, key []byte, name string) error {
	if s := host.stateDelete(r.index, key); s < 0 {
		return &StateError{Call: abi.ImportStateDelete, Name: name, Status: s}
	}
	return nil
}

func getUint64(r *Record, key []byte, name, typ string) (uint64, bool, error) {
	v, ok, err := stateGet(r, key, name)
	if !ok || err != nil {
		return 0, false, err
	}
	if len(v) != abi.StateNumberSize {
		return 0, false, &SizeError{Name: name, Type: typ, Len: len(v)}
	}
	return binary.LittleEndian.Uint64(v), true, nil
}

func putUint64(r *Record, key []byte, name string, u uint64) error {
	binary.LittleEndian.PutUint64(stateBuf.num[:], u)
	return statePut(r, key, stateBuf.num[:], name)
}

// ValueState is one named value of state per record key.
//
// Create ValueStates once, typically in package variables; a ValueState is
// immutable and its methods may be called from any registered batch
// function (not Init, which has no record). Slices returned by Get are
// valid until the next state call of any state object.
type ValueState struct {
	name string
	key  []byte
}

// NewValueState returns the value state called name. Its key is
// AppendStateKey(nil, ValueStateKind, name, nil).
func NewValueState(name string) *ValueState {
	return &ValueState{name: name, key: AppendStateKey(nil, ValueStateKind, name, nil)}
}

// Name returns the state's name.
func (s *ValueState) Name() string { return s.name }

// Get returns the value stored for r's key, and whether there is one.
func (s *ValueState) Get(r *Record) ([]byte, bool, error) {
	return stateGet(r, s.key, s.name)
}

// Put stores v for r's key.
func (s *ValueState) Put(r *Record, v []byte) error {
	return statePut(r, s.key, v, s.name)
}

// Delete removes the value stored for r's key, if any.
func (s *ValueState) Delete(r *Record) error {
	return stateDelete(r, s.key, s.name)
}

// GetFloat64 returns the float64 stored for r's key by PutFloat64. A stored
// value that is not 8 bytes long is a *SizeError.
func (s *ValueState) GetFloat64(r *Record) (float64, bool, error) {
	u, ok, err := getUint64(r, s.key, s.name, "float64")
	return math.Float64frombits(u), ok, err
}

// PutFloat64 stores f for r's key as 8 little-endian bytes of its IEEE-754
// bits.
func (s *ValueState) PutFloat64(r *Record, f float64) error {
	return putUint64(r, s.key, s.name, math.Float64bits(f))
}

// GetInt64 returns the int64 stored for r's key by PutInt64. A stored value
// that is not 8 bytes long is a *SizeError.
func (s *ValueState) GetInt64(r *Record) (int64, bool, error) {
	u, ok, err := getUint64(r, s.key, s.name, "int64")
	return int64(u), ok, err
}

// PutInt64 stores i for r's key as 8 little-endian bytes.
func (s *ValueState) PutInt64(r *Record, i int64) error {
	return putUint64(r, s.key, s.name, uint64(i))
}

// MapState is a named map of state per record key: for each record key, a
// set of entries, each under its own entry key.
//
// Create MapStates once, typically in package variables; a MapState is
// immutable and its methods may be called from any registered batch
// function (not Init, which has no record). Slices returned by Get are
// valid until the next state call of any state object. Entry keys are
// copied; they may be any bytes, including empty.
type MapState struct {
	name string
}

// NewMapState returns the map state called name. An entry's key is
// AppendStateKey(nil, MapStateKind, name, entryKey).
func NewMapState(name string) *MapState { return &MapState{name: name} }

// Name returns the state's name.
func (s *MapState) Name() string { return s.name }

func (s *MapState) key(entry []byte) []byte {
	stateBuf.key = AppendStateKey(stateBuf.key[:0], MapStateKind, s.name, entry)
	return stateBuf.key
}

// Get returns the entry under key for r's key, and whether there is one.
func (s *MapState) Get(r *Record, key []byte) ([]byte, bool, error) {
	return stateGet(r, s.key(key), s.name)
}

// Put stores v as the entry under key for r's key.
func (s *MapState) Put(r *Record, key, v []byte) error {
	return statePut(r, s.key(key), v, s.name)
}

// Delete removes the entry under key for r's key, if any.
func (s *MapState) Delete(r *Record, key []byte) error {
	return stateDelete(r, s.key(key), s.name)
}

// GetFloat64 returns the float64 stored under key by PutFloat64.
func (s *MapState) GetFloat64(r *Record, key []byte) (float64, bool, error) {
	u, ok, err := getUint64(r, s.key(key), s.name, "float64")
	return math.Float64frombits(u), ok, err
}

// PutFloat64 stores f under key as 8 little-endian bytes of its IEEE-754
// bits.
func (s *MapState) PutFloat64(r *Record, key []byte, f float64) error {
	return putUint64(r, s.key(key), s.name, math.Float64bits(f))
}

// GetInt64 returns the int64 stored under key by PutInt64.
func (s *MapState) GetInt64(r *Record, key []byte) (int64, bool, error) {
	u, ok, err := getUint64(r, s.key(key), s.name, "int64")
	return int64(u), ok, err
}

// PutInt64 stores i under key as 8 little-endian bytes.
func (s *MapState) PutInt64(r *Record, key []byte, i int64) error {
	return putUint64(r, s.key(key), s.name, uint64(i))
}

// ListState is one named list of values per record key, stored one entry
// per element, so that Add costs two state writes however long the list
// is (Flink's ListState).
//
// Create ListStates once, typically in package variables; a ListState is
// immutable and its methods may be called from any registered batch
// function. Slices returned by Get and passed to Range's function are
// valid until the next state call of any state object.
type ListState struct {
	name string
}

// NewListState returns the list state called name; see AppendStateKey for
// its keys.
func NewListState(name string) *ListState { return &ListState{name: name} }

// Name returns the state's name.
func (s *ListState) Name() string { return s.name }

// key returns the key of element i, or of the length for i < 0.
func (s *ListState) key(i int64) []byte {
	k := abi.AppendStateKey(stateBuf.key[:0], ListStateKind, s.name, nil)
	if i >= 0 {
		k = abi.AppendStateListIndex(k, uint64(i))
	}
	stateBuf.key = k
	return k
}

// Len returns the number of elements of r's key's list.
func (s *ListState) Len(r *Record) (int, error) {
	u, _, err := getUint64(r, s.key(-1), s.name, "int64")
	return int(u), err
}

// Add appends v to r's key's list.
func (s *ListState) Add(r *Record, v []byte) error {
	n, err := s.Len(r)
	if err != nil {
		return err
	}
	if err := statePut(r, s.key(int64(n)), v, s.name); err != nil {
		return err
	}
	return putUint64(r, s.key(-1), s.name, uint64(n+1))
}

// Get returns element i of r's key's list, and whether there is one.
func (s *ListState) Get(r *Record, i int) ([]byte, bool, error) {
	if i < 0 {
		return nil, false, nil
	}
	return stateGet(r, s.key(int64(i)), s.name)
}

// Range calls fn with each element of r's key's list, in order, stopping at
// fn's first error, which it returns. fn must not make state calls.
func (s *ListState) Range(r *Record, fn func(i int, v []byte) error) error {
	n, err := s.Len(r)
	if err != nil {
		return err
	}
	for i := range n {
		v, ok, err := stateGet(r, s.key(int64(i)), s.name)
		if err != nil {
			return err
		}
		if ok {
			if err := fn(i, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// Clear empties r's key's list.
func (s *ListState) Clear(r *Record) error {
	n, err := s.Len(r)
	if err != nil {
		return err
	}
	for i := range n {
		if err := stateDelete(r, s.key(int64(i)), s.name); err != nil {
			return err
		}
	}
	return stateDelete(r, s.key(-1), s.name)
}
