//! A small, allocation-light JSON reader and writer for plugins, the
//! counterpart of the Go SDK's `wjson`.
//!
//! # Reading
//!
//! [`get`], [`get_path`], [`parse`] and [`each`] validate a whole document
//! (RFC 8259, nesting at most [`MAX_DEPTH`] deep) and return [`Value`]s: views
//! into the document. [`Value::raw`] is the exact source text of the value (a
//! string keeps its quotes and escapes, a number its literal), so a field can
//! be copied into another document without re-encoding. Accessors decode on
//! demand: [`Value::as_f64`], [`Value::as_i64`], [`Value::as_bool`],
//! [`Value::decode_str`], [`Value::to_string_lossy`], [`Value::str_eq`].
//! Nothing allocates except the error of a malformed document.
//!
//! Strings may hold invalid UTF-8; decoding one replaces each invalid byte,
//! and each unpaired surrogate escape, with U+FFFD.
//!
//! # Writing
//!
//! [`Writer`] appends JSON to any [`Sink`] (a `Vec<u8>`, or the
//! [`ValueBuf`](crate::ValueBuf) of an output record, to write in place),
//! inserting commas itself. [`append_quote`] and [`append_float`] are its
//! string and number encoders: strings with minimal escaping, floats as
//! Python's `repr` prints them (shortest round-trip digits, `1.0` keeps its
//! `.0`, exponent form outside `1e-4 <= |x| < 1e16`), byte for byte as the Go
//! SDK's `wjson`.

use core::fmt;

/// The deepest nesting of arrays and objects the readers accept.
pub const MAX_DEPTH: usize = 10000;

/// The type of a JSON value. `Invalid` is the kind of a lookup that found
/// nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Invalid,
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

impl Kind {
    /// The kind's lower-case name, such as "number".
    pub fn name(self) -> &'static str {
        match self {
            Kind::Invalid => "invalid",
            Kind::Null => "null",
            Kind::Bool => "bool",
            Kind::Number => "number",
            Kind::String => "string",
            Kind::Array => "array",
            Kind::Object => "object",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A malformed document, and the byte offset where it stopped being JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    /// Byte offset into the document.
    pub offset: usize,
    /// What was wrong, such as "unexpected end of JSON input".
    pub msg: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "json: {} at byte offset {}", self.msg, self.offset)
    }
}

impl std::error::Error for SyntaxError {}

/// One JSON value inside a document. The default Value (kind `Invalid`)
/// stands for "not present".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Value<'a> {
    /// The value's type.
    pub kind: Kind,
    /// The exact source text of the value, without surrounding whitespace.
    pub raw: &'a [u8],
    /// The byte offset of `raw` within the document read.
    pub offset: usize,
    /// A string without escapes or non-ASCII bytes: its content is raw
    /// without the quotes.
    plain: bool,
}

impl Default for Value<'_> {
    fn default() -> Self {
        Value { kind: Kind::Invalid, raw: &[], offset: 0, plain: false }
    }
}

impl<'a> Value<'a> {
    /// Whether a lookup found something.
    #[inline]
    pub fn exists(&self) -> bool {
        self.kind != Kind::Invalid
    }

    /// Whether the value is missing or null.
    #[inline]
    pub fn is_null_or_missing(&self) -> bool {
        matches!(self.kind, Kind::Invalid | Kind::Null)
    }

    /// The number as the nearest f64; `None` for another kind, or for a
    /// number beyond the range of f64 (such as `1e400`).
    pub fn as_f64(&self) -> Option<f64> {
        if self.kind != Kind::Number {
            return None;
        }
        let s = core::str::from_utf8(self.raw).ok()?;
        let f: f64 = s.parse().ok()?;
        if f.is_infinite() {
            return None;
        }
        Some(f)
    }

    /// The number as an i64, if it is written as an integer (no fraction or
    /// exponent: `4.0` and `4e0` are not) within the range of i64.
    pub fn as_i64(&self) -> Option<i64> {
        if self.kind != Kind::Number {
            return None;
        }
        let b = self.raw;
        let (neg, digits) = match b.first() {
            Some(b'-') => (true, &b[1..]),
            _ => (false, b),
        };
        if digits.is_empty() {
            return None;
        }
        let mut n: i64 = 0;
        for &c in digits {
            if !c.is_ascii_digit() {
                return None;
            }
            let d = (c - b'0') as i64;
            n = n.checked_mul(10)?;
            n = if neg { n.checked_sub(d)? } else { n.checked_add(d)? };
        }
        Some(n)
    }

    /// The value of `true` or `false`.
    pub fn as_bool(&self) -> Option<bool> {
        if self.kind != Kind::Bool {
            return None;
        }
        Some(self.raw.first() == Some(&b't'))
    }

    /// Appends the decoded content of a string value to `dst`: quotes
    /// removed, escapes replaced by the UTF-8 of their characters, invalid
    /// UTF-8 and unpaired surrogates as U+FFFD. For another kind it appends
    /// `raw` unchanged.
    pub fn decode_str<S: Sink + ?Sized>(&self, dst: &mut S) {
        if self.kind != Kind::String || self.raw.len() < 2 {
            dst.push_bytes(self.raw);
            return;
        }
        let inner = &self.raw[1..self.raw.len() - 1];
        if self.plain {
            dst.push_bytes(inner);
        } else {
            unquote(dst, inner);
        }
    }

    /// The decoded content of a string value (or `raw` of another kind) as
    /// a `String`. It allocates; prefer `decode_str` or `str_eq` on hot
    /// paths.
    pub fn to_string_lossy(&self) -> String {
        let mut v = Vec::with_capacity(self.raw.len());
        self.decode_str(&mut v);
        match String::from_utf8(v) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }
    }

    /// Whether the value is a string whose decoded content equals `s`.
    pub fn str_eq(&self, s: &str) -> bool {
        if self.kind != Kind::String || self.raw.len() < 2 {
            return false;
        }
        let inner = &self.raw[1..self.raw.len() - 1];
        if self.plain {
            return inner == s.as_bytes();
        }
        key_equals(inner, s)
    }

    /// `get` over this value's own text.
    pub fn get(&self, field: &str) -> Result<Value<'a>, SyntaxError> {
        get(self.raw, field)
    }
}

/// Whether `doc` is one well-formed JSON value, with optional whitespace
/// around it.
pub fn valid(doc: &[u8]) -> bool {
    parse(doc).is_ok()
}

/// Validates `doc` and returns its top-level value.
pub fn parse(doc: &[u8]) -> Result<Value<'_>, SyntaxError> {
    let mut p = Parser::new(doc);
    let i = p.ws(0);
    let end = p.value(i);
    let end = p.eof(end);
    if end == ERR {
        return Err(p.error());
    }
    let _ = end;
    Ok(Value { kind: p.kind, raw: &doc[i..p.vend], offset: i, plain: p.plain })
}

