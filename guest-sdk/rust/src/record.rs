//! Input records.

/// One input record of a batch (or of an aggregate group), as a registered
/// function sees it.
///
/// The slices borrow the frame the host wrote into guest memory: they are
/// valid for the duration of the call only. Copy what must outlive it.
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    /// The record key; `None` when the record has none (a null key), which
    /// is distinct from `Some(b"")`.
    pub key: Option<&'a [u8]>,
    /// The record value; `None` when absent (a tombstone).
    pub value: Option<&'a [u8]>,
    /// Event time, milliseconds since the Unix epoch.
    pub timestamp: i64,
    /// The record's headers, in order.
    pub headers: Headers<'a>,
    pub(crate) index: u32,
}

impl<'a> Record<'a> {
    /// A record with the given key and value, timestamp 0 and no headers,
    /// at batch index 0: for unit tests of plugin functions. State calls
    /// made with it go to the native stand-in host (see [`crate::testing`]).
    pub fn new(key: Option<&'a [u8]>, value: Option<&'a [u8]>) -> Self {
        Record { key, value, timestamp: 0, headers: Headers::new(&[], 0), index: 0 }
    }

    /// The value, or an empty slice when it is absent.
    #[inline]
    pub fn value_bytes(&self) -> &'a [u8] {
        self.value.unwrap_or(&[])
    }

    /// The record's index in its batch (or group): the number the host uses
    /// to scope state calls made for it.
    #[inline]
    pub fn index(&self) -> u32 {
        self.index
    }
}

/// The headers of a record: a view of their encoding in the frame
/// (ABI 5.1), decoded as they are visited.
#[derive(Clone, Copy)]
pub struct Headers<'a> {
    raw: &'a [u8],
    count: u32,
}

impl<'a> Headers<'a> {
    /// `raw` must hold `count` well-formed headers (the frame reader checks
    /// them).
    pub(crate) fn new(raw: &'a [u8], count: u32) -> Self {
        Headers { raw, count }
    }

    /// The number of headers.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether there are no headers.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The headers in order, as (name, value) pairs.
    pub fn iter(&self) -> HeaderIter<'a> {
        HeaderIter { raw: self.raw, left: self.count }
    }

    /// The value of the first header called `name`.
    pub fn get(&self, name: &str) -> Option<&'a [u8]> {
        self.iter().find(|(n, _)| *n == name.as_bytes()).map(|(_, v)| v)
    }
}

impl core::fmt::Debug for Headers<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list()
            .entries(self.iter().map(|(n, v)| (String::from_utf8_lossy(n), String::from_utf8_lossy(v))))
            .finish()
    }
}

impl<'a> IntoIterator for Headers<'a> {
    type Item = (&'a [u8], &'a [u8]);
    type IntoIter = HeaderIter<'a>;
    fn into_iter(self) -> HeaderIter<'a> {
        self.iter()
    }
}

/// Iterator over a record's headers, yielding (name, value).
pub struct HeaderIter<'a> {
    raw: &'a [u8],
    left: u32,
}

impl<'a> HeaderIter<'a> {
    fn take(&mut self) -> Option<&'a [u8]> {
        let n = u32::from_le_bytes(self.raw.get(..4)?.try_into().ok()?) as usize;
        let b = self.raw.get(4..4 + n)?;
        self.raw = &self.raw[4 + n..];
        Some(b)
    }
}

impl<'a> Iterator for HeaderIter<'a> {
    type Item = (&'a [u8], &'a [u8]);
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let name = self.take()?;
        let value = self.take()?;
        Some((name, value))
    }
}
