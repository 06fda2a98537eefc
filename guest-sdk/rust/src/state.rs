//! Keyed state, through the host's `state_get`, `state_put` and
//! `state_delete`.
//!
//! The host scopes every entry to the operator and to the key of the record
//! the call is made for, so a function sees only the current record key's
//! state. State calls work in map, flat_map and filter functions, not in
//! init or aggregate functions (the host answers "no record context").
//!
//! Slot names follow the convention shared by every weir SDK
//! ([`append_state_key`]), and numbers are stored as 8 bytes little-endian,
//! so state written by a plugin in one language can be read by its rewrite
//! in another.

use crate::abi;
use crate::host;
use crate::record::Record;
use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;

/// The first byte of every state key an SDK writes ([`abi::STATE_KIND_VALUE`]
/// and the others, generated from package abi).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateKind {
    /// A [`ValueState`]: `'v'`.
    Value = abi::STATE_KIND_VALUE as isize,
    /// A [`MapState`]: `'m'`.
    Map = abi::STATE_KIND_MAP as isize,
    /// A [`ListState`]: `'l'`.
    List = abi::STATE_KIND_LIST as isize,
}

// Numbers and list indexes are stored as the bytes of a u64, i64 or f64.
const _: () = assert!(abi::STATE_NUMBER_SIZE == 8 && abi::STATE_LIST_INDEX_SIZE == 8);

/// Appends to `dst` the key under which state is stored, the convention
/// shared by every weir guest SDK (package abi's `AppendStateKey`):
///
/// - value state `name`: `'v'`, then the UTF-8 bytes of `name`;
/// - map state `name`, entry `k`: `'m'`, `name`'s length as an unsigned
///   LEB128 varint, `name`, then the bytes of `k`;
/// - list state `name`: `'l'`, the varint length and `name`, then nothing
///   for the list's length (an i64), or for element `i` its index as 8 bytes
///   big-endian (passed as `suffix`).
///
/// For [`StateKind::Value`], `suffix` is ignored.
pub fn append_state_key(dst: &mut Vec<u8>, kind: StateKind, name: &str, suffix: &[u8]) {
    dst.push(kind as u8);
    if kind == StateKind::Value {
        dst.extend_from_slice(name.as_bytes());
        return;
    }
    let mut n = name.len() as u64;
    while n >= 0x80 {
        dst.push((n as u8) | 0x80);
        n >>= 7;
    }
    dst.push(n as u8);
    dst.extend_from_slice(name.as_bytes());
    dst.extend_from_slice(suffix);
}

/// A state call the host refused, or a typed read of a value of the wrong
/// size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateError {
    /// The host returned a negative status.
    Host {
        /// "state_get", "state_put" or "state_delete".
        call: &'static str,
        /// The state's name.
        name: String,
        /// The status (ABI section 6).
        status: i32,
    },
    /// A typed read found a value that is not 8 bytes long.
    Size {
        /// The state's name.
        name: String,
        /// "int64" or "float64".
        ty: &'static str,
        /// The stored value's length.
        len: usize,
    },
}

/// The text of a host status, as package abi's `StatusText` words it.
pub fn status_text(s: i32) -> Cow<'static, str> {
    match s {
        s if s >= 0 => abi::STATUS_TEXT_OK.into(),
        abi::STATUS_NOT_FOUND => abi::STATUS_TEXT_NOT_FOUND.into(),
        abi::STATUS_NO_CONTEXT => abi::STATUS_TEXT_NO_CONTEXT.into(),
        abi::STATUS_BAD_INDEX => abi::STATUS_TEXT_BAD_INDEX.into(),
        abi::STATUS_TOO_LARGE => abi::STATUS_TEXT_TOO_LARGE.into(),
        abi::STATUS_BAD_MEMORY => abi::STATUS_TEXT_BAD_MEMORY.into(),
        s => format!("unknown status {}", s).into(),
    }
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateError::Host { call, name, status } => {
                write!(f, "weir: {} on state {:?}: {}", call, name, status_text(*status))
            }
            StateError::Size { name, ty, len } => {
                write!(f, "weir: state {:?} holds {} bytes, not an 8-byte {}", name, len, ty)
            }
        }
    }
}

impl std::error::Error for StateError {}

/// Scratch buffers shared by every state call (the host calls the module
/// from one thread).
struct Scratch {
    key: Vec<u8>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch { key: Vec::new() });
}

