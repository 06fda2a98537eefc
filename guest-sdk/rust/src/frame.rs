//! Decoding of the host's frames (ABI sections 5.1, 12.1 and 12.3) and the
//! small helpers that write the guest's frames. All integers are
//! little-endian, without padding.

use crate::record::{Headers, Record};

/// The length that marks an absent key, value or accumulator.
pub(crate) use crate::abi::ABSENT;

/// The largest count any frame may declare (2^24): the batch limit, which
/// every aggregate count shares.
pub(crate) const MAX_COUNT: u32 = crate::abi::MAX_BATCH_RECORDS;
const _: () = assert!(crate::abi::MAX_AGG_COUNT == MAX_COUNT);

/// A frame from the host that does not decode: a host bug. The exports
/// turn it into a trap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameError {
    /// Byte offset into the frame where decoding stopped.
    pub offset: usize,
    /// What was being read.
    pub what: &'static str,
}

impl core::fmt::Display for FrameError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "weir: malformed frame at byte {}: {}", self.offset, self.what)
    }
}

/// A cursor over a frame.
pub(crate) struct Reader<'a> {
    b: &'a [u8],
    off: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(b: &'a [u8]) -> Self {
        Reader { b, off: 0 }
    }

    /// The offset of the next byte to read.
    pub(crate) fn offset(&self) -> usize {
        self.off
    }

    fn err(&self, what: &'static str) -> FrameError {
        FrameError { offset: self.off, what }
    }

    #[inline]
    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, FrameError> {
        match self.b.get(self.off..self.off + 4) {
            Some(s) => {
                self.off += 4;
                Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
            }
            None => Err(self.err(what)),
        }
    }

    #[inline]
    fn i64(&mut self, what: &'static str) -> Result<i64, FrameError> {
        match self.b.get(self.off..self.off + 8) {
            Some(s) => {
                self.off += 8;
                let mut a = [0u8; 8];
                a.copy_from_slice(s);
                Ok(i64::from_le_bytes(a))
            }
            None => Err(self.err(what)),
        }
    }

    #[inline]
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], FrameError> {
        let end = self.off.checked_add(n).ok_or_else(|| self.err(what))?;
        match self.b.get(self.off..end) {
            Some(s) => {
                self.off = end;
                Ok(s)
            }
            None => Err(self.err(what)),
        }
    }

    /// The next n bytes.
    pub(crate) fn opt_bytes_fixed(&mut self, n: usize) -> Result<&'a [u8], FrameError> {
        self.take(n, "fixed-size field")
    }

    /// A count, at most MAX_COUNT.
    pub(crate) fn count(&mut self, what: &'static str) -> Result<u32, FrameError> {
        let n = self.u32(what)?;
        if n > MAX_COUNT {
            return Err(FrameError { offset: self.off - 4, what: "count over the limit 2^24" });
        }
        Ok(n)
    }

    /// A u32 length and that many bytes, or None for ABSENT.
    #[inline]
    pub(crate) fn opt_bytes(&mut self, what: &'static str) -> Result<Option<&'a [u8]>, FrameError> {
        let n = self.u32(what)?;
        if n == ABSENT {
            return Ok(None);
        }
        self.take(n as usize, what).map(Some)
    }

    /// The context of an entry of a result context frame (ABI section
    /// 12.5): the key, the flags and the window bounds, checked as the Go
    /// decoder checks them (no unknown flag, no bounds without a window,
    /// start <= end).
    pub(crate) fn agg_context(&mut self) -> Result<crate::AggContext<'a>, FrameError> {
        let key = self.opt_bytes("key")?;
        let at = self.off;
        let flags = self.take(1, "context flags")?[0];
        let start = self.i64("window start")?;
        let end = self.i64("window end")?;
        let windowed = flags & crate::abi::AGG_CONTEXT_WINDOWED != 0;
        let bad = |what| Err(FrameError { offset: at, what });
        if flags & !crate::abi::AGG_CONTEXT_WINDOWED != 0 {
            return bad("unknown context flags");
        }
        if !windowed && (start != 0 || end != 0) {
            return bad("window bounds in a context that is not windowed");
        }
        if start > end {
            return bad("window start after its end");
        }
        Ok(crate::AggContext { key, window: if windowed { Some((start, end)) } else { None } })
    }

    /// An accumulator: a u32 length and that many bytes, never absent.
    pub(crate) fn acc(&mut self) -> Result<&'a [u8], FrameError> {
        match self.opt_bytes("accumulator")? {
            Some(b) => Ok(b),
            None => Err(FrameError { offset: self.off - 4, what: "accumulator marked absent" }),
        }
    }

    /// One record, as in a batch frame, numbered index.
    ///
    /// The common record, with no headers, is read with the offset in a
    /// local and bounds checked once per field; anything else (headers, a
    /// frame that ends early) goes to `record_slow`, which reads the record
    /// again from its start and reports exactly where a bad frame stops.
    #[inline(always)]
    pub(crate) fn record(&mut self, index: u32) -> Result<Record<'a>, FrameError> {
        let b = self.b;
        let mut o = self.off;
        // Timestamp and key length. `o <= b.len()` always holds (every
        // method leaves off within the frame), so the subtraction cannot
        // wrap.
        if b.len() - o < 12 {
            return self.record_slow(index);
        }
        // SAFETY: o + 12 <= b.len(), checked above.
        let timestamp = unsafe { le_u64(b, o) } as i64;
        let klen = unsafe { le_u32(b, o + 8) };
        o += 12;
        let key = if klen == ABSENT {
            None
        } else {
            if (klen as usize) > b.len() - o {
                return self.record_slow(index);
            }
            let k = &b[o..o + klen as usize];
            o += klen as usize;
            Some(k)
        };
        if b.len() - o < 4 {
            return self.record_slow(index);
        }
        // SAFETY: o + 4 <= b.len(), checked above.
        let vlen = unsafe { le_u32(b, o) };
        o += 4;
        let value = if vlen == ABSENT {
            None
        } else {
            if (vlen as usize) > b.len() - o {
                return self.record_slow(index);
            }
            let v = &b[o..o + vlen as usize];
            o += vlen as usize;
            Some(v)
        };
        // SAFETY: o + 4 <= b.len(), checked just before.
        if b.len() - o < 4 || unsafe { le_u32(b, o) } != 0 {
            return self.record_slow(index);
        }
        o += 4;
        self.off = o;
        Ok(Record { key, value, timestamp, headers: Headers::new(&[], 0), index })
    }

    /// `record` for any record, with headers or in a malformed frame.
    #[inline(never)]
    fn record_slow(&mut self, index: u32) -> Result<Record<'a>, FrameError> {
        let timestamp = self.i64("record timestamp")?;
        let key = self.opt_bytes("record key")?;
        let value = self.opt_bytes("record value")?;
        let count = self.u32("header count")?;
        let start = self.off;
        for _ in 0..count {
            let n = self.u32("header name")?;
            self.take(n as usize, "header name")?;
            let n = self.u32("header value")?;
            self.take(n as usize, "header value")?;
        }
        let headers = Headers::new(&self.b[start..self.off], count);
        Ok(Record { key, value, timestamp, headers, index })
    }

    /// Checks that the whole frame was read.
    pub(crate) fn end(&self) -> Result<(), FrameError> {
        if self.off != self.b.len() {
            return Err(self.err("trailing bytes after the last entry"));
        }
        Ok(())
    }
}

