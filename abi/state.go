package abi

import "encoding/binary"

// The state slot convention. The host treats the slot key a plugin passes
// to ImportStateGet, ImportStatePut and ImportStateDelete as opaque bytes,
// scoped by the operator and the record key. So that state written by a
// plugin in one language can be read after it is replaced by a plugin in
// another, every guest SDK names its slots as AppendStateKey does and
// stores its numbers in StateNumberSize bytes (ABI.md §6, "Slot naming
// convention for SDKs"). This file is the one definition of that
// convention; the C, Rust and AssemblyScript SDKs take these constants from
// the files abi/internal/abigen generates.

// StateKind is the first byte of every slot key an SDK writes, telling the
// kinds of state apart. It is a plain value.
type StateKind byte

// The kinds of state.
const (
	// ValueStateKind is the kind of a value state: one value per record
	// key.
	ValueStateKind StateKind = 'v'
	// MapStateKind is the kind of a map state: entries under their own
	// entry keys, per record key.
	MapStateKind StateKind = 'm'
	// ListStateKind is the kind of a list state: a length and one slot per
	// element, per record key.
	ListStateKind StateKind = 'l'
)

// StateListIndexSize is the length of a list element's suffix: the
// element's index, from 0, as big-endian bytes (AppendStateListIndex).
const StateListIndexSize = 8

// StateNumberSize is the length of a number stored by an SDK's typed state
// helpers: a float as the little-endian bytes of its IEEE-754 binary64
// bits, an integer as its 64-bit little-endian two's complement. A list
// state's length is such an integer.
const StateNumberSize = 8

// AppendStateKey appends to dst the slot key of a state entry. The exact
// bytes are:
//
//	ValueStateKind, name n:           'v' (0x76), then the bytes of n.
//	MapStateKind, name n, entry k:    'm' (0x6d), then len(n) as an
//	                                  unsigned LEB128 varint
//	                                  (binary.AppendUvarint), then the
//	                                  bytes of n, then those of k,
//	                                  unchanged.
//	ListStateKind, name n:            'l' (0x6c), len(n) as a varint, n,
//	                                  then nothing for the slot holding the
//	                                  list's length, or for element i the
//	                                  suffix AppendStateListIndex(nil, i).
//
// suffix is the map entry's key or the list element's suffix; for
// ValueStateKind it is not used and should be nil. The length prefix makes
// the keys of different names distinct whatever the suffix: "ab" with
// entry "c" is not "a" with entry "bc". Names are UTF-8 in every SDK.
func AppendStateKey(dst []byte, kind StateKind, name string, suffix []byte) []byte {
	dst = append(dst, byte(kind))
	if kind == ValueStateKind {
		return append(dst, name...)
	}
	dst = binary.AppendUvarint(dst, uint64(len(name)))
	dst = append(dst, name...)
	return append(dst, suffix...)
}

// AppendStateListIndex appends the suffix of list element i:
// StateListIndexSize bytes, big-endian, so that a list's elements sort in
// order after its length slot.
func AppendStateListIndex(dst []byte, i uint64) []byte {
	return binary.BigEndian.AppendUint64(dst, i)
}

// ParseStateListIndex returns the index a list element's suffix (written
// by AppendStateListIndex) holds; ok is false for a suffix that is not
// StateListIndexSize bytes, such as the empty suffix of a list's length.
func ParseStateListIndex(suffix []byte) (i uint64, ok bool) {
	if len(suffix) != StateListIndexSize {
		return 0, false
	}
	return binary.BigEndian.Uint64(suffix), true
}

// ParseStateKey splits a slot key written by AppendStateKey into its kind,
// name and suffix (the map entry key, or a list element's index suffix;
// empty for a value state and for a list's length). name and suffix alias
// key. ok is false for a key that does not follow the convention: empty,
// of another kind, with a name length beyond the key, or a list key whose
// suffix is neither empty nor StateListIndexSize bytes.
func ParseStateKey(key []byte) (kind StateKind, name, suffix []byte, ok bool) {
	if len(key) == 0 {
		return 0, nil, nil, false
	}
	kind = StateKind(key[0])
	switch kind {
	case ValueStateKind:
		return kind, key[1:], nil, true
	case MapStateKind, ListStateKind:
		n, m := binary.Uvarint(key[1:])
		if m <= 0 || n > uint64(len(key)-1-m) {
			return 0, nil, nil, false
		}
		rest := key[1+m:]
		name, suffix = rest[:n], rest[n:]
		if kind == ListStateKind && len(suffix) != 0 && len(suffix) != StateListIndexSize {
			return 0, nil, nil, false
		}
		return kind, name, suffix, true
	}
	return 0, nil, nil, false
}
