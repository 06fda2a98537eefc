//! Building output records in place in the output frame.

use crate::frame::{
    self, put_keep, put_opt, put_u32, put_value_record, FLAG_HEADERS, FLAG_KEY, FLAG_TIMESTAMP,
    KIND_RECORD,
};
use core::ops::{Deref, DerefMut};

/// A value being written: an append-only view of the end of the output
/// frame, so that a value built here is written where the host reads it,
/// without a copy. It dereferences to the value's bytes written so far.
///
/// It implements [`crate::json::Sink`] (for the JSON writer),
/// [`std::io::Write`] and [`core::fmt::Write`].
pub struct ValueBuf {
    buf: Vec<u8>,
    start: usize,
    null: bool,
}

impl ValueBuf {
    pub(crate) fn new() -> Self {
        ValueBuf { buf: Vec::new(), start: 0, null: false }
    }

    /// Appends one byte.
    #[inline]
    pub fn push(&mut self, b: u8) {
        self.buf.push(b);
    }

    /// Appends bytes.
    #[inline]
    pub fn extend_from_slice(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    /// The value written so far.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// The value written so far, mutably.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..]
    }

    /// The value's length so far.
    #[inline]
    pub fn len(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Whether nothing was written.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.buf.len() == self.start
    }

    /// Shortens the value to `n` bytes.
    pub fn truncate(&mut self, n: usize) {
        self.buf.truncate(self.start + n);
    }

    /// Empties the value (and makes it present again after `set_null`).
    pub fn clear(&mut self) {
        self.buf.truncate(self.start);
        self.null = false;
    }

    /// Reserves room for `n` more bytes.
    pub fn reserve(&mut self, n: usize) {
        self.buf.reserve(n);
    }

    /// Makes the value absent (null) instead of the bytes written, which
    /// are discarded. [`ValueBuf::clear`] undoes it.
    pub fn set_null(&mut self) {
        self.buf.truncate(self.start);
        self.null = true;
    }

    /// Whether `set_null` was called.
    pub fn is_null(&self) -> bool {
        self.null
    }

    /// Starts a new value at the frame's end.
    #[inline]
    pub(crate) fn begin(&mut self) {
        self.start = self.buf.len();
        self.null = false;
    }

    #[inline]
    pub(crate) fn frame(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    pub(crate) fn frame_ref(&self) -> &[u8] {
        &self.buf
    }

    /// Releases memory after an unusually large frame.
    pub(crate) fn shrink(&mut self, keep: usize) {
        if self.buf.capacity() > keep {
            self.buf.clear();
            self.buf.shrink_to(keep);
            self.start = 0;
        }
    }
}

impl Deref for ValueBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl DerefMut for ValueBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.as_mut_slice()
    }
}

impl std::io::Write for ValueBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl core::fmt::Write for ValueBuf {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.buf.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

impl crate::json::Sink for ValueBuf {
    #[inline]
    fn push_byte(&mut self, b: u8) {
        self.buf.push(b);
    }
    #[inline]
    fn push_bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Accepting fields; nothing written to the frame yet.
    Open,
    /// The entry's head is written and the value is being built.
    Valued,
}

/// The one record a map function produces, or one record a flat_map
/// function emits through [`Emitter::begin`]. Fields left unset are
/// inherited from the input record; an `Output` on which nothing is set
/// keeps the input record unchanged (the cheapest answer: the host copies
/// nothing).
///
/// The value is built in place in the output frame: [`Output::value`] gives
/// a [`ValueBuf`] to append it to. Key, timestamp and headers may be set
/// before or after the value (setting them after costs a copy of the value).
/// If a field is set but no value, the record gets the input's value.
///
/// Nothing reaches the host if the function returns an error: the record is
/// rejected and everything built for it is discarded.
pub struct Output {
    vb: ValueBuf,
    index: u32,
    entry_start: usize,
    state: State,
    flags: u8,
    key: Vec<u8>,
    key_absent: bool,
    ts: i64,
    hdr: Vec<u8>,
    nhdr: u32,
    len_pos: usize,
    dirty: bool,
    scratch: Vec<u8>,
    /// Entries committed since the counter was last reset (flat_map).
    pub(crate) entries: u32,
}

impl Output {
    pub(crate) fn new() -> Self {
        Output {
            vb: ValueBuf::new(),
            index: 0,
            entry_start: 0,
            state: State::Open,
            flags: 0,
            key: Vec::new(),
            key_absent: false,
            ts: 0,
            hdr: Vec::new(),
            nhdr: 0,
            len_pos: 0,
            dirty: false,
            scratch: Vec::new(),
            entries: 0,
        }
    }