/// Reads the value under `key` into `dst` (replacing its contents),
/// growing it as needed. Returns whether there is one.
fn get_into(r: &Record<'_>, key: &[u8], name: &str, dst: &mut Vec<u8>) -> Result<bool, StateError> {
    let mut want = dst.capacity().max(256);
    for _ in 0..4 {
        dst.clear();
        dst.resize(want, 0);
        let n = host::state_get(r.index, key, dst);
        if n == abi::STATUS_NOT_FOUND {
            dst.clear();
            return Ok(false);
        }
        if n < 0 {
            dst.clear();
            return Err(StateError::Host { call: abi::IMPORT_STATE_GET, name: name.to_string(), status: n });
        }
        let n = n as usize;
        if n <= want {
            dst.truncate(n);
            return Ok(true);
        }
        // The value is longer than the buffer: grow it and ask again.
        want = n;
    }
    dst.clear();
    Err(StateError::Host { call: abi::IMPORT_STATE_GET, name: name.to_string(), status: abi::STATUS_TOO_LARGE })
}

fn get_vec(r: &Record<'_>, key: &[u8], name: &str) -> Result<Option<Vec<u8>>, StateError> {
    let mut v = Vec::new();
    Ok(if get_into(r, key, name, &mut v)? { Some(v) } else { None })
}

fn get_u64(r: &Record<'_>, key: &[u8], name: &str, ty: &'static str) -> Result<Option<u64>, StateError> {
    let mut b = [0u8; abi::STATE_NUMBER_SIZE];
    let n = host::state_get(r.index, key, &mut b);
    match n {
        abi::STATUS_NOT_FOUND => Ok(None),
        n if n < 0 => Err(StateError::Host { call: abi::IMPORT_STATE_GET, name: name.to_string(), status: n }),
        n if n as usize == abi::STATE_NUMBER_SIZE => Ok(Some(u64::from_le_bytes(b))),
        n => Err(StateError::Size { name: name.to_string(), ty, len: n as usize }),
    }
}

fn put(r: &Record<'_>, key: &[u8], value: &[u8], name: &str) -> Result<(), StateError> {
    let s = host::state_put(r.index, key, value);
    if s < 0 {
        return Err(StateError::Host { call: abi::IMPORT_STATE_PUT, name: name.to_string(), status: s });
    }
    Ok(())
}

fn delete(r: &Record<'_>, key: &[u8], name: &str) -> Result<(), StateError> {
    let s = host::state_delete(r.index, key);
    if s < 0 {
        return Err(StateError::Host { call: abi::IMPORT_STATE_DELETE, name: name.to_string(), status: s });
    }
    Ok(())
}

/// Runs f with the key of (kind, name, suffix) built in the scratch buffer.
fn with_key<T>(kind: StateKind, name: &str, suffix: &[u8], f: impl FnOnce(&[u8]) -> T) -> T {
    SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        let mut key = std::mem::take(&mut s.key);
        drop(s);
        key.clear();
        append_state_key(&mut key, kind, name, suffix);
        let out = f(&key);
        SCRATCH.with(|s| s.borrow_mut().key = key);
        out
    })
}

/// One named value of state per record key.
///
/// ```no_run
/// static COUNT: weir::ValueState = weir::ValueState::new("count");
/// # fn f(r: &weir::Record) -> Result<(), weir::Error> {
/// let n = COUNT.get_i64(r)?.unwrap_or(0) + 1;
/// COUNT.put_i64(r, n)?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct ValueState {
    name: Cow<'static, str>,
}

impl ValueState {
    /// The value state called `name`.
    pub const fn new(name: &'static str) -> Self {
        ValueState { name: Cow::Borrowed(name) }
    }

    /// The value state called `name`, for names made at run time.
    pub fn named(name: String) -> Self {
        ValueState { name: Cow::Owned(name) }
    }

