//! Writing the typed output frame (ABI section 14.4): keep, error and
//! patch entries.

use crate::abi;
use crate::frame::{self, put_error, put_keep, put_opt, put_u32};

/// A typed output frame being built, in a buffer reused from call to call.
pub(crate) struct TypedOut {
    buf: Vec<u8>,
    count: u32,
}

/// A position in a [`TypedOut`], to take back what was written after it.
#[derive(Clone, Copy)]
pub(crate) struct Mark {
    len: usize,
    count: u32,
}

impl TypedOut {
    pub(crate) fn new() -> Self {
        TypedOut { buf: Vec::new(), count: 0 }
    }

    /// Starts an empty frame.
    pub(crate) fn reset(&mut self) {
        self.buf.clear();
        put_u32(&mut self.buf, 0);
        self.count = 0;
    }

    /// Appends a keep entry for input `index`.
    #[inline]
    pub(crate) fn keep(&mut self, index: u32) {
        put_keep(&mut self.buf, index);
        self.count += 1;
    }

    /// Appends an error entry for input `index`.
    pub(crate) fn error(&mut self, index: u32, msg: &str) {
        put_error(&mut self.buf, index, msg);
        self.count += 1;
    }

    pub(crate) fn mark(&self) -> Mark {
        Mark { len: self.buf.len(), count: self.count }
    }

    /// Drops the entries appended since m.
    pub(crate) fn rewind(&mut self, m: Mark) {
        self.buf.truncate(m.len);
        self.count = m.count;
    }

    /// Finishes the frame and returns it.
    pub(crate) fn finish(&mut self) -> &[u8] {
        frame::patch_u32(&mut self.buf, 0, self.count);
        &self.buf
    }

    /// Releases memory after an unusually large frame.
    pub(crate) fn shrink(&mut self, keep: usize) {
        if self.buf.capacity() > keep {
            self.buf = Vec::new();
        }
    }
}

/// What a typed function emits for its record: operations on the record's
/// value, applied by the host in order, each to the result of the one
/// before, and optionally a new key and timestamp. The host rewrites only
/// what an operation changes: every other byte of the value stays as it
/// was.
///
/// Paths are field paths as declared (`user.address.city`, with `\.` for a
/// `.` in a name); the empty path `""` is the whole value (for a set). A
/// set replaces the member in its place, or appends it, creating the
/// objects on the way; a remove removes every occurrence, and is no error
/// when the member is not there. A patch on which nothing is set keeps the
/// record unchanged. Key, timestamp and [`from_empty`](Patch::from_empty)
/// may be set before or after the operations.
///
/// The host refuses a malformed path or raw value, or more than 65536
/// operations, as a plugin bug (a trap). The SDK reuses the `Patch` for the
/// next record.
pub struct Patch {
    flags: u8,
    key: Vec<u8>,
    ts: i64,
    ops: Vec<u8>,
    nops: u32,
}

impl Patch {
    pub(crate) fn new() -> Self {
        Patch { flags: 0, key: Vec::new(), ts: 0, ops: Vec::new(), nops: 0 }
    }