/// Validates `doc` and returns its top-level object's field `field`: the
/// default (`Invalid`) Value when the document is not an object or has no
/// such field. When a name is repeated, the last occurrence counts, as in
/// most JSON parsers. A malformed document is an error even if the field
/// was found before the problem.
#[inline]
pub fn get<'a>(doc: &'a [u8], field: &str) -> Result<Value<'a>, SyntaxError> {
    get_path(doc, &[field])
}

/// Validates `doc` and returns the value found by following `path` through
/// nested objects: `get_path(doc, &["a", "b"])` is field "a"'s field "b".
/// An empty path gives the top-level value.
pub fn get_path<'a>(doc: &'a [u8], path: &[&str]) -> Result<Value<'a>, SyntaxError> {
    if let [field] = path {
        if let Some(v) = fast::get(doc, field) {
            return Ok(v);
        }
    }
    get_path_slow(doc, path)
}

/// get_path by the general parser: the reference for the fast path, and
/// the path every malformed document and every deeper path takes.
#[inline(never)]
fn get_path_slow<'a>(doc: &'a [u8], path: &[&str]) -> Result<Value<'a>, SyntaxError> {
    let mut p = Parser::new(doc);
    let i = p.ws(0);
    let mut found = Value::default();
    let end = p.find(i, path, &mut found);
    if p.eof(end) == ERR {
        return Err(p.error());
    }
    Ok(found)
}

/// The fast path of [`get`] for the common document: an object whose
/// members are read by one function keeping its state in locals, scanning
/// strings and digits eight bytes at a time (the counterpart of the C SDK's
/// `json_get_fast`). It validates exactly what the general parser
/// validates; whenever anything is off (malformed JSON, or a case it leaves
/// to the general parser) it returns `None` and the caller runs the general
/// parser, which then finds the same value or reports the error. So a
/// `Some` is always what the general parser would return.
///
/// Its eight-byte scanners also serve the general parser and
/// [`append_quote`].
mod fast {
    use super::{key_equals, Kind, Parser, Value, ERR};

    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;

    #[inline(always)]
    const fn rep(c: u8) -> u64 {
        ONES * c as u64
    }

    /// The 8 bytes at b[i..i + 8], little-endian.
    ///
    /// # Safety
    /// `i + 8 <= b.len()`.
    #[inline(always)]
    unsafe fn load64(b: &[u8], i: usize) -> u64 {
        debug_assert!(i + 8 <= b.len());
        u64::from_le(core::ptr::read_unaligned(b.as_ptr().add(i) as *const u64))
    }

    /// Marks (with the byte's high bit) '"', '\\', control characters and
    /// non-ASCII bytes. Only the lowest mark is exact (a borrow may mark
    /// bytes after it), which is the only one used.
    #[inline(always)]
    pub(super) fn str_special(v: u64) -> u64 {
        let q = v ^ rep(b'"');
        let s = v ^ rep(b'\\');
        (q.wrapping_sub(ONES) & !q | s.wrapping_sub(ONES) & !s | v.wrapping_sub(rep(0x20)) & !v | v) & HIGHS
    }

    /// Marks the bytes outside '0'-'9' (the lowest mark is exact).
    #[inline(always)]
    fn non_digit(v: u64) -> u64 {
        (v.wrapping_add(rep(0x46)) | v.wrapping_sub(rep(0x30))) & HIGHS
    }

    /// The offset of the first byte at or after i that str_special marks,
    /// or of the last 1-7 bytes of b, which the caller reads one at a time.
    #[inline(always)]
    pub(super) fn skip_plain8(b: &[u8], mut i: usize) -> usize {
        while i + 8 <= b.len() {
            // SAFETY: i + 8 <= b.len(), checked just above.
            let m = str_special(unsafe { load64(b, i) });
            if m != 0 {
                return i + (m.trailing_zeros() >> 3) as usize;
            }
            i += 8;
        }
        i
    }

    #[inline(always)]
    pub(super) fn skip_digits(b: &[u8], mut i: usize) -> usize {
        while i + 8 <= b.len() {
            // SAFETY: i + 8 <= b.len(), checked just above.
            let m = non_digit(unsafe { load64(b, i) });
            if m != 0 {
                return i + (m.trailing_zeros() >> 3) as usize;
            }
            i += 8;
        }
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        i
    }

    /// The offset of the first byte at or after i that is not whitespace,
    /// and that byte: 0 at the end of b (a byte no caller accepts).
    #[inline(always)]
    fn ws(b: &[u8], mut i: usize) -> (usize, u8) {
        while let Some(&c) = b.get(i) {
            if !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                return (i, c);
            }
            i += 1;
        }
        (i, 0)
    }

    /// Whether only whitespace follows i.
    #[inline(always)]
    fn rest_ws(b: &[u8], i: usize) -> bool {
        ws(b, i).0 == b.len()
    }

    /// The string at i (a '"'): the offset after it, and whether it is
    /// plain (no escapes, only ASCII); None if it is malformed.
    #[inline(always)]
    fn string(b: &[u8], mut i: usize) -> Option<(usize, bool)> {
        let mut bits = 0u8;
        let mut esc = false;
        i += 1;
        loop {
            // Eight bytes at a time to the next quote, backslash, control
            // or non-ASCII byte; the last 1-7 bytes of the document one at
            // a time, through the same tests (no table lookup: a byte loop
            // costs more than the tests under a wasm runtime).
            i = skip_plain8(b, i);
            let c = *b.get(i)?;
            if c == b'"' {
                return Some((i + 1, !esc && bits < 0x80));
            }
            if c != b'\\' {
                if c < 0x20 {
                    return None;
                }
                bits |= c;
                i += 1;
                continue;
            }
            esc = true;
            match *b.get(i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                b'u' => {
                    let h = b.get(i + 2..i + 6)?;
                    if !h.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    i += 6;
                }
                _ => return None,
            }
        }
    }

    #[inline(always)]
    fn number(b: &[u8], mut i: usize) -> Option<usize> {
        if b[i] == b'-' {
            i += 1;
        }
        match *b.get(i)? {
            b'0' => i += 1,
            b'1'..=b'9' => i = skip_digits(b, i + 1),
            _ => return None,
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            if !b.get(i)?.is_ascii_digit() {
                return None;
            }
            i = skip_digits(b, i + 1);
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            if !b.get(i)?.is_ascii_digit() {
                return None;
            }
            i = skip_digits(b, i + 1);
        }
        Some(i)
    }

    #[inline(always)]
    fn word(b: &[u8], i: usize, w: &[u8]) -> Option<usize> {
        let end = i + w.len();
        bytes_eq(b.get(i..end)?, w).then(|| end)
    }

    /// a == b, by a loop: keys are short, and `==` calls memcmp.
    #[inline(always)]
    fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
    }

    /// See the module comment.
    pub(super) fn get<'a>(b: &'a [u8], name: &str) -> Option<Value<'a>> {
        let want = name.as_bytes();
        let mut found = Value::default();
        let (i, c) = ws(b, 0);
        if c != b'{' {
            return None;
        }
        let (mut i, mut c) = ws(b, i + 1);
        if c == b'}' {
            return rest_ws(b, i + 1).then(|| found);
        }
        loop {
            if c != b'"' {
                return None;
            }
            let (kend, kplain) = string(b, i)?;
            let key = &b[i + 1..kend - 1];
            let matched = if kplain { bytes_eq(key, want) } else { key_equals(key, name) };
            let (j, colon) = ws(b, kend);
            if colon != b':' {
                return None;
            }
            let (start, first) = ws(b, j + 1);
            let (kind, end, plain) = match first {
                b'"' => {
                    let (end, plain) = string(b, start)?;
                    (Kind::String, end, plain)
                }
                b'-' | b'0'..=b'9' => (Kind::Number, number(b, start)?, false),
                b't' => (Kind::Bool, word(b, start, b"true")?, false),
                b'f' => (Kind::Bool, word(b, start, b"false")?, false),
                b'n' => (Kind::Null, word(b, start, b"null")?, false),
                b'{' | b'[' => nested(b, start)?,
                _ => return None,
            };
            if matched {
                found = Value { kind, raw: &b[start..end], offset: start, plain };
            }
            match ws(b, end) {
                (j, b'}') => return rest_ws(b, j + 1).then(|| found),
                (j, b',') => (i, c) = ws(b, j + 1),
                _ => return None,
            }
        }
    }

    /// A nested object or array, by the general parser, one level down.
    #[inline(never)]
    fn nested(b: &[u8], i: usize) -> Option<(Kind, usize, bool)> {
        let mut p = Parser::new(b);
        p.depth = 1;
        let end = p.value(i);
        if end == ERR {
            return None;
        }
        Some((p.kind, end, p.plain))
    }
}

