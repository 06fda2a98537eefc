//! The dispatch of the typed convention's calls (ABI section 14) to the
//! typed functions: a typed batch frame in, a typed output frame out, or a
//! typed add frame in and an add output frame out.

use crate::abi;
use crate::frame::{put_u32, FrameError, Reader};
use crate::patch::{Patch, PatchEmitter, TypedOut};
use crate::row::Row;
use crate::runtime::{add_group, AggInput, Handlers, Op, Processor};
use crate::Error;

impl Processor {
    /// Processes one typed batch frame for op; returns the typed output
    /// frame. A record whose function fails is answered with its error
    /// alone: what the function emitted for it is taken back.
    pub(crate) fn typed_batch(&mut self, h: &mut Handlers, op: Op, frame: &[u8]) -> Result<&[u8], FrameError> {
        let n = self.cols.read(frame)?;
        let out = &mut self.typed;
        out.reset();
        for i in 0..n {
            let row = self.cols.row(frame, i);
            let mark = out.mark();
            let res = match op {
                Op::Map => map_one(h, &row, out, &mut self.patch),
                Op::FlatMap => flat_map_one(h, &row, out, &mut self.patch),
                Op::Filter => filter_one(h, &row, out),
            };
            if let Err(e) = res {
                out.rewind(mark);
                out.error(i, e.message());
            }
        }
        Ok(out.finish())
    }

    /// Processes one typed add frame (ABI section 14.5); returns the add
    /// output frame.
    pub(crate) fn typed_agg_add(&mut self, h: &mut Handlers, frame: &[u8]) -> Result<&[u8], FrameError> {
        let (groups, table_end, total) = group_table(frame)?;
        let start = batch_start(frame, table_end)?;
        let batch = &frame[start..];
        let shifted = |e: FrameError| FrameError { offset: start + e.offset, what: e.what };
        if self.cols.read(batch).map_err(shifted)? != total {
            return Err(FrameError {
                offset: start,
                what: "the groups' record counts do not add up to the typed batch's",
            });
        }
        let mut rd = Reader::new(&frame[..table_end]);
        rd.count("group count")?;
        let w = &mut self.agg;
        w.frame().clear();
        put_u32(w.frame(), groups);
        let mut first = 0;
        for _ in 0..groups {
            let acc = rd.acc()?;
            let n = rd.u32("record count")?;
            let cols = &self.cols;
            add_group(w, h.agg.as_deref_mut(), acc, n, |i, agg| {
                let row = cols.row(batch, first + i);
                Ok(agg.map_or(Ok(()), |a| a.add(AggInput::Row(&row))))
            })?;
            first += n;
        }
        Ok(self.agg.frame_ref())
    }
}

fn map_one(h: &mut Handlers, row: &Row<'_>, out: &mut TypedOut, patch: &mut Patch) -> Result<(), Error> {
    let f = h.typed_map.as_mut().ok_or_else(|| Error::new(Op::Map.no_handler()))?;
    patch.keep();
    f(row, patch)?;
    patch.commit(out, row.index());
    Ok(())
}

fn flat_map_one(h: &mut Handlers, row: &Row<'_>, out: &mut TypedOut, patch: &mut Patch) -> Result<(), Error> {
    let f = h.typed_flat_map.as_mut().ok_or_else(|| Error::new(Op::FlatMap.no_handler()))?;
    let mut emit = PatchEmitter { out, patch, index: row.index(), pending: false };
    f(row, &mut emit)?;
    emit.flush();
    Ok(())
}

fn filter_one(h: &mut Handlers, row: &Row<'_>, out: &mut TypedOut) -> Result<(), Error> {
    let f = h.typed_filter.as_mut().ok_or_else(|| Error::new(Op::Filter.no_handler()))?;
    if f(row)? {
        out.keep(row.index());
    }
    Ok(())
}

/// Reads the group table of a typed add frame: the group count, the
/// table's end and the number of records of all groups.
fn group_table(frame: &[u8]) -> Result<(u32, usize, u32), FrameError> {
    let mut rd = Reader::new(frame);
    let groups = rd.count("group count")?;
    let mut total = 0u32;
    for _ in 0..groups {
        rd.acc()?;
        total = total.saturating_add(rd.u32("record count")?);
        if total > abi::MAX_BATCH_RECORDS {
            return Err(FrameError { offset: rd.offset() - 4, what: "more records than a batch holds" });
        }
    }
    Ok((groups, rd.offset(), total))
}

/// Where the typed batch of a typed add frame starts: after the zero bytes
/// that align it.
fn batch_start(frame: &[u8], table_end: usize) -> Result<usize, FrameError> {
    let start = (table_end + abi::TYPED_ALIGN - 1) / abi::TYPED_ALIGN * abi::TYPED_ALIGN;
    match frame.get(table_end..start) {
        Some(pad) if pad.iter().all(|&b| b == 0) => Ok(start),
        _ => Err(FrameError { offset: table_end, what: "padding before the typed batch is not zero bytes" }),
    }
}