    /// Drops everything set so far: the record is kept unchanged (unless
    /// more is set).
    pub fn keep(&mut self) {
        self.flags = 0;
        self.ops.clear();
        self.nops = 0;
    }

    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.flags == 0 && self.nops == 0
    }

    /// Builds the value from the empty object `{}` instead of the record's:
    /// the operations make a whole new value.
    pub fn from_empty(&mut self) {
        self.flags |= abi::PATCH_FLAG_NEW;
    }

    /// Sets the emitted record's key; `None` gives it none (a null key).
    pub fn set_key(&mut self, key: Option<&[u8]>) {
        self.flags |= abi::PATCH_FLAG_KEY;
        self.key.clear();
        put_opt(&mut self.key, key);
    }

    /// Sets the emitted record's event time, in milliseconds since the Unix
    /// epoch.
    pub fn set_timestamp(&mut self, ms: i64) {
        self.flags |= abi::PATCH_FLAG_TIMESTAMP;
        self.ts = ms;
    }

    fn op(&mut self, op: u8, path: &str) {
        self.nops += 1;
        self.ops.push(op);
        put_opt(&mut self.ops, Some(path.as_bytes()));
    }

    fn set(&mut self, path: &str, ty: u8) -> &mut Vec<u8> {
        self.op(abi::PATCH_OP_SET, path);
        self.ops.push(ty);
        &mut self.ops
    }

    /// Sets the member at `path` to `null`.
    pub fn set_null(&mut self, path: &str) {
        self.set(path, abi::TYPE_NULL);
    }

    /// Sets the member at `path` to an integer, written in decimal.
    pub fn set_int(&mut self, path: &str, v: i64) {
        self.set(path, abi::TYPE_INT).extend_from_slice(&v.to_le_bytes());
    }

    /// Sets the member at `path` to a number, written as the shortest
    /// decimal that reads back as `v` (`2.0`, `0.30000000000000004`); NaN
    /// and infinities are written as `null`.
    pub fn set_float(&mut self, path: &str, v: f64) {
        self.set(path, abi::TYPE_FLOAT).extend_from_slice(&v.to_bits().to_le_bytes());
    }

    /// Sets the member at `path` to `true` or `false`.
    pub fn set_bool(&mut self, path: &str, v: bool) {
        self.set(path, abi::TYPE_BOOL).push(v as u8);
    }

    /// Sets the member at `path` to a string, which the host quotes
    /// (invalid UTF-8 becomes U+FFFD).
    pub fn set_string(&mut self, path: &str, s: impl AsRef<[u8]>) {
        put_opt(self.set(path, abi::TYPE_STRING), Some(s.as_ref()));
    }

    /// Sets the member at `path` to `json`, the text of one JSON value,
    /// written as it is (without the whitespace around it).
    pub fn set_raw(&mut self, path: &str, json: impl AsRef<[u8]>) {
        put_opt(self.set(path, abi::TYPE_RAW), Some(json.as_ref()));
    }

    /// Removes the member at `path`, every occurrence of it, if it is there.
    pub fn remove(&mut self, path: &str) {
        self.op(abi::PATCH_OP_REMOVE, path);
    }

    /// Appends the patch's entry for input `index` to `out`: a keep entry
    /// when nothing is set. Then empties the patch.
    pub(crate) fn commit(&mut self, out: &mut TypedOut, index: u32) {
        if self.is_empty() {
            return out.keep(index);
        }
        let b = &mut out.buf;
        b.push(abi::ENTRY_PATCH);
        put_u32(b, index);
        b.push(self.flags);
        if self.flags & abi::PATCH_FLAG_KEY != 0 {
            b.extend_from_slice(&self.key);
        }
        if self.flags & abi::PATCH_FLAG_TIMESTAMP != 0 {
            frame::put_i64(b, self.ts);
        }
        put_u32(b, self.nops);
        b.extend_from_slice(&self.ops);
        out.count += 1;
        self.keep();
    }

    /// Releases memory after an unusually large patch.
    pub(crate) fn shrink(&mut self, keep: usize) {
        if self.ops.capacity() > keep || self.key.capacity() > keep {
            *self = Patch::new();
        }
    }
}

/// Receives the records a typed flat_map function emits for one input, in
/// order: the input unchanged, or patched.
pub struct PatchEmitter<'o> {
    pub(crate) out: &'o mut TypedOut,
    pub(crate) patch: &'o mut Patch,
    pub(crate) index: u32,
    pub(crate) pending: bool,
}

impl<'o> PatchEmitter<'o> {
    /// Emits the pending patch, if any.
    pub(crate) fn flush(&mut self) {
        if self.pending {
            self.pending = false;
            self.patch.commit(self.out, self.index);
        }
    }

    /// Emits the input record unchanged.
    pub fn keep(&mut self) {
        self.flush();
        self.out.keep(self.index);
    }

    /// Starts the next record: the input patched by what is set on the
    /// returned [`Patch`] (or, after [`Patch::from_empty`], a new record).
    /// It is emitted at the next `PatchEmitter` call or when the function
    /// returns.
    pub fn patch(&mut self) -> &mut Patch {
        self.flush();
        self.patch.keep();
        self.pending = true;
        self.patch
    }
}