/// Calls `f` with each field (name, value) of the object `doc`, in
/// document order, including repeated names, until it returns false. The
/// name is a Value of kind String (compare it with `str_eq`). The whole
/// document is validated; a document that is well-formed but not an object
/// calls `f` for nothing and returns `Ok(false)`; an object returns
/// `Ok(true)`.
pub fn each<'a, F>(doc: &'a [u8], mut f: F) -> Result<bool, SyntaxError>
where
    F: FnMut(Value<'a>, Value<'a>) -> bool,
{
    let mut p = Parser::new(doc);
    let i = p.ws(0);
    if i < doc.len() && doc[i] != b'{' {
        let end = p.value(i);
        if p.eof(end) == ERR {
            return Err(p.error());
        }
        return Ok(false);
    }
    let mut cb: Option<&mut dyn FnMut(Value<'a>, Value<'a>) -> bool> = Some(&mut f);
    let end = p.object(i, &mut cb);
    if p.eof(end) == ERR {
        return Err(p.error());
    }
    Ok(true)
}

/// The offset parser functions return on error; the error is in
/// Parser::err.
const ERR: usize = usize::MAX;

/// A validating parser. Its methods take the offset to read from and
/// return the offset after what they read, or ERR with the error recorded
/// in `err`. `value` also leaves the value's kind, end and (for a string)
/// plainness in `kind`, `vend` and `plain`.
struct Parser<'a> {
    b: &'a [u8],
    depth: usize,
    kind: Kind,
    vend: usize,
    plain: bool,
    err: Option<Box<SyntaxError>>,
}

impl<'a> Parser<'a> {
    fn new(b: &'a [u8]) -> Self {
        Parser { b, depth: 0, kind: Kind::Invalid, vend: 0, plain: false, err: None }
    }

    fn error(&mut self) -> SyntaxError {
        match self.err.take() {
            Some(e) => *e,
            None => SyntaxError { offset: 0, msg: "internal error".into() },
        }
    }

    #[inline(always)]
    fn ws(&self, mut i: usize) -> usize {
        while i < self.b.len() {
            match self.b[i] {
                b' ' | b'\t' | b'\n' | b'\r' => i += 1,
                _ => break,
            }
        }
        i
    }

    fn eof(&mut self, i: usize) -> usize {
        if i == ERR {
            return ERR;
        }
        let i = self.ws(i);
        if i < self.b.len() {
            return self.err_char(i, "after top-level value");
        }
        i
    }

    #[cold]
    #[inline(never)]
    fn err_eof(&mut self) -> usize {
        if self.err.is_none() {
            self.err = Some(Box::new(SyntaxError { offset: self.b.len(), msg: "unexpected end of JSON input".into() }));
        }
        ERR
    }

    #[cold]
    #[inline(never)]
    fn err_char(&mut self, i: usize, context: &str) -> usize {
        let c = self.b[i];
        let q = match c {
            b'\'' => "'\\''".to_string(),
            b'"' => "'\"'".to_string(),
            0x20..=0x7e => format!("'{}'", c as char),
            _ => format!("'\\x{:02x}'", c),
        };
        if self.err.is_none() {
            self.err = Some(Box::new(SyntaxError { offset: i, msg: format!("invalid character {} {}", q, context) }));
        }
        ERR
    }

    #[cold]
    #[inline(never)]
    fn err_lit(&mut self, i: usize, word: &[u8], j: usize) -> usize {
        let ctx = format!("in literal {} (expecting '{}')", core::str::from_utf8(word).unwrap_or(""), word[j] as char);
        self.err_char(i, &ctx)
    }

    #[cold]
    #[inline(never)]
    fn err_after(&mut self, i: usize, what: &str) -> usize {
        self.err_char(i, &format!("after {}", what))
    }

    /// Validates the value starting at i; sets kind, vend and plain.
    fn value(&mut self, i: usize) -> usize {
        let c = match self.b.get(i) {
            Some(&c) => c,
            None => return self.err_eof(),
        };
        self.plain = false;
        let end = match c {
            b'"' => {
                let end = self.str(i);
                self.kind = Kind::String;
                end
            }
            b'{' => {
                let end = self.object(i, &mut None);
                self.kind = Kind::Object;
                self.plain = false;
                end
            }
            b'[' => {
                let end = self.array(i);
                self.kind = Kind::Array;
                self.plain = false;
                end
            }
            b'-' | b'0'..=b'9' => {
                self.kind = Kind::Number;
                self.num(i)
            }
            b't' => {
                self.kind = Kind::Bool;
                self.lit(i, b"true")
            }
            b'f' => {
                self.kind = Kind::Bool;
                self.lit(i, b"false")
            }
            b'n' => {
                self.kind = Kind::Null;
                self.lit(i, b"null")
            }
            _ => return self.err_char(i, "looking for beginning of value"),
        };
        self.vend = end;
        end
    }