/// The little-endian u32 at b[i..i + 4].
///
/// # Safety
/// `i + 4 <= b.len()`.
#[inline(always)]
unsafe fn le_u32(b: &[u8], i: usize) -> u32 {
    debug_assert!(i + 4 <= b.len());
    u32::from_le(core::ptr::read_unaligned(b.as_ptr().add(i) as *const u32))
}

/// The little-endian u64 at b[i..i + 8].
///
/// # Safety
/// `i + 8 <= b.len()`.
#[inline(always)]
unsafe fn le_u64(b: &[u8], i: usize) -> u64 {
    debug_assert!(i + 8 <= b.len());
    u64::from_le(core::ptr::read_unaligned(b.as_ptr().add(i) as *const u64))
}

#[inline]
pub(crate) fn put_u32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_le_bytes());
}

#[inline]
pub(crate) fn put_i64(b: &mut Vec<u8>, v: i64) {
    b.extend_from_slice(&v.to_le_bytes());
}

#[inline]
pub(crate) fn patch_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Appends an optional byte string: its u32 length (ABSENT for None) and
/// its bytes.
#[inline]
pub(crate) fn put_opt(b: &mut Vec<u8>, v: Option<&[u8]>) {
    match v {
        None => put_u32(b, ABSENT),
        Some(v) => {
            put_u32(b, v.len() as u32);
            b.extend_from_slice(v);
        }
    }
}

