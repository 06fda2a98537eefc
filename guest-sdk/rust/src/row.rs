//! Reading a typed batch frame (ABI section 14.3): its column table,
//! checked once per call, and the rows a typed function reads its fields
//! from, in place.

use crate::abi;
use crate::frame::FrameError;
use crate::record::{Headers, Record};
use crate::typed::{FieldStatus, FieldType};
use core::fmt;

const TS: usize = abi::TYPED_TIMESTAMP_COLUMN as usize;
const KEY: usize = abi::TYPED_KEY_COLUMN as usize;
const FIRST: usize = abi::TYPED_FIRST_FIELD_COLUMN as usize;

/// One column of a typed batch frame: its type and the offsets of its
/// regions in the frame (`status` 0 for none), checked against it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Column {
    ty: FieldType,
    status: usize,
    values: usize,
    data: usize,
}

/// The checked column table of a typed batch frame, kept from call to call
/// so that reading a batch does not allocate.
#[derive(Default)]
pub(crate) struct Columns {
    cols: Vec<Column>,
}

impl Columns {
    /// Reads and checks the column table of `frame` and every region it
    /// points at (bounds, alignment, statuses, bools, string offsets), so
    /// that reading a row cannot fail; returns the record count.
    pub(crate) fn read(&mut self, frame: &[u8]) -> Result<u32, FrameError> {
        let err = |offset, what| FrameError { offset, what };
        let n = le_u32(frame, 0).ok_or_else(|| err(0, "typed batch record count"))?;
        let f = le_u32(frame, 4).ok_or_else(|| err(4, "typed batch field count"))?;
        if n > abi::MAX_BATCH_RECORDS {
            return Err(err(0, "count over the limit 2^24"));
        }
        if f > abi::MAX_TYPED_FIELDS {
            return Err(err(4, "typed batch field count over the limit 1024"));
        }
        self.cols.clear();
        for k in 0..f as usize + FIRST {
            let at = abi::TYPED_HEADER_SIZE + abi::TYPED_COLUMN_SIZE * k;
            self.cols.push(read_column(frame, at, k, n as usize).map_err(|what| err(at, what))?);
        }
        Ok(n)
    }

    /// Record `index` of the frame the table was read from.
    pub(crate) fn row<'a>(&'a self, frame: &'a [u8], index: u32) -> Row<'a> {
        Row { frame, cols: &self.cols, index }
    }
}

/// The little-endian u32 at b[at..at + 4].
fn le_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

/// Column k of a frame of n records, whose table entry is at `at`.
fn read_column(frame: &[u8], at: usize, k: usize, n: usize) -> Result<Column, &'static str> {
    let word = |i: usize| le_u32(frame, at + 4 * i).map(|w| w as usize).ok_or("typed batch column table");
    let ty = FieldType::from_u8(word(0)?.try_into().unwrap_or(0)).ok_or("typed batch column of an unknown type")?;
    let c = Column { ty, status: word(1)?, values: word(2)?, data: word(3)? };
    check_kind(k, &c)?;
    if c.status != 0 {
        let max = if k == KEY { abi::VALUE_NULL } else { abi::VALUE_MISMATCH };
        if region(frame, c.status, n)?.iter().any(|&s| s > max) {
            return Err("typed batch status byte out of range");
        }
    }
    match ty.width() {
        0 => check_offsets(frame, &c, n)?,
        _ if c.data != 0 => return Err("a data offset for a fixed-width column"),
        w => {
            let values = region(frame, c.values, n * w)?;
            if ty == FieldType::Bool && values.iter().any(|&b| b > 1) {
                return Err("typed batch bool byte is not 0 or 1");
            }
        }
    }
    Ok(c)
}

/// Checks that column k has the type and statuses its place asks for.
fn check_kind(k: usize, c: &Column) -> Result<(), &'static str> {
    match (k, c.ty, c.status) {
        (TS, FieldType::Int, 0) => Ok(()),
        (TS, ..) => Err("the timestamp column must be of type int without statuses"),
        (_, _, 0) => Err("typed batch column without statuses"),
        (KEY, FieldType::String, _) => Ok(()),
        (KEY, ..) => Err("the key column must be of type string"),
        _ => Ok(()),
    }
}

/// The size bytes at off, an aligned offset within the frame after its
/// counts.
fn region(frame: &[u8], off: usize, size: usize) -> Result<&[u8], &'static str> {
    if off % abi::TYPED_ALIGN != 0 {
        return Err("typed batch region not aligned to 8 bytes");
    }
    match off.checked_add(size) {
        Some(end) if off >= abi::TYPED_HEADER_SIZE && end <= frame.len() => Ok(&frame[off..end]),
        _ => Err("typed batch region outside the frame"),
    }
}

/// Checks a string or raw column's n + 1 offsets and its data region.
fn check_offsets(frame: &[u8], c: &Column, n: usize) -> Result<(), &'static str> {
    let offsets = region(frame, c.values, 4 * (n + 1))?;
    let mut prev = 0;
    for (i, o) in offsets.chunks_exact(4).enumerate() {
        let o = u32::from_le_bytes([o[0], o[1], o[2], o[3]]) as usize;
        if (i == 0 && o != 0) || o < prev {
            return Err("typed batch string offsets out of order");
        }
        prev = o;
    }
    region(frame, c.data, prev).map(|_| ())
}