    fn lit(&mut self, i: usize, word: &[u8]) -> usize {
        for j in 1..word.len() {
            match self.b.get(i + j) {
                None => return self.err_eof(),
                Some(&c) if c != word[j] => return self.err_lit(i + j, word, j),
                _ => {}
            }
        }
        i + word.len()
    }

    #[inline(always)]
    fn digits(&self, i: usize) -> usize {
        fast::skip_digits(self.b, i)
    }

    #[inline]
    fn num(&mut self, mut i: usize) -> usize {
        let b = self.b;
        if b[i] == b'-' {
            i += 1;
            match b.get(i) {
                None => return self.err_eof(),
                Some(c) if !c.is_ascii_digit() => return self.err_char(i, "in numeric literal"),
                _ => {}
            }
        }
        if b[i] == b'0' {
            i += 1;
        } else {
            i = self.digits(i);
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            match b.get(i) {
                None => return self.err_eof(),
                Some(c) if !c.is_ascii_digit() => {
                    return self.err_char(i, "after decimal point in numeric literal")
                }
                _ => {}
            }
            i = self.digits(i);
        }
        if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
            i += 1;
            if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
                i += 1;
            }
            match b.get(i) {
                None => return self.err_eof(),
                Some(c) if !c.is_ascii_digit() => return self.err_char(i, "in exponent of numeric literal"),
                _ => {}
            }
            i = self.digits(i);
        }
        i
    }

    /// Validates the string starting at i (a '"'); sets plain (no
    /// escapes, only ASCII).
    #[inline(always)]
    fn str(&mut self, mut i: usize) -> usize {
        let b = self.b;
        i += 1;
        let mut escaped = false;
        let mut bits = 0u8;
        loop {
            // As in fast::string: eight bytes at a time, then one.
            i = fast::skip_plain8(b, i);
            let c = match b.get(i) {
                Some(&c) => c,
                None => return self.err_eof(),
            };
            match c {
                b'"' => {
                    self.plain = !escaped && bits < 0x80;
                    return i + 1;
                }
                b'\\' => {
                    escaped = true;
                    i = self.escape(i + 1);
                    if i == ERR {
                        return ERR;
                    }
                }
                0..=0x1f => return self.err_char(i, "in string literal"),
                _ => {
                    bits |= c;
                    i += 1;
                }
            }
        }
    }

    /// Validates the escape after a backslash, at i.
    #[inline(never)]
    fn escape(&mut self, mut i: usize) -> usize {
        let b = self.b;
        let c = match b.get(i) {
            Some(&c) => c,
            None => return self.err_eof(),
        };
        match c {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i + 1,
            b'u' => {
                i += 1;
                for _ in 0..4 {
                    match b.get(i) {
                        None => return self.err_eof(),
                        Some(&h) if unhex(h).is_none() => {
                            return self.err_char(i, "in \\u hexadecimal character escape")
                        }
                        _ => i += 1,
                    }
                }
                i
            }
            _ => self.err_char(i, "in string escape code"),
        }
    }

    fn push(&mut self, i: usize) -> bool {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            if self.err.is_none() {
                self.err = Some(Box::new(SyntaxError { offset: i, msg: "exceeded max depth".into() }));
            }
            return false;
        }
        true
    }

    /// Reads the separator after a member or element ending at i: the
    /// offset of the next one, or (with done set) the offset after the
    /// closing byte.
    #[inline(always)]
    fn next(&mut self, i: usize, closing: u8, what: &str, done: &mut bool) -> usize {
        let i = self.ws(i);
        match self.b.get(i) {
            None => self.err_eof(),
            Some(b',') => {
                let j = self.ws(i + 1);
                if j >= self.b.len() {
                    return self.err_eof();
                }
                j
            }
            Some(&c) if c == closing => {
                self.depth -= 1;
                *done = true;
                i + 1
            }
            Some(_) => self.err_after(i, what),
        }
    }

    /// Reads an object member's key and colon at i: returns the offset of
    /// the value, and sets kend (the key's end) and kplain.
    #[inline(always)]
    fn member_key(&mut self, i: usize, kend: &mut usize, kplain: &mut bool) -> usize {
        if self.b[i] != b'"' {
            return self.err_char(i, "looking for beginning of object key string");
        }
        let end = self.str(i);
        if end == ERR {
            return ERR;
        }
        *kend = end;
        *kplain = self.plain;
        let j = self.ws(end);
        match self.b.get(j) {
            None => self.err_eof(),
            Some(b':') => self.ws(j + 1),
            Some(_) => self.err_char(j, "after object key"),
        }
    }

    fn object(&mut self, i: usize, f: &mut Option<&mut dyn FnMut(Value<'a>, Value<'a>) -> bool>) -> usize {
        if !self.push(i) {
            return ERR;
        }
        let b = self.b;
        let mut i = self.ws(i + 1);
        match b.get(i) {
            None => return self.err_eof(),
            Some(b'}') => {
                self.depth -= 1;
                return i + 1;
            }
            _ => {}
        }
        loop {
            let (mut kend, mut kplain) = (0, false);
            let vstart = self.member_key(i, &mut kend, &mut kplain);
            if vstart == ERR {
                return ERR;
            }
            let vend = self.value(vstart);
            if vend == ERR {
                return ERR;
            }
            if let Some(cb) = f {
                let k = Value { kind: Kind::String, raw: &b[i..kend], offset: i, plain: kplain };
                let v = Value { kind: self.kind, raw: &b[vstart..vend], offset: vstart, plain: self.plain };
                if !cb(k, v) {
                    *f = None;
                }
            }
            let mut done = false;
            i = self.next(vend, b'}', "object key:value pair", &mut done);
            if done || i == ERR {
                return i;
            }
        }
    }

    fn array(&mut self, i: usize) -> usize {
        if !self.push(i) {
            return ERR;
        }
        let mut i = self.ws(i + 1);
        match self.b.get(i) {
            None => return self.err_eof(),
            Some(b']') => {
                self.depth -= 1;
                return i + 1;
            }
            _ => {}
        }
        loop {
            let end = self.value(i);
            if end == ERR {
                return ERR;
            }
            let mut done = false;
            i = self.next(end, b']', "array element", &mut done);
            if done || i == ERR {
                return i;
            }
        }
    }

    /// Validates the value at i and, following path through objects, sets
    /// found to the value at its end (the last one, for repeated names).
    fn find(&mut self, i: usize, path: &[&str], found: &mut Value<'a>) -> usize {
        let b = self.b;
        if path.is_empty() {
            let end = self.value(i);
            if end != ERR {
                *found = Value { kind: self.kind, raw: &b[i..end], offset: i, plain: self.plain };
            }
            return end;
        }
        if b.get(i) != Some(&b'{') {
            return self.value(i);
        }
        if !self.push(i) {
            return ERR;
        }
        let mut i = self.ws(i + 1);
        match b.get(i) {
            None => return self.err_eof(),
            Some(b'}') => {
                self.depth -= 1;
                return i + 1;
            }
            _ => {}
        }
        let want = path[0].as_bytes();
        loop {
            let (mut kend, mut kplain) = (0, false);
            let vstart = self.member_key(i, &mut kend, &mut kplain);
            if vstart == ERR {
                return ERR;
            }
            let key = &b[i + 1..kend - 1];
            let end = if (kplain && key == want) || (!kplain && key_equals(key, path[0])) {
                *found = Value::default();
                self.find(vstart, &path[1..], found)
            } else {
                self.value(vstart)
            };
            if end == ERR {
                return ERR;
            }
            let mut done = false;
            i = self.next(end, b'}', "object key:value pair", &mut done);
            if done || i == ERR {
                return i;
            }
        }
    }
}