/// Output entry kinds (ABI 5.2).
pub(crate) use crate::abi::{ENTRY_ERROR as KIND_ERROR, ENTRY_KEEP as KIND_KEEP, ENTRY_RECORD as KIND_RECORD};

/// Record entry flags (ABI 5.2).
pub(crate) use crate::abi::{FLAG_HEADERS, FLAG_KEY, FLAG_TIMESTAMP};

#[inline]
pub(crate) fn put_keep(b: &mut Vec<u8>, index: u32) {
    b.push(KIND_KEEP);
    put_u32(b, index);
}

pub(crate) fn put_error(b: &mut Vec<u8>, index: u32, msg: &str) {
    b.push(KIND_ERROR);
    put_u32(b, index);
    put_opt(b, Some(msg.as_bytes()));
}

/// Appends a record entry that sets only the value.
#[inline]
pub(crate) fn put_value_record(b: &mut Vec<u8>, index: u32, v: Option<&[u8]>) {
    b.push(KIND_RECORD);
    put_u32(b, index);
    b.push(0);
    put_opt(b, v);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record's key, value, timestamp and headers.
    type Rec = (Option<Vec<u8>>, Option<Vec<u8>>, i64, Vec<(Vec<u8>, Vec<u8>)>);

    /// Reads every record of b, or the first error, with record or
    /// record_slow.
    fn read_all(b: &[u8], n: u32, slow: bool) -> Result<Vec<Rec>, FrameError> {
        let mut rd = Reader::new(b);
        let mut out = Vec::new();
        for i in 0..n {
            let r = if slow { rd.record_slow(i)? } else { rd.record(i)? };
            assert_eq!(r.index, i);
            let hs = r.headers.iter().map(|(n, v)| (n.to_vec(), v.to_vec())).collect();
            out.push((r.key.map(<[u8]>::to_vec), r.value.map(<[u8]>::to_vec), r.timestamp, hs));
        }
        rd.end()?;
        Ok(out)
    }

    /// The fast record reader agrees with the general one on every prefix
    /// of a frame mixing absent and empty fields and headers.
    #[test]
    fn record_fast_path_matches() {
        let mut b = Vec::new();
        let recs: &[(Option<&[u8]>, Option<&[u8]>, i64, &[(&[u8], &[u8])])] = &[
            (Some(b"k1"), Some(br#"{"a":1}"#), 5, &[]),
            (None, None, -1, &[]),
            (Some(b""), Some(b""), i64::MAX, &[(b"h", b"v"), (b"", b"")]),
            (None, Some(b"xyz"), 0, &[(b"name", b"value")]),
            (Some(b"last"), None, 7, &[]),
        ];
        for (k, v, ts, hs) in recs {
            put_i64(&mut b, *ts);
            put_opt(&mut b, *k);
            put_opt(&mut b, *v);
            put_u32(&mut b, hs.len() as u32);
            for (n, v) in hs.iter() {
                put_opt(&mut b, Some(n));
                put_opt(&mut b, Some(v));
            }
        }
        let n = recs.len() as u32;
        let all = read_all(&b, n, false).unwrap();
        assert_eq!(all.len(), recs.len());
        assert_eq!(all[2].3, vec![(b"h".to_vec(), b"v".to_vec()), (vec![], vec![])]);
        for cut in 0..b.len() {
            assert_eq!(read_all(&b[..cut], n, false), read_all(&b[..cut], n, true), "cut at {}", cut);
        }
        // A length beyond the frame, and one that would overflow.
        for bad in [0x7fff_fff0u32, 0xffff_fffe] {
            let mut c = b.clone();
            c[8..12].copy_from_slice(&bad.to_le_bytes());
            assert_eq!(read_all(&c, n, false), read_all(&c, n, true));
            assert!(read_all(&c, n, false).is_err());
        }
    }
}