    /// The state's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn with<T>(&self, f: impl FnOnce(&[u8]) -> T) -> T {
        with_key(StateKind::Value, &self.name, &[], f)
    }

    /// The value stored for `r`'s key, if any.
    pub fn get(&self, r: &Record<'_>) -> Result<Option<Vec<u8>>, StateError> {
        self.with(|k| get_vec(r, k, &self.name))
    }

    /// Reads the value stored for `r`'s key into `dst`, reusing its memory.
    /// Returns whether there is one.
    pub fn get_into(&self, r: &Record<'_>, dst: &mut Vec<u8>) -> Result<bool, StateError> {
        self.with(|k| get_into(r, k, &self.name, dst))
    }

    /// Stores `v` for `r`'s key.
    pub fn put(&self, r: &Record<'_>, v: &[u8]) -> Result<(), StateError> {
        self.with(|k| put(r, k, v, &self.name))
    }

    /// Deletes the value stored for `r`'s key.
    pub fn delete(&self, r: &Record<'_>) -> Result<(), StateError> {
        self.with(|k| delete(r, k, &self.name))
    }

    /// The i64 stored by `put_i64` (8 bytes little-endian).
    pub fn get_i64(&self, r: &Record<'_>) -> Result<Option<i64>, StateError> {
        Ok(self.with(|k| get_u64(r, k, &self.name, "int64"))?.map(|u| u as i64))
    }

    /// Stores `v` as 8 bytes little-endian.
    pub fn put_i64(&self, r: &Record<'_>, v: i64) -> Result<(), StateError> {
        self.put(r, &v.to_le_bytes())
    }

    /// The f64 stored by `put_f64` (8 bytes little-endian IEEE-754).
    pub fn get_f64(&self, r: &Record<'_>) -> Result<Option<f64>, StateError> {
        Ok(self.with(|k| get_u64(r, k, &self.name, "float64"))?.map(f64::from_bits))
    }

    /// Stores `v` as the 8 little-endian bytes of its IEEE-754 bits.
    pub fn put_f64(&self, r: &Record<'_>, v: f64) -> Result<(), StateError> {
        self.put(r, &v.to_bits().to_le_bytes())
    }
}

/// A named map of state per record key: for each record key, entries under
/// their own entry keys (any bytes, including empty).
#[derive(Clone, Debug)]
pub struct MapState {
    name: Cow<'static, str>,
}

impl MapState {
    /// The map state called `name`.
    pub const fn new(name: &'static str) -> Self {
        MapState { name: Cow::Borrowed(name) }
    }

    /// The map state called `name`, for names made at run time.
    pub fn named(name: String) -> Self {
        MapState { name: Cow::Owned(name) }
    }

    /// The state's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn with<T>(&self, entry: &[u8], f: impl FnOnce(&[u8]) -> T) -> T {
        with_key(StateKind::Map, &self.name, entry, f)
    }

    /// The entry under `key` for `r`'s key, if any.
    pub fn get(&self, r: &Record<'_>, key: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
        self.with(key, |k| get_vec(r, k, &self.name))
    }

    /// Reads the entry under `key` into `dst`; returns whether there is one.
    pub fn get_into(&self, r: &Record<'_>, key: &[u8], dst: &mut Vec<u8>) -> Result<bool, StateError> {
        self.with(key, |k| get_into(r, k, &self.name, dst))
    }

    /// Stores `v` as the entry under `key`.
    pub fn put(&self, r: &Record<'_>, key: &[u8], v: &[u8]) -> Result<(), StateError> {
        self.with(key, |k| put(r, k, v, &self.name))
    }

    /// Deletes the entry under `key`.
    pub fn delete(&self, r: &Record<'_>, key: &[u8]) -> Result<(), StateError> {
        self.with(key, |k| delete(r, k, &self.name))
    }

    /// The i64 stored under `key` by `put_i64`.
    pub fn get_i64(&self, r: &Record<'_>, key: &[u8]) -> Result<Option<i64>, StateError> {
        Ok(self.with(key, |k| get_u64(r, k, &self.name, "int64"))?.map(|u| u as i64))
    }

    /// Stores `v` under `key` as 8 bytes little-endian.
    pub fn put_i64(&self, r: &Record<'_>, key: &[u8], v: i64) -> Result<(), StateError> {
        self.put(r, key, &v.to_le_bytes())
    }

    /// The f64 stored under `key` by `put_f64`.
    pub fn get_f64(&self, r: &Record<'_>, key: &[u8]) -> Result<Option<f64>, StateError> {
        Ok(self.with(key, |k| get_u64(r, k, &self.name, "float64"))?.map(f64::from_bits))
    }

    /// Stores `v` under `key` as its 8 little-endian IEEE-754 bytes.
    pub fn put_f64(&self, r: &Record<'_>, key: &[u8], v: f64) -> Result<(), StateError> {
        self.put(r, key, &v.to_bits().to_le_bytes())
    }
}

/// A named list of values per record key, stored one entry per element,
/// so that `add` costs two state writes however long the list is.
#[derive(Clone, Debug)]
pub struct ListState {
    name: Cow<'static, str>,
}

impl ListState {
    /// The list state called `name`.
    pub const fn new(name: &'static str) -> Self {
        ListState { name: Cow::Borrowed(name) }
    }

    /// The list state called `name`, for names made at run time.
    pub fn named(name: String) -> Self {
        ListState { name: Cow::Owned(name) }
    }