#[inline]
fn unhex(c: u8) -> Option<u32> {
    match c {
        b'0'..=b'9' => Some((c - b'0') as u32),
        b'a'..=b'f' => Some((c - b'a') as u32 + 10),
        b'A'..=b'F' => Some((c - b'A') as u32 + 10),
        _ => None,
    }
}

fn hex4(s: &[u8]) -> Option<u32> {
    if s.len() < 4 {
        return None;
    }
    let mut r = 0;
    for &c in &s[..4] {
        r = r << 4 | unhex(c)?;
    }
    Some(r)
}

/// The length of the valid UTF-8 sequence starting `s` (non-empty, first
/// byte >= 0x80), or 0 if it is not valid UTF-8.
#[inline]
fn utf8_len(s: &[u8]) -> usize {
    let c0 = s[0];
    let cont = |i: usize, lo: u8, hi: u8| s.get(i).map_or(false, |&c| c >= lo && c <= hi);
    match c0 {
        0xC2..=0xDF if cont(1, 0x80, 0xBF) => 2,
        0xE0 if cont(1, 0xA0, 0xBF) && cont(2, 0x80, 0xBF) => 3,
        0xE1..=0xEC | 0xEE..=0xEF if cont(1, 0x80, 0xBF) && cont(2, 0x80, 0xBF) => 3,
        0xED if cont(1, 0x80, 0x9F) && cont(2, 0x80, 0xBF) => 3,
        0xF0 if cont(1, 0x90, 0xBF) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF) => 4,
        0xF1..=0xF3 if cont(1, 0x80, 0xBF) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF) => 4,
        0xF4 if cont(1, 0x80, 0x8F) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF) => 4,
        _ => 0,
    }
}

const REPLACEMENT: &[u8] = "\u{FFFD}".as_bytes();

fn push_char<S: Sink + ?Sized>(dst: &mut S, c: u32) {
    let ch = char::from_u32(c).unwrap_or('\u{FFFD}');
    let mut tmp = [0u8; 4];
    dst.push_bytes(ch.encode_utf8(&mut tmp).as_bytes());
}

/// Decodes string content (between the quotes) onto dst.
fn unquote<S: Sink + ?Sized>(dst: &mut S, s: &[u8]) {
    let mut start = 0;
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if (0x20..0x80).contains(&c) && c != b'\\' {
            i += 1;
            continue;
        }
        if c >= 0x80 {
            let n = utf8_len(&s[i..]);
            if n > 0 {
                i += n;
                continue;
            }
            dst.push_bytes(&s[start..i]);
            dst.push_bytes(REPLACEMENT);
            i += 1;
            start = i;
            continue;
        }
        dst.push_bytes(&s[start..i]);
        if c != b'\\' || i + 1 >= s.len() {
            // A control character or a trailing backslash: only in a
            // hand-made Value. Keep the byte.
            dst.push_byte(c);
            i += 1;
            start = i;
            continue;
        }
        let e = s[i + 1];
        i += 2;
        match e {
            b'"' | b'\\' | b'/' => dst.push_byte(e),
            b'b' => dst.push_byte(8),
            b'f' => dst.push_byte(12),
            b'n' => dst.push_byte(b'\n'),
            b'r' => dst.push_byte(b'\r'),
            b't' => dst.push_byte(b'\t'),
            b'u' => match hex4(&s[i..]) {
                None => dst.push_bytes(REPLACEMENT),
                Some(r) => {
                    i += 4;
                    if (0xD800..0xE000).contains(&r) {
                        let mut r2 = None;
                        if r < 0xDC00 && i + 1 < s.len() && s[i] == b'\\' && s[i + 1] == b'u' {
                            r2 = hex4(&s[i + 2..]).filter(|r2| (0xDC00..0xE000).contains(r2));
                        }
                        match r2 {
                            Some(r2) => {
                                push_char(dst, 0x10000 + ((r - 0xD800) << 10) + (r2 - 0xDC00));
                                i += 6;
                            }
                            None => dst.push_bytes(REPLACEMENT),
                        }
                    } else {
                        push_char(dst, r);
                    }
                }
            },
            _ => {
                dst.push_byte(c);
                dst.push_byte(e);
            }
        }
        start = i;
    }
    dst.push_bytes(&s[start..]);
}

/// Whether the string content raw (between the quotes) decodes to s.
fn key_equals(raw: &[u8], s: &str) -> bool {
    if !raw.contains(&b'\\') {
        // Without escapes, decoding only replaces invalid UTF-8 bytes by the
        // 3-byte U+FFFD, which never shortens the text.
        if raw == s.as_bytes() {
            return core::str::from_utf8(raw).is_ok();
        }
        if s.len() < raw.len() || raw.is_ascii() {
            return false;
        }
    }
    let mut tmp = Vec::with_capacity(raw.len());
    unquote(&mut tmp, raw);
    tmp == s.as_bytes()
}

/// Somewhere to write bytes: implemented by `Vec<u8>` and by
/// [`ValueBuf`](crate::ValueBuf).
pub trait Sink {
    /// Appends one byte.
    fn push_byte(&mut self, b: u8);
    /// Appends bytes.
    fn push_bytes(&mut self, b: &[u8]);
}