/// One record of a typed batch, as a typed function sees it: its
/// timestamp, its key and its declared fields, numbered from 0 in the
/// order [`declare_field`](crate::declare_field) was called. Reading a
/// field is a load from its column in the frame the host wrote: nothing is
/// parsed or copied, and the slices returned borrow the frame, valid during
/// the call only.
///
/// Reading a field as another type than declared, or a field that was not
/// declared, is a bug: it panics (which traps the instance).
#[derive(Clone, Copy)]
pub struct Row<'a> {
    frame: &'a [u8],
    cols: &'a [Column],
    index: u32,
}

impl<'a> Row<'a> {
    /// The record's index in its typed batch: the number the host uses to
    /// scope state calls made for it.
    #[inline]
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The number of declared fields.
    pub fn fields(&self) -> usize {
        self.cols.len() - FIRST
    }

    /// The record's event time, in milliseconds since the Unix epoch.
    #[inline]
    pub fn timestamp(&self) -> i64 {
        self.word(&self.cols[TS]) as i64
    }

    /// The record's key; `None` when it has none (a null key).
    #[inline]
    pub fn key(&self) -> Option<&'a [u8]> {
        let c = &self.cols[KEY];
        self.present(c).then(|| self.bytes_of(c))
    }

    /// Whether field `f` has a value, or why not.
    #[inline]
    pub fn status(&self, f: usize) -> FieldStatus {
        self.status_of(self.column(f))
    }

    /// Int field `f`, or `None` when it has no value ([`status`](Row::status)
    /// says why).
    #[inline]
    pub fn int(&self, f: usize) -> Option<i64> {
        let c = self.typed(f, FieldType::Int);
        self.present(c).then(|| self.word(c) as i64)
    }

    /// Float field `f`, or `None` when it has no value.
    #[inline]
    pub fn float(&self, f: usize) -> Option<f64> {
        let c = self.typed(f, FieldType::Float);
        self.present(c).then(|| f64::from_bits(self.word(c)))
    }

    /// Bool field `f`, or `None` when it has no value.
    #[inline]
    pub fn bool(&self, f: usize) -> Option<bool> {
        let c = self.typed(f, FieldType::Bool);
        self.present(c).then(|| self.frame[c.values + self.index as usize] != 0)
    }

    /// String field `f`, or `None` when it has no value. The host decodes
    /// the JSON string, so it is UTF-8 (invalid input became U+FFFD).
    #[inline]
    pub fn str(&self, f: usize) -> Option<&'a str> {
        let b = self.bytes_as(f, FieldType::String)?;
        Some(core::str::from_utf8(b).unwrap_or_else(|_| panic!("weir: string field {} is not UTF-8", f)))
    }

    /// String field `f`'s decoded bytes or raw field `f`'s JSON text, or
    /// `None` when it has no value.
    #[inline]
    pub fn bytes(&self, f: usize) -> Option<&'a [u8]> {
        let ty = self.column(f).ty;
        if ty.width() != 0 {
            panic!("weir: field {} is {}, not string or raw", f, ty);
        }
        self.bytes_as(f, ty)
    }

    /// The record as a [`Record`] without value or headers (the typed
    /// convention passes neither), for the state calls: its index, key and
    /// timestamp.
    pub fn record(&self) -> Record<'a> {
        Record {
            key: self.key(),
            value: None,
            timestamp: self.timestamp(),
            headers: Headers::new(&[], 0),
            index: self.index,
        }
    }

    fn column(&self, f: usize) -> &'a Column {
        let cols: &'a [Column] = self.cols;
        cols.get(FIRST + f).unwrap_or_else(|| panic!("weir: field {} of a typed batch of {} fields", f, self.fields()))
    }

    /// Field f's column, which must be of type ty.
    fn typed(&self, f: usize, ty: FieldType) -> &'a Column {
        let c = self.column(f);
        if c.ty != ty {
            panic!("weir: field {} is {}, not {}", f, c.ty, ty);
        }
        c
    }

    fn bytes_as(&self, f: usize, ty: FieldType) -> Option<&'a [u8]> {
        let c = self.typed(f, ty);
        self.present(c).then(|| self.bytes_of(c))
    }

    fn status_of(&self, c: &Column) -> FieldStatus {
        match c.status {
            0 => FieldStatus::Present,
            at => FieldStatus::BY_BYTE[self.frame[at + self.index as usize] as usize],
        }
    }

    fn present(&self, c: &Column) -> bool {
        self.status_of(c) == FieldStatus::Present
    }

    /// The 8-byte value of an int or float column.
    fn word(&self, c: &Column) -> u64 {
        let at = c.values + 8 * self.index as usize;
        u64::from_le_bytes(self.frame[at..at + 8].try_into().unwrap())
    }

    /// The value of a string or raw column.
    fn bytes_of(&self, c: &Column) -> &'a [u8] {
        let frame: &'a [u8] = self.frame;
        let at = c.values + 4 * self.index as usize;
        let lo = u32::from_le_bytes(frame[at..at + 4].try_into().unwrap()) as usize;
        let hi = u32::from_le_bytes(frame[at + 4..at + 8].try_into().unwrap()) as usize;
        &frame[c.data + lo..c.data + hi]
    }
}

impl fmt::Debug for Row<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Row")
            .field("index", &self.index)
            .field("timestamp", &self.timestamp())
            .field("key", &self.key().map(String::from_utf8_lossy))
            .field("fields", &self.fields())
            .finish()
    }
}