    /// Starts the answer for input `index` at the frame's end.
    #[inline]
    pub(crate) fn reset(&mut self, index: u32) {
        self.index = index;
        self.entry_start = self.vb.buf.len();
        self.state = State::Open;
        self.flags = 0;
        self.dirty = false;
    }

    /// The output frame.
    #[inline]
    pub(crate) fn frame(&mut self) -> &mut Vec<u8> {
        self.vb.frame()
    }

    pub(crate) fn buf(&mut self) -> &mut ValueBuf {
        &mut self.vb
    }

    fn touch(&mut self, flag: u8) {
        self.flags |= flag;
        if self.state == State::Valued {
            self.dirty = true;
        }
    }

    /// Sets the record's key; `None` gives it no key (null).
    pub fn set_key(&mut self, key: Option<&[u8]>) {
        self.touch(FLAG_KEY);
        self.key.clear();
        self.key.extend_from_slice(key.unwrap_or(&[]));
        self.key_absent = key.is_none();
    }

    /// Sets the record's event time, in milliseconds since the Unix epoch.
    pub fn set_timestamp(&mut self, ms: i64) {
        self.touch(FLAG_TIMESTAMP);
        self.ts = ms;
    }

    /// Appends a header. Once a header is added (or `clear_headers` is
    /// called) the record's headers are exactly those added, none inherited.
    pub fn add_header(&mut self, name: impl AsRef<[u8]>, value: &[u8]) {
        if self.flags & FLAG_HEADERS == 0 {
            self.hdr.clear();
            self.nhdr = 0;
        }
        self.touch(FLAG_HEADERS);
        put_opt(&mut self.hdr, Some(name.as_ref()));
        put_opt(&mut self.hdr, Some(value));
        self.nhdr += 1;
    }

    /// Gives the record no headers (until `add_header` adds some).
    pub fn clear_headers(&mut self) {
        self.touch(FLAG_HEADERS);
        self.hdr.clear();
        self.nhdr = 0;
    }

    /// Sets the value to a copy of `v`; `None` makes it absent (null).
    pub fn set_value(&mut self, v: Option<&[u8]>) {
        let vb = self.value();
        vb.buf.truncate(vb.start);
        match v {
            Some(v) => {
                vb.null = false;
                vb.buf.extend_from_slice(v);
            }
            None => vb.null = true,
        }
    }

    /// The value, to append to: the first call starts an empty, present
    /// value in the output frame; later calls return it as it is.
    #[inline]
    pub fn value(&mut self) -> &mut ValueBuf {
        if self.state != State::Valued {
            self.begin_value();
        }
        &mut self.vb
    }

    /// Writes the entry's head and the value's length placeholder, and
    /// starts the value after them.
    #[inline(always)]
    fn begin_value(&mut self) {
        if self.flags == 0 {
            // The common head, that sets only the value: kind, index, no
            // flags, and the length, patched by commit.
            let i = self.index.to_le_bytes();
            let head = [KIND_RECORD, i[0], i[1], i[2], i[3], 0, 0, 0, 0, 0];
            self.vb.buf.extend_from_slice(&head);
        } else {
            self.write_head();
            put_u32(&mut self.vb.buf, 0);
        }
        self.len_pos = self.vb.buf.len() - 4;
        self.vb.begin();
        self.state = State::Valued;
    }

    /// Drops every field and value set so far: the input record is kept
    /// unchanged.
    pub fn keep(&mut self) {
        self.vb.buf.truncate(self.entry_start);
        let index = self.index;
        self.reset(index);
    }