impl Sink for Vec<u8> {
    #[inline]
    fn push_byte(&mut self, b: u8) {
        self.push(b);
    }
    #[inline]
    fn push_bytes(&mut self, b: &[u8]) {
        self.extend_from_slice(b);
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Bytes that a JSON string holds as they are: printable ASCII other than
/// '"' and '\'.
static QUOTE_PLAIN: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0x20;
    while c < 0x80 {
        t[c] = c != b'"' as usize && c != b'\\' as usize;
        c += 1;
    }
    t
};

/// Appends `s` as a JSON string with minimal escaping: `"` and `\` as `\"`
/// and `\\`, U+0000 to U+001F as `\b`, `\f`, `\n`, `\r`, `\t` or `\u00xx`
/// (lower-case hex), every other character as its UTF-8 bytes, and each byte
/// that is not part of valid UTF-8 as `\ufffd`.
pub fn append_quote<S: Sink + ?Sized>(dst: &mut S, s: &[u8]) {
    dst.push_byte(b'"');
    let mut start = 0;
    let mut i = 0;
    loop {
        // Eight bytes at a time to the next byte that is not printable
        // ASCII or is '"' or '\\' (exactly those QUOTE_PLAIN rejects), then
        // one at a time.
        i = fast::skip_plain8(s, i);
        let c = match s.get(i) {
            Some(&c) => c,
            None => break,
        };
        if QUOTE_PLAIN[c as usize] {
            i += 1;
            continue;
        }
        if c >= 0x80 {
            let n = utf8_len(&s[i..]);
            if n > 0 {
                i += n;
                continue;
            }
            dst.push_bytes(&s[start..i]);
            dst.push_bytes(b"\\ufffd");
            i += 1;
            start = i;
            continue;
        }
        dst.push_bytes(&s[start..i]);
        match c {
            b'"' | b'\\' => dst.push_bytes(&[b'\\', c]),
            b'\n' => dst.push_bytes(b"\\n"),
            b'\r' => dst.push_bytes(b"\\r"),
            b'\t' => dst.push_bytes(b"\\t"),
            8 => dst.push_bytes(b"\\b"),
            12 => dst.push_bytes(b"\\f"),
            _ => dst.push_bytes(&[b'\\', b'u', b'0', b'0', HEX[(c >> 4) as usize], HEX[(c & 15) as usize]]),
        }
        i += 1;
        start = i;
    }
    dst.push_bytes(&s[start..]);
    dst.push_byte(b'"');
}

/// Appends the decimal form of `v`.
pub fn append_int<S: Sink + ?Sized>(dst: &mut S, v: i64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    let mut u = v.unsigned_abs();
    loop {
        i -= 1;
        tmp[i] = b'0' + (u % 10) as u8;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    if v < 0 {
        dst.push_byte(b'-');
    }
    dst.push_bytes(&tmp[i..]);
}

/// Appends the decimal form of `v`.
pub fn append_uint<S: Sink + ?Sized>(dst: &mut S, mut v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    dst.push_bytes(&tmp[i..]);
}

struct StackBuf {
    b: [u8; 40],
    n: usize,
}

impl fmt::Write for StackBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.n + s.len();
        if end > self.b.len() {
            return Err(fmt::Error);
        }
        self.b[self.n..end].copy_from_slice(s.as_bytes());
        self.n = end;
        Ok(())
    }
}

/// Appends `f` as Python's `repr(float)` prints it: the shortest digits
/// that read back as `f`; positional notation with a decimal point when
/// `1e-4 <= |f| < 1e16` (`52.0`, `0.0001`); otherwise exponent notation with
/// a sign and at least two exponent digits (`1e+16`, `1.5e-05`). NaN and
/// infinities are written `nan`, `inf` and `-inf` (not JSON; the
/// [`Writer`] writes them as null).
pub fn append_float<S: Sink + ?Sized>(dst: &mut S, f: f64) {
    if f.is_nan() {
        return dst.push_bytes(b"nan");
    }
    if f.is_infinite() {
        return dst.push_bytes(if f > 0.0 { b"inf" } else { b"-inf" });
    }
    let mut sb = StackBuf { b: [0; 40], n: 0 };
    // Shortest round-trip digits as d[.ddd]e[-]X.
    let _ = fmt::write(&mut sb, format_args!("{:e}", f));
    let mut s = &sb.b[..sb.n];
    if s[0] == b'-' {
        dst.push_byte(b'-');
        s = &s[1..];
    }
    let epos = s.iter().position(|&c| c == b'e').unwrap_or(s.len());
    let (mant, exp) = (&s[..epos], &s[(epos + 1).min(s.len())..]);
    let mut e: i32 = 0;
    let (neg, ed) = match exp.first() {
        Some(b'-') => (true, &exp[1..]),
        _ => (false, exp),
    };
    for &c in ed {
        e = e * 10 + (c - b'0') as i32;
    }
    if neg {
        e = -e;
    }
    let mut dbuf = [0u8; 24];
    let mut nd = 0;
    for &c in mant {
        if c != b'.' {
            dbuf[nd] = c;
            nd += 1;
        }
    }
    let digits = &dbuf[..nd];
    if !(-4..16).contains(&e) {
        dst.push_byte(digits[0]);
        if digits.len() > 1 {
            dst.push_byte(b'.');
            dst.push_bytes(&digits[1..]);
        }
        dst.push_byte(b'e');
        if e < 0 {
            dst.push_byte(b'-');
            e = -e;
        } else {
            dst.push_byte(b'+');
        }
        if e < 10 {
            dst.push_byte(b'0');
        }
        append_int(dst, e as i64);
        return;
    }
    let point = e + 1; // digits before the decimal point
    if point <= 0 {
        dst.push_bytes(b"0.");
        for _ in point..0 {
            dst.push_byte(b'0');
        }
        dst.push_bytes(digits);
    } else if (point as usize) < digits.len() {
        dst.push_bytes(&digits[..point as usize]);
        dst.push_byte(b'.');
        dst.push_bytes(&digits[point as usize..]);
    } else {
        dst.push_bytes(digits);
        for _ in digits.len()..point as usize {
            dst.push_byte(b'0');
        }
        dst.push_bytes(b".0");
    }
}

/// Appends JSON text to a [`Sink`], inserting the commas between members
/// and elements itself; the caller writes a `key` before each object
/// member and matches begins with ends (which the Writer does not check).
///
/// ```
/// use weir::json::Writer;
/// let mut out = Vec::new();
/// let mut w = Writer::new(&mut out);
/// w.begin_object();
/// w.key("id");
/// w.int(7);
/// w.key("avg");
/// w.float(1.75);
/// w.end_object();
/// assert_eq!(out, br#"{"id":7,"avg":1.75}"#);
/// ```
pub struct Writer<'w, S: Sink + ?Sized> {
    out: &'w mut S,
    comma: bool,
}

impl<'w, S: Sink + ?Sized> Writer<'w, S> {
    /// A Writer appending to `out`, after its current contents, as the start
    /// of a new JSON text.
    pub fn new(out: &'w mut S) -> Self {
        Writer { out, comma: false }
    }

    /// The sink written to.
    pub fn sink(&mut self) -> &mut S {
        self.out
    }

    #[inline]
    fn sep(&mut self) {
        if self.comma {
            self.out.push_byte(b',');
        }
        self.comma = true;
    }

