//! Registration of the plugin's functions and the dispatch of the ABI's
//! calls to them.

use crate::frame::{self, put_error, put_keep, put_u32, FrameError, Reader};
use crate::output::{Emitter, Output, ValueBuf};
use crate::record::Record;
use crate::{Config, Error};
use std::cell::RefCell;

/// The batch operations (ABI section 5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Map,
    FlatMap,
    Filter,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Map => "map",
            Op::FlatMap => "flat_map",
            Op::Filter => "filter",
        }
    }
}

type MapFn = Box<dyn FnMut(&Record<'_>, &mut Output) -> Result<(), Error>>;
type FlatMapFn = Box<dyn FnMut(&Record<'_>, &mut Emitter<'_>) -> Result<(), Error>>;
type FilterFn = Box<dyn FnMut(&Record<'_>) -> Result<bool, Error>>;

/// An aggregate, in the manner of Flink's `AggregateFunction` (ABI section
/// 12): the host keeps one accumulator per group (a key, a window) as bytes,
/// which [`encode`](Aggregate::encode) and [`decode`](Aggregate::decode)
/// convert, and calls the plugin to fold records into accumulators, merge
/// two, and turn one into the group's result.
///
/// For each group of an add call the SDK decodes the accumulator once,
/// calls `add` for each of the group's records in order, and encodes it
/// once.
pub trait Aggregate {
    /// The accumulator.
    type Acc;

    /// A fresh accumulator. It must always be the same: the host calls it
    /// once per worker and copies its encoding for every new group.
    fn create(&mut self) -> Self::Acc;

    /// Folds `r` into `acc`. An error rejects `r` (the host dead-letters it
    /// with the reason `aggregate error: <message>`) and the group's other
    /// records are folded as usual; check the record before changing `acc`,
    /// since changes made before the error remain.
    fn add(&mut self, acc: &mut Self::Acc, r: &Record<'_>) -> Result<(), Error>;

    /// The accumulator combining two partial aggregates of one group.
    fn merge(&mut self, a: Self::Acc, b: Self::Acc) -> Self::Acc;

    /// Writes the group's result value to `out` ([`ValueBuf::set_null`] for
    /// an absent value). An error is reported instead of a result.
    fn result(&mut self, acc: &Self::Acc, out: &mut ValueBuf) -> Result<(), Error>;

    /// Appends the accumulator's bytes to `out`.
    fn encode(&mut self, acc: &Self::Acc, out: &mut ValueBuf);

    /// Reads an accumulator back from what `encode` wrote (possibly by
    /// another SDK's plugin, for a shared encoding).
    fn decode(&mut self, b: &[u8]) -> Result<Self::Acc, Error>;
}

/// An Aggregate with its accumulator type hidden.
trait DynAgg {
    fn create(&mut self, out: &mut ValueBuf);
    fn begin(&mut self, acc: &[u8]) -> Result<(), Error>;
    fn add(&mut self, r: &Record<'_>) -> Result<(), Error>;
    fn end(&mut self, out: &mut ValueBuf);
    fn merge(&mut self, a: &[u8], b: &[u8], out: &mut ValueBuf) -> Result<(), Error>;
    fn result(&mut self, acc: &[u8], out: &mut ValueBuf) -> Result<(), Error>;
}

struct AggOf<A: Aggregate> {
    a: A,
    cur: Option<A::Acc>,
}

fn bad_acc(e: Error) -> Error {
    Error::new(format!("bad accumulator: {}", e))
}

impl<A: Aggregate> DynAgg for AggOf<A> {
    fn create(&mut self, out: &mut ValueBuf) {
        let acc = self.a.create();
        self.a.encode(&acc, out);
    }
    fn begin(&mut self, acc: &[u8]) -> Result<(), Error> {
        self.cur = Some(self.a.decode(acc).map_err(bad_acc)?);
        Ok(())
    }
    fn add(&mut self, r: &Record<'_>) -> Result<(), Error> {
        match self.cur.as_mut() {
            Some(acc) => self.a.add(acc, r),
            None => Err(Error::new("weir: no accumulator")),
        }
    }
    fn end(&mut self, out: &mut ValueBuf) {
        if let Some(acc) = self.cur.take() {
            self.a.encode(&acc, out);
        }
    }
    fn merge(&mut self, a: &[u8], b: &[u8], out: &mut ValueBuf) -> Result<(), Error> {
        let x = self.a.decode(a).map_err(bad_acc)?;
        let y = self.a.decode(b).map_err(bad_acc)?;
        let m = self.a.merge(x, y);
        self.a.encode(&m, out);
        Ok(())
    }
    fn result(&mut self, acc: &[u8], out: &mut ValueBuf) -> Result<(), Error> {
        let acc = self.a.decode(acc).map_err(bad_acc)?;
        self.a.result(&acc, out)
    }
}

/// The registered functions.
#[derive(Default)]
struct Handlers {
    map: Option<MapFn>,
    flat_map: Option<FlatMapFn>,
    filter: Option<FilterFn>,
    agg: Option<Box<dyn DynAgg>>,
    /// A registration mistake, reported as weir_init's error.
    misuse: Option<String>,
}

thread_local! {
    static HANDLERS: RefCell<Handlers> = RefCell::new(Handlers::default());
    static PROC: RefCell<Processor> = RefCell::new(Processor::new());
}

fn register(kind: &str, f: impl FnOnce(&mut Handlers) -> bool) {
    HANDLERS.with(|h| {
        let mut h = h.try_borrow_mut().unwrap_or_else(|_| {
            panic!("weir: register_{} called while a plugin function runs; register functions in init", kind)
        });
        if !f(&mut h) && h.misuse.is_none() {
            h.misuse = Some(format!("weir: {} function already registered", kind));
        }
    })
}

/// Registers the map function: it answers each record through an
/// [`Output`] (set nothing to keep the record unchanged) or with an error,
/// which rejects the record. Call it from the plugin's init function.
pub fn register_map<F>(f: F)
where
    F: FnMut(&Record<'_>, &mut Output) -> Result<(), Error> + 'static,
{
    register("map", |h| h.map.replace(Box::new(f)).is_none());
}

/// Registers the flat_map function: it emits zero or more records for each
/// input through an [`Emitter`]. An error rejects the input and discards
/// what was emitted for it.
pub fn register_flat_map<F>(f: F)
where
    F: FnMut(&Record<'_>, &mut Emitter<'_>) -> Result<(), Error> + 'static,
{
    register("flat_map", |h| h.flat_map.replace(Box::new(f)).is_none());
}

/// Registers the filter function: `Ok(true)` keeps the record, `Ok(false)`
/// drops it, an error rejects it.
pub fn register_filter<F>(f: F)
where
    F: FnMut(&Record<'_>) -> Result<bool, Error> + 'static,
{
    register("filter", |h| h.filter.replace(Box::new(f)).is_none());
}

/// Registers the aggregate.
pub fn register_aggregate<A: Aggregate + 'static>(a: A) {
    register("aggregate", |h| h.agg.replace(Box::new(AggOf { a, cur: None })).is_none());
}

/// Builds the output frames of one instance. Its buffers are reused from
/// call to call, so a steady stream of batches does not allocate.
pub(crate) struct Processor {
    out: Output,
    agg: ValueBuf,
    init_msg: Vec<u8>,
}

/// The answer frames stay in these buffers until the next call.
impl Processor {
    fn new() -> Self {
        Processor { out: Output::new(), agg: ValueBuf::new(), init_msg: Vec::new() }
    }

    fn no_handler(op: Op) -> String {
        format!("plugin has no {} handler", op.name())
    }

    /// Processes one batch frame for op; returns the output frame.
    fn batch(&mut self, h: &mut Handlers, op: Op, frame: &[u8]) -> Result<&[u8], FrameError> {
        let mut rd = Reader::new(frame);
        let n = rd.count("record count")?;
        let out = &mut self.out;
        out.frame().clear();
        put_u32(out.frame(), n);
        match op {
            Op::Map => match h.map.as_mut() {
                Some(f) => {
                    for i in 0..n {
                        let rec = rd.record(i)?;
                        out.reset(i);
                        if let Err(e) = f(&rec, out) {
                            let at = out.entry_start();
                            out.rollback(at);
                            put_error(out.frame(), i, e.message());
                        } else {
                            out.commit(rec.value);
                        }
                    }
                }
                None => reject_all(&mut rd, out.frame(), n, &Self::no_handler(op))?,
            },
            Op::FlatMap => match h.flat_map.as_mut() {
                Some(f) => {
                    out.entries = 0;
                    for i in 0..n {
                        let rec = rd.record(i)?;
                        let start = out.frame().len();
                        let before = out.entries;
                        let mut em = Emitter { out: &mut *out, index: i, input: rec.value, pending: false };
                        match f(&rec, &mut em) {
                            Ok(()) => em.flush(),
                            Err(e) => {
                                out.rollback(start);
                                put_error(out.frame(), i, e.message());
                                out.entries = before + 1;
                            }
                        }
                    }
                    let count = out.entries;
                    frame::patch_u32(out.frame(), 0, count);
                }
                None => reject_all(&mut rd, out.frame(), n, &Self::no_handler(op))?,
            },
            Op::Filter => match h.filter.as_mut() {
                Some(f) => {
                    let mut kept = 0u32;
                    for i in 0..n {
                        let rec = rd.record(i)?;
                        match f(&rec) {
                            Ok(true) => {
                                put_keep(out.frame(), i);
                                kept += 1;
                            }
                            Ok(false) => {}
                            Err(e) => {
                                put_error(out.frame(), i, e.message());
                                kept += 1;
                            }
                        }
                    }
                    frame::patch_u32(out.frame(), 0, kept);
                }
                None => reject_all(&mut rd, out.frame(), n, &Self::no_handler(op))?,
            },
        }
        rd.end()?;
        Ok(out.buf().frame_ref())
    }

    /// weir_agg_create: a fresh accumulator, or None without an aggregate.
    fn agg_create(&mut self, h: &mut Handlers) -> Option<&[u8]> {
        let agg = h.agg.as_mut()?;
        self.agg.frame().clear();
        self.agg.begin();
        agg.create(&mut self.agg);
        Some(self.agg.frame_ref())
    }

    /// weir_agg_add.
    fn agg_add(&mut self, h: &mut Handlers, frame: &[u8]) -> Result<&[u8], FrameError> {
        let mut rd = Reader::new(frame);
        let groups = rd.count("group count")?;
        let w = &mut self.agg;
        w.frame().clear();
        put_u32(w.frame(), groups);
        for _ in 0..groups {
            let acc = rd.acc()?;
            let n = rd.count("record count")?;
            let count_pos = w.frame().len();
            put_u32(w.frame(), 0);
            let mut errors = 0u32;
            let mut err = |w: &mut ValueBuf, i: u32, msg: &str| {
                put_u32(w.frame(), i);
                frame::put_opt(w.frame(), Some(msg.as_bytes()));
                errors += 1;
            };
            let begun = match h.agg.as_mut() {
                None => Err(Error::new("plugin has no aggregate handler")),
                Some(a) => a.begin(acc),
            };
            match begun {
                Err(e) => {
                    for i in 0..n {
                        rd.record(i)?;
                        err(w, i, e.message());
                    }
                    frame::patch_u32(w.frame(), count_pos, errors);
                    frame::put_opt(w.frame(), Some(acc));
                }
                Ok(()) => {
                    let a = h.agg.as_mut().unwrap();
                    for i in 0..n {
                        let rec = rd.record(i)?;
                        if let Err(e) = a.add(&rec) {
                            err(w, i, e.message());
                        }
                    }
                    frame::patch_u32(w.frame(), count_pos, errors);
                    let len_pos = w.frame().len();
                    put_u32(w.frame(), 0);
                    w.begin();
                    a.end(w);
                    let len = (w.frame().len() - len_pos - 4) as u32;
                    frame::patch_u32(w.frame(), len_pos, len);
                }
            }
        }
        rd.end()?;
        Ok(self.agg.frame_ref())
    }

    /// weir_agg_merge (pairs) and weir_agg_result (single accumulators).
    fn agg_values(&mut self, h: &mut Handlers, frame: &[u8], merge: bool) -> Result<&[u8], FrameError> {
        let mut rd = Reader::new(frame);
        let n = rd.count(if merge { "pair count" } else { "accumulator count" })?;
        let w = &mut self.agg;
        w.frame().clear();
        put_u32(w.frame(), n);
        for _ in 0..n {
            let a = rd.acc()?;
            let b = if merge { Some(rd.acc()?) } else { None };
            let entry = w.frame().len();
            w.frame().push(crate::abi::AGG_OK);
            let len_pos = w.frame().len();
            put_u32(w.frame(), 0);
            w.begin();
            let res = match h.agg.as_mut() {
                None => Err(Error::new("plugin has no aggregate handler")),
                Some(g) => match b {
                    Some(b) => g.merge(a, b, w),
                    None => g.result(a, w),
                },
            };
            match res {
                Err(e) => {
                    w.frame().truncate(entry);
                    w.frame().push(crate::abi::AGG_ERROR);
                    frame::put_opt(w.frame(), Some(e.message().as_bytes()));
                }
                Ok(()) if w.is_null() && !merge => {
                    w.frame().truncate(len_pos);
                    put_u32(w.frame(), frame::ABSENT);
                }
                Ok(()) => {
                    if w.is_null() {
                        w.set_null(); // an accumulator is never absent: empty
                    }
                    let len = (w.frame().len() - len_pos - 4) as u32;
                    frame::patch_u32(w.frame(), len_pos, len);
                }
            }
        }
        rd.end()?;
        Ok(self.agg.frame_ref())
    }
}

/// Rejects every record of a batch with msg.
fn reject_all(rd: &mut Reader<'_>, out: &mut Vec<u8>, n: u32, msg: &str) -> Result<(), FrameError> {
    for i in 0..n {
        rd.record(i)?;
        put_error(out, i, msg);
    }
    Ok(())
}

/// Runs weir_init: clears the registrations, runs the plugin's init, and
/// returns the error message ("" for success).
pub(crate) fn run_init(config: &[u8], init: fn(&Config<'_>) -> Result<(), Error>) -> String {
    HANDLERS.with(|h| *h.borrow_mut() = Handlers::default());
    let res = init(&Config::new(config));
    let misuse = HANDLERS.with(|h| h.borrow_mut().misuse.take());
    match (res, misuse) {
        (Err(e), _) if e.message().is_empty() => "init failed".to_string(),
        (Err(e), _) => e.message().to_string(),
        (Ok(()), Some(m)) => m,
        (Ok(()), None) => String::new(),
    }
}

/// The bits of weir_ops's answer (ABI section 4).
pub(crate) use crate::abi::{OP_AGGREGATE, OP_FILTER, OP_FLAT_MAP, OP_MAP};

/// weir_ops: the kinds with a registered function, as a bit set.
pub(crate) fn ops() -> u32 {
    HANDLERS.with(|h| {
        let h = h.borrow();
        let bit = |registered: bool, kind: u32| if registered { kind } else { 0 };
        bit(h.map.is_some(), OP_MAP)
            | bit(h.flat_map.is_some(), OP_FLAT_MAP)
            | bit(h.filter.is_some(), OP_FILTER)
            | bit(h.agg.is_some(), OP_AGGREGATE)
    })
}

/// Runs f with the processor and the handlers.
fn with_proc<T>(f: impl FnOnce(&mut Processor, &mut Handlers) -> T) -> T {
    PROC.with(|p| HANDLERS.with(|h| f(&mut p.borrow_mut(), &mut h.borrow_mut())))
}

/// Processes a batch frame; the output frame is passed to `done` (native
/// tests) or packed for the host (exports).
pub(crate) fn run_batch<T>(op: Op, frame: &[u8], done: impl FnOnce(Result<&[u8], FrameError>) -> T) -> T {
    with_proc(|p, h| done(p.batch(h, op, frame)))
}

pub(crate) fn run_agg_create<T>(done: impl FnOnce(Option<&[u8]>) -> T) -> T {
    with_proc(|p, h| done(p.agg_create(h)))
}

pub(crate) fn run_agg_add<T>(frame: &[u8], done: impl FnOnce(Result<&[u8], FrameError>) -> T) -> T {
    with_proc(|p, h| done(p.agg_add(h, frame)))
}

pub(crate) fn run_agg_values<T>(frame: &[u8], merge: bool, done: impl FnOnce(Result<&[u8], FrameError>) -> T) -> T {
    with_proc(|p, h| done(p.agg_values(h, frame, merge)))
}

pub(crate) fn set_init_msg(msg: String) -> (*const u8, usize) {
    PROC.with(|p| {
        let mut p = p.borrow_mut();
        p.init_msg = msg.into_bytes();
        (p.init_msg.as_ptr(), p.init_msg.len())
    })
}

/// weir_gc: releases the memory of unusually large output frames.
pub(crate) fn gc() {
    const KEEP: usize = 1 << 20;
    PROC.with(|p| {
        if let Ok(mut p) = p.try_borrow_mut() {
            p.out.shrink(KEEP);
            p.agg.shrink(KEEP);
        }
    })
}
