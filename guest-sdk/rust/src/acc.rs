//! Helpers for accumulator encodings: fixed fields written with the
//! `append_*` functions and read back, in the same order, with an
//! [`AccDecoder`]. Numbers are 8 bytes little-endian (IEEE-754 binary64 for
//! floats, two's complement for integers), as the SDKs store numbers in
//! state; byte strings are a u32 little-endian length and the bytes. These
//! are the Go SDK's encodings (`weir.AppendFloat64`, `weir.AccDecoder`), so
//! accumulators written by one SDK can be read by another.

use crate::json::Sink;
use core::fmt;

/// Appends `v` as 8 bytes, little-endian.
pub fn append_i64<S: Sink + ?Sized>(dst: &mut S, v: i64) {
    dst.push_bytes(&v.to_le_bytes());
}

/// Appends `v` as 8 bytes, little-endian.
pub fn append_u64<S: Sink + ?Sized>(dst: &mut S, v: u64) {
    dst.push_bytes(&v.to_le_bytes());
}

/// Appends the IEEE-754 binary64 bits of `v` as 8 bytes, little-endian.
pub fn append_f64<S: Sink + ?Sized>(dst: &mut S, v: f64) {
    dst.push_bytes(&v.to_bits().to_le_bytes());
}

/// Appends `b` as a u32 little-endian length and the bytes.
pub fn append_bytes<S: Sink + ?Sized>(dst: &mut S, b: &[u8]) {
    dst.push_bytes(&(b.len() as u32).to_le_bytes());
    dst.push_bytes(b);
}

/// An accumulator that does not hold the fields its decoder read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccError {
    /// Where the failing field starts.
    pub offset: usize,
    /// The accumulator's length.
    pub len: usize,
    /// "8-byte number", "byte string" or "trailing bytes".
    pub what: &'static str,
}

impl fmt::Display for AccError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.what == "trailing bytes" {
            write!(f, "weir: accumulator of {} bytes has {} bytes after its last field", self.len, self.len - self.offset)
        } else {
            write!(f, "weir: accumulator of {} bytes ends inside the {} at byte {}", self.len, self.what, self.offset)
        }
    }
}

impl std::error::Error for AccError {}

/// Reads back, field by field, what the `append_*` helpers wrote. A read
/// past the end returns zero (or an empty slice) and makes [`end`] report
/// the error, so a decoder can read every field and check once.
///
/// [`end`]: AccDecoder::end
pub struct AccDecoder<'a> {
    b: &'a [u8],
    off: usize,
    err: Option<AccError>,
}

impl<'a> AccDecoder<'a> {
    /// A decoder reading `b` from its start.
    pub fn new(b: &'a [u8]) -> Self {
        AccDecoder { b, off: 0, err: None }
    }

    fn fail(&mut self, what: &'static str) {
        if self.err.is_none() {
            self.err = Some(AccError { offset: self.off, len: self.b.len(), what });
        }
        self.off = self.b.len();
    }

    fn n8(&mut self) -> [u8; 8] {
        if self.err.is_some() || self.b.len() - self.off < 8 {
            self.fail("8-byte number");
            return [0; 8];
        }
        let mut a = [0u8; 8];
        a.copy_from_slice(&self.b[self.off..self.off + 8]);
        self.off += 8;
        a
    }

    /// Reads an i64.
    pub fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.n8())
    }

    /// Reads a u64.
    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.n8())
    }

    /// Reads an f64.
    pub fn f64(&mut self) -> f64 {
        f64::from_bits(u64::from_le_bytes(self.n8()))
    }

    /// Reads a byte string (borrowing the accumulator's bytes).
    pub fn bytes(&mut self) -> &'a [u8] {
        if self.err.is_some() || self.b.len() - self.off < 4 {
            self.fail("byte string");
            return &[];
        }
        let o = self.off;
        let n = u32::from_le_bytes([self.b[o], self.b[o + 1], self.b[o + 2], self.b[o + 3]]) as usize;
        if self.b.len() - o - 4 < n {
            self.fail("byte string");
            return &[];
        }
        self.off = o + 4 + n;
        &self.b[o + 4..o + 4 + n]
    }

    /// The first error met, or an error if bytes are left after the last
    /// field read.
    pub fn end(self) -> Result<(), AccError> {
        if let Some(e) = self.err {
            return Err(e);
        }
        if self.off != self.b.len() {
            return Err(AccError { offset: self.off, len: self.b.len(), what: "trailing bytes" });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut b = Vec::new();
        append_i64(&mut b, -5);
        append_u64(&mut b, 1 << 63);
        append_f64(&mut b, 2.5);
        append_bytes(&mut b, b"TR");
        append_bytes(&mut b, b"");
        let mut d = AccDecoder::new(&b);
        assert_eq!((d.i64(), d.u64(), d.f64(), d.bytes(), d.bytes()), (-5, 1 << 63, 2.5, &b"TR"[..], &b""[..]));
        assert_eq!(d.end(), Ok(()));
    }

    #[test]
    fn errors() {
        let mut d = AccDecoder::new(&[1, 2, 3]);
        d.i64();
        assert_eq!(d.end().unwrap_err().to_string(), "weir: accumulator of 3 bytes ends inside the 8-byte number at byte 0");
        let b = 1i64.to_le_bytes();
        let d = AccDecoder::new(&b);
        assert_eq!(d.end().unwrap_err().to_string(), "weir: accumulator of 8 bytes has 8 bytes after its last field");
        let mut d = AccDecoder::new(&[0xff, 0xff, 0xff, 0xff]);
        d.bytes();
        assert_eq!(d.end().unwrap_err().to_string(), "weir: accumulator of 4 bytes ends inside the byte string at byte 0");
        let mut d = AccDecoder::new(&[1]);
        d.bytes();
        d.i64();
        assert_eq!(d.end().unwrap_err().to_string(), "weir: accumulator of 1 bytes ends inside the byte string at byte 0");
    }
}