    /// Writes `{`.
    pub fn begin_object(&mut self) {
        self.sep();
        self.out.push_byte(b'{');
        self.comma = false;
    }

    /// Writes `}`.
    pub fn end_object(&mut self) {
        self.out.push_byte(b'}');
        self.comma = true;
    }

    /// Writes `[`.
    pub fn begin_array(&mut self) {
        self.sep();
        self.out.push_byte(b'[');
        self.comma = false;
    }

    /// Writes `]`.
    pub fn end_array(&mut self) {
        self.out.push_byte(b']');
        self.comma = true;
    }

    /// Writes a member name and the colon.
    pub fn key(&mut self, name: &str) {
        self.key_bytes(name.as_bytes());
    }

    /// Writes a member name held in bytes, and the colon.
    pub fn key_bytes(&mut self, name: &[u8]) {
        self.sep();
        append_quote(self.out, name);
        self.out.push_byte(b':');
        self.comma = false;
    }

    /// Writes a string.
    pub fn string(&mut self, s: &str) {
        self.string_bytes(s.as_bytes());
    }

    /// Writes a string held in bytes (invalid UTF-8 as `\ufffd`).
    pub fn string_bytes(&mut self, s: &[u8]) {
        self.sep();
        append_quote(self.out, s);
    }

    /// Writes `raw`, which must be one well-formed JSON value, as it is
    /// (such as a [`Value::raw`], to copy it without re-encoding).
    pub fn raw(&mut self, raw: &[u8]) {
        self.sep();
        self.out.push_bytes(raw);
    }

    /// Writes an integer.
    pub fn int(&mut self, v: i64) {
        self.sep();
        append_int(self.out, v);
    }

    /// Writes an unsigned integer.
    pub fn uint(&mut self, v: u64) {
        self.sep();
        append_uint(self.out, v);
    }

    /// Writes a float as [`append_float`] does, but NaN and infinities,
    /// which JSON cannot hold, as null.
    pub fn float(&mut self, f: f64) {
        self.sep();
        if f.is_finite() {
            append_float(self.out, f);
        } else {
            self.out.push_bytes(b"null");
        }
    }

    /// Writes `true` or `false`.
    pub fn bool(&mut self, b: bool) {
        self.sep();
        self.out.push_bytes(if b { b"true" } else { b"false" });
    }