    /// Writes the entry's kind, index, flags and flagged fields.
    #[inline(never)]
    fn write_head(&mut self) {
        let b = &mut self.vb.buf;
        b.push(KIND_RECORD);
        put_u32(b, self.index);
        b.push(self.flags);
        if self.flags & FLAG_KEY != 0 {
            put_opt(b, if self.key_absent { None } else { Some(&self.key) });
        }
        if self.flags & FLAG_TIMESTAMP != 0 {
            frame::put_i64(b, self.ts);
        }
        if self.flags & FLAG_HEADERS != 0 {
            put_u32(b, self.nhdr);
            b.extend_from_slice(&self.hdr);
        }
    }

    /// Finishes the entry; `input` is the input record's value.
    #[inline(always)]
    pub(crate) fn commit(&mut self, input: Option<&[u8]>) {
        match self.state {
            State::Open if self.flags == 0 => put_keep(&mut self.vb.buf, self.index),
            State::Valued if !self.dirty && !self.vb.null => {
                let n = (self.vb.buf.len() - self.vb.start) as u32;
                frame::patch_u32(&mut self.vb.buf, self.len_pos, n);
            }
            _ => self.commit_other(input),
        }
        self.state = State::Open;
        self.flags = 0;
        self.dirty = false;
        self.entry_start = self.vb.buf.len();
        self.entries += 1;
    }

    /// The cases of commit other than a kept record and a plain value.
    #[inline(never)]
    fn commit_other(&mut self, input: Option<&[u8]>) {
        match self.state {
            State::Open if self.flags == 0 => put_keep(&mut self.vb.buf, self.index),
            State::Open => {
                self.write_head();
                put_opt(&mut self.vb.buf, input);
            }
            State::Valued if self.dirty => {
                // A field was set after the value was begun: write the head
                // again, with the value after it.
                self.scratch.clear();
                let null = self.vb.null;
                if !null {
                    let start = self.vb.start;
                    self.scratch.extend_from_slice(&self.vb.buf[start..]);
                }
                self.vb.buf.truncate(self.entry_start);
                self.write_head();
                put_opt(&mut self.vb.buf, if null { None } else { Some(&self.scratch) });
            }
            State::Valued => {
                let start = self.vb.start;
                if self.vb.null {
                    self.vb.buf.truncate(start);
                    frame::patch_u32(&mut self.vb.buf, self.len_pos, frame::ABSENT);
                } else {
                    let n = (self.vb.buf.len() - start) as u32;
                    frame::patch_u32(&mut self.vb.buf, self.len_pos, n);
                }
            }
        }
    }

    /// Discards everything written since `at`.
    #[inline]
    pub(crate) fn rollback(&mut self, at: usize) {
        self.vb.buf.truncate(at);
        self.state = State::Open;
        self.flags = 0;
        self.dirty = false;
    }

    pub(crate) fn entry_start(&self) -> usize {
        self.entry_start
    }

    /// Releases memory after an unusually large batch.
    pub(crate) fn shrink(&mut self, keep: usize) {
        self.vb.shrink(keep);
        if self.scratch.capacity() > keep {
            self.scratch = Vec::new();
        }
    }
}

/// Receives the records a flat_map function emits for one input, in order.
pub struct Emitter<'o> {
    pub(crate) out: &'o mut Output,
    pub(crate) index: u32,
    pub(crate) input: Option<&'o [u8]>,
    pub(crate) pending: bool,
}

impl<'o> Emitter<'o> {
    #[inline]
    pub(crate) fn flush(&mut self) {
        if self.pending {
            self.pending = false;
            self.out.commit(self.input);
        }
    }

    /// Emits the input record unchanged.
    pub fn keep(&mut self) {
        self.flush();
        put_keep(self.out.frame(), self.index);
        self.out.entries += 1;
    }

    /// Emits a record with a copy of `v` as its value (`None`: absent),
    /// inheriting the input's key, timestamp and headers.
    #[inline]
    pub fn emit(&mut self, v: Option<&[u8]>) {
        self.flush();
        put_value_record(self.out.frame(), self.index, v);
        self.out.entries += 1;
    }

    /// Starts a record whose fields and value are set through the returned
    /// [`Output`], as for a map function. It is emitted at the next
    /// `Emitter` call or when the function returns.
    pub fn begin(&mut self) -> &mut Output {
        self.flush();
        self.out.reset(self.index);
        self.pending = true;
        self.out
    }
}