    /// The state's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn with<T>(&self, i: Option<u64>, f: impl FnOnce(&[u8]) -> T) -> T {
        match i {
            None => with_key(StateKind::List, &self.name, &[], f),
            Some(i) => with_key(StateKind::List, &self.name, &i.to_be_bytes(), f),
        }
    }

    /// The number of elements of `r`'s key's list.
    pub fn len(&self, r: &Record<'_>) -> Result<usize, StateError> {
        Ok(self.with(None, |k| get_u64(r, k, &self.name, "int64"))?.unwrap_or(0) as usize)
    }

    /// Whether `r`'s key's list is empty.
    pub fn is_empty(&self, r: &Record<'_>) -> Result<bool, StateError> {
        Ok(self.len(r)? == 0)
    }

    /// Appends `v` to `r`'s key's list.
    pub fn add(&self, r: &Record<'_>, v: &[u8]) -> Result<(), StateError> {
        let n = self.len(r)? as u64;
        self.with(Some(n), |k| put(r, k, v, &self.name))?;
        self.with(None, |k| put(r, k, &(n as i64 + 1).to_le_bytes(), &self.name))
    }

    /// Element `i` of `r`'s key's list, if there is one.
    pub fn get(&self, r: &Record<'_>, i: usize) -> Result<Option<Vec<u8>>, StateError> {
        self.with(Some(i as u64), |k| get_vec(r, k, &self.name))
    }

    /// Calls `f` with each element of `r`'s key's list, in order, stopping at
    /// its first error, which it returns.
    pub fn for_each<E: From<StateError>>(
        &self,
        r: &Record<'_>,
        mut f: impl FnMut(usize, &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let n = self.len(r)?;
        let mut buf = Vec::new();
        for i in 0..n {
            if self.with(Some(i as u64), |k| get_into(r, k, &self.name, &mut buf))? {
                f(i, &buf)?;
            }
        }
        Ok(())
    }

    /// Empties `r`'s key's list.
    pub fn clear(&self, r: &Record<'_>) -> Result<(), StateError> {
        let n = self.len(r)?;
        for i in 0..n {
            self.with(Some(i as u64), |k| delete(r, k, &self.name))?;
        }
        self.with(None, |k| delete(r, k, &self.name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_go() {
        let mut k = Vec::new();
        append_state_key(&mut k, StateKind::Value, "count", b"ignored");
        assert_eq!(k, b"vcount");
        k.clear();
        append_state_key(&mut k, StateKind::Map, "seen", b"k1");
        assert_eq!(k, b"m\x04seenk1");
        k.clear();
        let long = "x".repeat(200);
        append_state_key(&mut k, StateKind::List, &long, &3u64.to_be_bytes());
        assert_eq!(&k[..3], &[b'l', 0xc8, 0x01]);
        assert_eq!(&k[k.len() - 8..], &[0, 0, 0, 0, 0, 0, 0, 3]);
    }

    #[test]
    fn states_in_the_native_store() {
        crate::testing::clear_state();
        let r = Record::new(Some(b"k"), Some(b"v"));
        let count = ValueState::new("count");
        assert_eq!(count.get_i64(&r).unwrap(), None);
        count.put_i64(&r, 41).unwrap();
        assert_eq!(count.get_i64(&r).unwrap(), Some(41));
        assert_eq!(crate::testing::state(b"vcount"), Some(41i64.to_le_bytes().to_vec()));
        count.put(&r, b"abc").unwrap();
        assert_eq!(count.get_i64(&r).unwrap_err().to_string(), "weir: state \"count\" holds 3 bytes, not an 8-byte int64");
        let big = vec![7u8; 1000];
        count.put(&r, &big).unwrap();
        assert_eq!(count.get(&r).unwrap(), Some(big));
        count.delete(&r).unwrap();
        assert_eq!(count.get(&r).unwrap(), None);

        let m = MapState::new("m");
        m.put_f64(&r, b"a", 2.5).unwrap();
        assert_eq!(m.get_f64(&r, b"a").unwrap(), Some(2.5));
        assert_eq!(m.get(&r, b"b").unwrap(), None);

        let l = ListState::new("l");
        l.add(&r, b"x").unwrap();
        l.add(&r, b"yy").unwrap();
        assert_eq!(l.len(&r).unwrap(), 2);
        assert_eq!(l.get(&r, 1).unwrap(), Some(b"yy".to_vec()));
        let mut seen = Vec::new();
        l.for_each(&r, |i, v| -> Result<(), StateError> {
            seen.push((i, v.to_vec()));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, vec![(0, b"x".to_vec()), (1, b"yy".to_vec())]);
        assert_eq!(crate::testing::state(b"l\x01l\0\0\0\0\0\0\0\x01"), Some(b"yy".to_vec()));
        l.clear(&r).unwrap();
        assert_eq!(l.len(&r).unwrap(), 0);
    }
}