    /// Writes `null`.
    pub fn null(&mut self) {
        self.sep();
        self.out.push_bytes(b"null");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g<'a>(doc: &'a str, f: &str) -> Result<Value<'a>, SyntaxError> {
        get(doc.as_bytes(), f)
    }

    #[test]
    fn get_fields() {
        let v = g(r#"{ "id" : 7 , "name" : "Grace Hopper" }"#, "name").unwrap();
        assert_eq!(v.kind, Kind::String);
        assert_eq!(v.raw, br#""Grace Hopper""#);
        assert_eq!(v.offset, 22);
        let v = g(r#"{"name":"a","name":"b"}"#, "name").unwrap();
        assert_eq!(v.offset, 19);
        assert!(!g(r#"[1,2]"#, "name").unwrap().exists());
        assert!(!g(r#"{"n":1}"#, "name").unwrap().exists());
        assert!(g("not json", "name").is_err());
        assert!(g(r#"{"n":"#, "n").is_err());
        assert!(g(r#"{"n":1} x"#, "n").is_err());
        let v = g(r#"{"a\u0062":1}"#, "ab").unwrap();
        assert_eq!(v.raw, b"1");
        let v = get_path(br#"{"a":{"b":[1,{"c":2}]},"x":1}"#, &["a", "b"]).unwrap();
        assert_eq!(v.kind, Kind::Array);
        assert!(valid(b" [1, 2.5e-3, true, null, {\"x\": \"y\"}] "));
        for bad in ["", "[1,]", "{\"a\" 1}", "01x", "\"a\x01\"", "[", "{\"a\":1,}", "-", "1.", "1e", "tru", "\"\\x\""] {
            assert!(!valid(bad.as_bytes()), "{:?} is valid", bad);
        }
    }

    /// The fast path of get agrees with the general parser on every
    /// prefix of, and every one-byte change to, a set of documents.
    #[test]
    fn get_fast_path_matches() {
        let docs: &[&[u8]] = &[
            br#"{"id": "100", "kind": "temp", "value": 20.25, "timestamp": 1722960137000}"#,
            " { \"kind\" : \"a\\\"b\\u00e9\\n\" , \"kind\":\"x\u{e9}y\", \"n\": -0.5e+10, \"t\": true, \"f\": false, \"z\": null } ".as_bytes(),
            br#"{"a":{"kind":[1,{"b":2}]},"kind":[],"c":{},"d":-0,"e":1E5,"\u006bind":"esc"}"#,
            b"{\"kind\":\"a long string value, longer than eight bytes, \\t with escapes\",\"k\\/\":\"\xff\xfe\"}",
            br#"{}"#,
            br#"{"kind":12345678901234567890123}"#,
            br#"[{"kind":1}]"#,
            b"\t{\r\n\"kind\"\n:\r\"v\"\t}\n",
        ];
        let check = |d: &[u8]| {
            for f in ["kind", "id", "", "k/", "a"] {
                assert_eq!(get(d, f), get_path_slow(d, &[f]), "doc {:?} field {:?}", String::from_utf8_lossy(d), f);
            }
        };
        let mut n = 0;
        for d in docs {
            assert!(fast::get(d, "kind").is_some() || d.starts_with(b"["), "{:?} not on the fast path", String::from_utf8_lossy(d));
            for cut in 0..=d.len() {
                check(&d[..cut]);
            }
            let mut m = d.to_vec();
            for i in 0..m.len() {
                let orig = m[i];
                for &c in b"\\\"{}[]:,09.eE+- atfnu/\x01\x1f\xc3\x80\x7f" {
                    m[i] = c;
                    check(&m);
                    n += 1;
                }
                m[i] = orig;
            }
        }
        assert!(n > 1000);
    }

    /// Strings and numbers whose special bytes fall at every offset of
    /// the eight-byte scans, and near the document's end.
    #[test]
    fn scanning_positions() {
        for n in 0..20 {
            for m in 0..12 {
                let (a, z) = ("a".repeat(n), "z".repeat(m));
                let cases: &[(String, Option<(&str, bool)>)] = &[
                    (format!("\"{}{}\"", a, z), Some(("", true))),
                    (format!("\"{}\\n{}\"", a, z), Some(("\n", false))),
                    (format!("\"{}\\u00e9{}\"", a, z), Some(("\u{e9}", false))),
                    (format!("\"{}\u{e9}{}\"", a, z), Some(("\u{e9}", false))),
                    (format!("\"{}\u{1}{}\"", a, z), None),
                    (format!("\"{}\\x{}\"", a, z), None),
                    (format!("\"{}{}", a, z), None),
                ];
                for (doc, want) in cases {
                    let got = parse(doc.as_bytes());
                    match want {
                        None => assert!(got.is_err(), "{:?} parsed", doc),
                        Some((mid, plain)) => {
                            let v = got.unwrap_or_else(|e| panic!("{:?}: {}", doc, e));
                            assert_eq!(v.kind, Kind::String);
                            assert_eq!(v.plain, *plain, "{:?}", doc);
                            assert_eq!(v.to_string_lossy(), format!("{}{}{}", a, mid, z));
                            let obj = format!("{{\"k\":{}}}", doc);
                            assert_eq!(get(obj.as_bytes(), "k").unwrap().raw, doc.as_bytes());
                            assert!(fast::get(obj.as_bytes(), "k").is_some());
                        }
                    }
                }
                let digits = "1".repeat(n + 1);
                for (doc, ok) in [
                    (format!("{}", digits), true),
                    (format!("-{}.{}e+{}", digits, "5".repeat(m + 1), digits), true),
                    (format!("{}.", digits), false),
                    (format!("{}x{}", digits, z), false),
                    (format!("{}e{}", digits, z), false),
                ] {
                    match parse(doc.as_bytes()) {
                        Ok(v) => assert!(ok && v.raw == doc.as_bytes(), "{:?} parsed", doc),
                        Err(e) => assert!(!ok, "{:?}: {}", doc, e),
                    }
                    let obj = format!("{{\"k\":{}}}", doc);
                    assert_eq!(get(obj.as_bytes(), "k").is_ok(), ok, "{:?}", obj);
                }
            }
        }
    }

    #[test]
    fn syntax_error_message() {
        let e = g("not json", "x").unwrap_err();
        assert_eq!(e.to_string(), "json: invalid character 'o' in literal null (expecting 'u') at byte offset 1");
        let e = g(r#"{"n":"#, "n").unwrap_err();
        assert_eq!(e.to_string(), "json: unexpected end of JSON input at byte offset 5");
    }

    #[test]
    fn numbers() {
        fn n(s: &str) -> Value<'_> {
            parse(s.as_bytes()).unwrap()
        }
        assert_eq!(n("4").as_i64(), Some(4));
        assert_eq!(n("-2").as_i64(), Some(-2));
        assert_eq!(n("-9223372036854775808").as_i64(), Some(i64::MIN));
        assert_eq!(n("9223372036854775808").as_i64(), None);
        assert_eq!(n("4.0").as_i64(), None);
        assert_eq!(n("4e0").as_i64(), None);
        assert_eq!(n("2.5").as_f64(), Some(2.5));
        assert_eq!(n("1e400").as_f64(), None);
        assert_eq!(n("\"1\"").as_f64(), None);
        assert_eq!(n("true").as_bool(), Some(true));
    }

    #[test]
    fn strings() {
        let s = |doc: &str| {
            let v = parse(doc.as_bytes()).unwrap();
            let mut out = Vec::new();
            v.decode_str(&mut out);
            out
        };
        assert_eq!(s(r#""caf\u00e9 \"x\"""#), "café \"x\"".as_bytes());
        assert_eq!(s(r#""\ud83d\ude00""#), "😀".as_bytes());
        assert_eq!(s(r#""\ud83d x""#), "\u{fffd} x".as_bytes());
        assert_eq!(s("\"a\u{e9}\""), "a\u{e9}".as_bytes());
        let mut bad = b"\"a".to_vec();
        bad.push(0xff);
        bad.push(b'"');
        let v = parse(&bad).unwrap();
        assert_eq!(v.to_string_lossy(), "a\u{fffd}");
        assert!(parse(br#""ab""#).unwrap().str_eq("ab"));
        assert!(parse(br#""a\u0062""#).unwrap().str_eq("ab"));
        assert!(!parse(br#""ab""#).unwrap().str_eq("abc"));
    }

    #[test]
    fn quote() {
        let q = |s: &[u8]| {
            let mut out = Vec::new();
            append_quote(&mut out, s);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(q(b"a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(q(b"\x08\x0c\n\r\t\x01\x1f"), r#""\b\f\n\r\t\u0001\u001f""#);
        assert_eq!(q("é😀".as_bytes()), "\"é😀\"");
        assert_eq!(q(b"a\xffb"), r#""a\ufffdb""#);
        assert_eq!(q(b"\xed\xa0\x80"), r#""\ufffd\ufffd\ufffd""#);
        // Each kind of byte at every offset of the eight-byte scan, and
        // near the end.
        for n in 0..20 {
            for m in 0..12 {
                for (mid, want) in [
                    (&b"\""[..], "\\\""),
                    (b"\\", "\\\\"),
                    (b"\n", "\\n"),
                    (b"\x7f", "\x7f"),
                    (b"\x01", "\\u0001"),
                    ("é".as_bytes(), "é"),
                    (b"\xff", "\\ufffd"),
                    (b"\xc3", "\\ufffd"),
                    (b"", ""),
                ] {
                    let (a, z) = ("a".repeat(n), "z".repeat(m));
                    let s = [a.as_bytes(), mid, z.as_bytes()].concat();
                    assert_eq!(q(&s), format!("\"{}{}{}\"", a, want, z));
                }
            }
        }
    }

    #[test]
    fn floats() {
        let f = |x: f64| {
            let mut out = Vec::new();
            append_float(&mut out, x);
            String::from_utf8(out).unwrap()
        };
        let cases: &[(f64, &str)] = &[
            (1.75, "1.75"),
            (52.0, "52.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-5, "1.5e-05"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.2345e20, "1.2345e+20"),
            (1e100, "1e+100"),
            (0.1, "0.1"),
            (123.456, "123.456"),
            (-2.5, "-2.5"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
        ];
        for &(x, want) in cases {
            assert_eq!(f(x), want, "{}", x);
        }
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        w.begin_object();
        w.key("avg");
        w.float(f64::NAN);
        w.key("a");
        w.begin_array();
        w.int(-5);
        w.uint(7);
        w.bool(false);
        w.null();
        w.string("x");
        w.end_array();
        w.end_object();
        assert_eq!(String::from_utf8(out).unwrap(), r#"{"avg":null,"a":[-5,7,false,null,"x"]}"#);
    }

    #[test]
    fn each_fields() {
        let mut names = Vec::new();
        let obj = each(br#"{"a":1,"b":[2],"a":3}"#, |k, v| {
            names.push((k.to_string_lossy(), v.raw.to_vec()));
            true
        })
        .unwrap();
        assert!(obj);
        assert_eq!(names.len(), 3);
        assert_eq!(names[2], ("a".to_string(), b"3".to_vec()));
        assert!(!each(b"[1]", |_, _| true).unwrap());
    }
}
