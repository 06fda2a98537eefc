//! Registration of the plugin's functions and the dispatch of the ABI's
//! calls to them.

use crate::frame::{self, put_error, put_keep, put_u32, FrameError, Reader};
use crate::output::{Emitter, Output, ValueBuf};
use crate::patch::{Patch, PatchEmitter, TypedOut};
use crate::record::Record;
use crate::row::{Columns, Row};
use crate::typed::{Decl, Field, FieldType};
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
    /// The message rejecting each record of a batch for op when no
    /// function of its kind is registered.
    pub(crate) fn no_handler(self) -> &'static str {
        match self {
            Op::Map => "plugin has no map handler",
            Op::FlatMap => "plugin has no flat_map handler",
            Op::Filter => "plugin has no filter handler",
        }
    }
}

type MapFn = Box<dyn FnMut(&Record<'_>, &mut Output) -> Result<(), Error>>;
type FlatMapFn = Box<dyn FnMut(&Record<'_>, &mut Emitter<'_>) -> Result<(), Error>>;
type FilterFn = Box<dyn FnMut(&Record<'_>) -> Result<bool, Error>>;
pub(crate) type TypedMapFn = Box<dyn FnMut(&Row<'_>, &mut Patch) -> Result<(), Error>>;
pub(crate) type TypedFlatMapFn = Box<dyn FnMut(&Row<'_>, &mut PatchEmitter<'_>) -> Result<(), Error>>;
pub(crate) type TypedFilterFn = Box<dyn FnMut(&Row<'_>) -> Result<bool, Error>>;

/// The context of a group whose result is due (ABI section 12.5), which
/// [`Aggregate::result_ctx`] and [`TypedAggregate::result_ctx`] are given:
/// what the host knows of the group, which the accumulator does not hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AggContext<'a> {
    /// The group's key: `None` when its records have none (Kafka's null
    /// key), which is distinct from present and empty. It borrows the
    /// call's input.
    pub key: Option<&'a [u8]>,
    /// The group's window, `(start, end)`: `[start, end)` in milliseconds
    /// since the Unix epoch, the bounds a window operator writes as
    /// `window_start` and `window_end`; `None` when the group is not a
    /// window's (or the host predates `weir_agg_result_ctx`).
    pub window: Option<(i64, i64)>,
}

/// The error of an aggregate that implements neither `result` nor
/// `result_ctx`.
const NO_RESULT: &str = "the aggregate implements neither result nor result_ctx";

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
    /// Implement it, or [`result_ctx`](Aggregate::result_ctx) for a result
    /// that depends on the group's key or window; the default fails.
    fn result(&mut self, acc: &Self::Acc, out: &mut ValueBuf) -> Result<(), Error> {
        let _ = (acc, out);
        Err(Error::new(NO_RESULT))
    }

    /// Writes the group's result value to `out`, as `result` does, given
    /// the group's context: its key and window (ABI section 12.5). The SDK
    /// calls it for every result, with an empty context (no key, no
    /// window) on a host that predates `weir_agg_result_ctx`; the default
    /// calls `result`.
    fn result_ctx(&mut self, acc: &Self::Acc, ctx: &AggContext<'_>, out: &mut ValueBuf) -> Result<(), Error> {
        let _ = ctx;
        self.result(acc, out)
    }

    /// Appends the accumulator's bytes to `out`.
    fn encode(&mut self, acc: &Self::Acc, out: &mut ValueBuf);

    /// Reads an accumulator back from what `encode` wrote (possibly by
    /// another SDK's plugin, for a shared encoding).
    fn decode(&mut self, b: &[u8]) -> Result<Self::Acc, Error>;
}

/// An aggregate over typed rows (ABI section 14.5): an [`Aggregate`] whose
/// `add` reads the fields the plugin declared from a [`Row`] instead of
/// parsing the record's value. The host calls it through
/// `weir_typed_agg_add`, and merges and finishes accumulators as for any
/// aggregate.
pub trait TypedAggregate {
    /// The accumulator.
    type Acc;

    /// A fresh accumulator, always the same.
    fn create(&mut self) -> Self::Acc;

    /// Folds `r` into `acc`. An error rejects `r`, as [`Aggregate::add`]'s.
    fn add(&mut self, acc: &mut Self::Acc, r: &Row<'_>) -> Result<(), Error>;

    /// The accumulator combining two partial aggregates of one group.
    fn merge(&mut self, a: Self::Acc, b: Self::Acc) -> Self::Acc;

    /// Writes the group's result value to `out`, as [`Aggregate::result`];
    /// implement it or `result_ctx`.
    fn result(&mut self, acc: &Self::Acc, out: &mut ValueBuf) -> Result<(), Error> {
        let _ = (acc, out);
        Err(Error::new(NO_RESULT))
    }

    /// Writes the group's result value given its context, as
    /// [`Aggregate::result_ctx`]; the default calls `result`.
    fn result_ctx(&mut self, acc: &Self::Acc, ctx: &AggContext<'_>, out: &mut ValueBuf) -> Result<(), Error> {
        let _ = ctx;
        self.result(acc, out)
    }

    /// Appends the accumulator's bytes to `out`.
    fn encode(&mut self, acc: &Self::Acc, out: &mut ValueBuf);

    /// Reads an accumulator back from what `encode` wrote.
    fn decode(&mut self, b: &[u8]) -> Result<Self::Acc, Error>;
}

/// What an aggregate folds: a record of an add frame or a row of a typed
/// add frame.
#[derive(Clone, Copy)]
pub(crate) enum AggInput<'r, 'a> {
    Record(&'r Record<'a>),
    Row(&'r Row<'a>),
}

/// What [`Aggregate`] and [`TypedAggregate`] share, with an add that takes
/// either input.
trait Agg {
    type Acc;
    /// Whether it is a TypedAggregate.
    const TYPED: bool;
    fn create(&mut self) -> Self::Acc;
    fn add(&mut self, acc: &mut Self::Acc, input: AggInput<'_, '_>) -> Result<(), Error>;
    fn merge(&mut self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
    fn result_ctx(&mut self, acc: &Self::Acc, ctx: &AggContext<'_>, out: &mut ValueBuf) -> Result<(), Error>;
    fn encode(&mut self, acc: &Self::Acc, out: &mut ValueBuf);
    fn decode(&mut self, b: &[u8]) -> Result<Self::Acc, Error>;
}

/// Implements Agg for a wrapper of an aggregate trait, whose add takes the
/// input variant given.
macro_rules! impl_agg {
    ($wrapper:ident, $trait:ident, $input:ident, $typed:expr, $other:expr) => {
        struct $wrapper<A>(A);

        impl<A: $trait> Agg for $wrapper<A> {
            type Acc = A::Acc;
            const TYPED: bool = $typed;
            fn create(&mut self) -> A::Acc {
                self.0.create()
            }
            fn add(&mut self, acc: &mut A::Acc, input: AggInput<'_, '_>) -> Result<(), Error> {
                match input {
                    AggInput::$input(r) => self.0.add(acc, r),
                    _ => Err(Error::new($other)),
                }
            }
            fn merge(&mut self, a: A::Acc, b: A::Acc) -> A::Acc {
                self.0.merge(a, b)
            }
            fn result_ctx(&mut self, acc: &A::Acc, ctx: &AggContext<'_>, out: &mut ValueBuf) -> Result<(), Error> {
                self.0.result_ctx(acc, ctx, out)
            }
            fn encode(&mut self, acc: &A::Acc, out: &mut ValueBuf) {
                self.0.encode(acc, out)
            }
            fn decode(&mut self, b: &[u8]) -> Result<A::Acc, Error> {
                self.0.decode(b)
            }
        }
    };
}

impl_agg!(RawAgg, Aggregate, Record, false, "plugin has no typed aggregate handler");
impl_agg!(TypedAgg, TypedAggregate, Row, true, "plugin has no raw aggregate handler");

/// An aggregate with its accumulator type hidden.
pub(crate) trait DynAgg {
    fn typed(&self) -> bool;
    fn create(&mut self, out: &mut ValueBuf);
    fn begin(&mut self, acc: &[u8]) -> Result<(), Error>;
    fn add(&mut self, input: AggInput<'_, '_>) -> Result<(), Error>;
    fn end(&mut self, out: &mut ValueBuf);
    fn merge(&mut self, a: &[u8], b: &[u8], out: &mut ValueBuf) -> Result<(), Error>;
    fn result(&mut self, acc: &[u8], ctx: &AggContext<'_>, out: &mut ValueBuf) -> Result<(), Error>;
}

struct AggOf<A: Agg> {
    a: A,
    cur: Option<A::Acc>,
}

fn bad_acc(e: Error) -> Error {
    Error::new(format!("bad accumulator: {}", e))
}

impl<A: Agg> DynAgg for AggOf<A> {
    fn typed(&self) -> bool {
        A::TYPED
    }
    fn create(&mut self, out: &mut ValueBuf) {
        let acc = self.a.create();
        self.a.encode(&acc, out);
    }
    fn begin(&mut self, acc: &[u8]) -> Result<(), Error> {
        self.cur = Some(self.a.decode(acc).map_err(bad_acc)?);
        Ok(())
    }
    fn add(&mut self, input: AggInput<'_, '_>) -> Result<(), Error> {
        match self.cur.as_mut() {
            Some(acc) => self.a.add(acc, input),
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
    fn result(&mut self, acc: &[u8], ctx: &AggContext<'_>, out: &mut ValueBuf) -> Result<(), Error> {
        let acc = self.a.decode(acc).map_err(bad_acc)?;
        self.a.result_ctx(&acc, ctx, out)
    }
}

/// The registered functions and declared fields.
#[derive(Default)]
pub(crate) struct Handlers {
    map: Option<MapFn>,
    flat_map: Option<FlatMapFn>,
    filter: Option<FilterFn>,
    pub(crate) agg: Option<Box<dyn DynAgg>>,
    pub(crate) typed_map: Option<TypedMapFn>,
    pub(crate) typed_flat_map: Option<TypedFlatMapFn>,
    pub(crate) typed_filter: Option<TypedFilterFn>,
    decl: Decl,
    /// A registration mistake, reported as weir_init's error.
    misuse: Option<String>,
}

impl Handlers {
    /// Whether a typed function is registered: the module then uses the
    /// typed convention.
    fn typed(&self) -> bool {
        self.typed_map.is_some()
            || self.typed_flat_map.is_some()
            || self.typed_filter.is_some()
            || self.agg.as_ref().map_or(false, |a| a.typed())
    }

    fn misused(&mut self, msg: String) {
        if self.misuse.is_none() {
            self.misuse = Some(msg);
        }
    }
}

thread_local! {
    static HANDLERS: RefCell<Handlers> = RefCell::new(Handlers::default());
    static PROC: RefCell<Processor> = RefCell::new(Processor::new());
}

/// Runs f on the registrations, from init; `call` names the SDK function.
fn registry<T>(call: &str, f: impl FnOnce(&mut Handlers) -> T) -> T {
    HANDLERS.with(|h| {
        let mut h = h.try_borrow_mut().unwrap_or_else(|_| {
            panic!("weir: {} called while a plugin function runs; register functions in init", call)
        });
        f(&mut h)
    })
}

/// Registers a function of kind with f, which returns false when one of
/// that kind was registered before.
fn register(kind: &str, f: impl FnOnce(&mut Handlers) -> bool) {
    registry(&format!("register_{}", kind), |h| {
        if !f(h) {
            h.misused(format!("weir: {} function already registered", kind));
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
    register("map", |h| h.map.replace(Box::new(f)).is_none() && h.typed_map.is_none());
}

/// Registers the flat_map function: it emits zero or more records for each
/// input through an [`Emitter`]. An error rejects the input and discards
/// what was emitted for it.
pub fn register_flat_map<F>(f: F)
where
    F: FnMut(&Record<'_>, &mut Emitter<'_>) -> Result<(), Error> + 'static,
{
    register("flat_map", |h| h.flat_map.replace(Box::new(f)).is_none() && h.typed_flat_map.is_none());
}

/// Registers the filter function: `Ok(true)` keeps the record, `Ok(false)`
/// drops it, an error rejects it.
pub fn register_filter<F>(f: F)
where
    F: FnMut(&Record<'_>) -> Result<bool, Error> + 'static,
{
    register("filter", |h| h.filter.replace(Box::new(f)).is_none() && h.typed_filter.is_none());
}

/// Registers the aggregate.
pub fn register_aggregate<A: Aggregate + 'static>(a: A) {
    register("aggregate", |h| h.agg.replace(Box::new(AggOf { a: RawAgg(a), cur: None })).is_none());
}

/// Declares the next field the typed functions read, and returns its
/// number, `f` of [`Row::int(f)`](Row::int) and the other readers: 0 for
/// the first declared, 1 for the next... Call it from init, before or
/// after registering the typed functions; the fields may depend on the
/// config, but must be the same for every instance given the same config.
/// A malformed path, a path declared twice or more than 1024 fields fail
/// init, naming the field, as the host would.
pub fn declare_field(field: Field) -> usize {
    registry("declare_field", |h| {
        let i = h.decl.len();
        if let Err(msg) = h.decl.add(field) {
            h.misused(msg);
        }
        i
    })
}

/// Registers the typed map function (ABI section 14): it answers each row
/// through a [`Patch`] (set nothing to keep the record unchanged) or with
/// an error, which rejects the record and discards the patch.
pub fn register_typed_map<F>(f: F)
where
    F: FnMut(&Row<'_>, &mut Patch) -> Result<(), Error> + 'static,
{
    register("map", |h| h.typed_map.replace(Box::new(f)).is_none() && h.map.is_none());
}

/// Registers the typed flat_map function: it emits zero or more records
/// for each row through a [`PatchEmitter`]. An error rejects the row and
/// discards what was emitted for it.
pub fn register_typed_flat_map<F>(f: F)
where
    F: FnMut(&Row<'_>, &mut PatchEmitter<'_>) -> Result<(), Error> + 'static,
{
    register("flat_map", |h| h.typed_flat_map.replace(Box::new(f)).is_none() && h.flat_map.is_none());
}

/// Registers the typed filter function: `Ok(true)` keeps the record
/// unchanged, `Ok(false)` drops it, an error rejects it.
pub fn register_typed_filter<F>(f: F)
where
    F: FnMut(&Row<'_>) -> Result<bool, Error> + 'static,
{
    register("filter", |h| h.typed_filter.replace(Box::new(f)).is_none() && h.filter.is_none());
}

/// Registers the aggregate over typed rows, instead of an [`Aggregate`].
pub fn register_typed_aggregate<A: TypedAggregate + 'static>(a: A) {
    register("aggregate", |h| h.agg.replace(Box::new(AggOf { a: TypedAgg(a), cur: None })).is_none());
}

/// Builds the output frames of one instance. Its buffers are reused from
/// call to call, so a steady stream of batches does not allocate.
pub(crate) struct Processor {
    out: Output,
    pub(crate) agg: ValueBuf,
    init_msg: Vec<u8>,
    pub(crate) typed: TypedOut,
    pub(crate) patch: Patch,
    pub(crate) cols: Columns,
}

/// The answer frames stay in these buffers until the next call.
impl Processor {
    fn new() -> Self {
        Processor {
            out: Output::new(),
            agg: ValueBuf::new(),
            init_msg: Vec::new(),
            typed: TypedOut::new(),
            patch: Patch::new(),
            cols: Columns::default(),
        }
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
                None => reject_all(&mut rd, out.frame(), n, op.no_handler())?,
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
                None => reject_all(&mut rd, out.frame(), n, op.no_handler())?,
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
                None => reject_all(&mut rd, out.frame(), n, op.no_handler())?,
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
            add_group(w, h.agg.as_deref_mut(), acc, n, |i, agg| {
                let rec = rd.record(i)?;
                Ok(agg.map_or(Ok(()), |a| a.add(AggInput::Record(&rec))))
            })?;
        }
        rd.end()?;
        Ok(self.agg.frame_ref())
    }

    /// weir_agg_merge (pairs), weir_agg_result (single accumulators) and
    /// weir_agg_result_ctx (accumulators, each after its context).
    fn agg_values(&mut self, h: &mut Handlers, frame: &[u8], call: AggCall) -> Result<&[u8], FrameError> {
        let merge = call == AggCall::Merge;
        let mut rd = Reader::new(frame);
        let n = rd.count(if merge { "pair count" } else { "accumulator count" })?;
        let w = &mut self.agg;
        w.frame().clear();
        put_u32(w.frame(), n);
        for _ in 0..n {
            let ctx = if call == AggCall::ResultCtx { rd.agg_context()? } else { AggContext::default() };
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
                    None => g.result(a, &ctx, w),
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

/// Appends one group's answer to an add output frame (ABI section 12.2):
/// its error entries and its new accumulator. `fold(i, agg)` reads the
/// group's record i and, given the aggregate, folds it into the group's
/// accumulator. Without an aggregate, or when the accumulator does not
/// decode, every record is rejected and the accumulator left as it was.
pub(crate) fn add_group(
    w: &mut ValueBuf,
    agg: Option<&mut (dyn DynAgg + 'static)>,
    acc: &[u8],
    n: u32,
    mut fold: impl FnMut(u32, Option<&mut (dyn DynAgg + 'static)>) -> Result<Result<(), Error>, FrameError>,
) -> Result<(), FrameError> {
    let count_pos = w.frame().len();
    put_u32(w.frame(), 0);
    let mut errors = 0u32;
    let mut err = |w: &mut ValueBuf, i: u32, msg: &str| {
        put_u32(w.frame(), i);
        frame::put_opt(w.frame(), Some(msg.as_bytes()));
        errors += 1;
    };
    let begun = match agg {
        None => Err(Error::new("plugin has no aggregate handler")),
        Some(a) => a.begin(acc).map(|()| a),
    };
    match begun {
        Err(e) => {
            for i in 0..n {
                let _ = fold(i, None)?; // reads the record, folding nothing
                err(w, i, e.message());
            }
            frame::patch_u32(w.frame(), count_pos, errors);
            frame::put_opt(w.frame(), Some(acc));
        }
        Ok(a) => {
            for i in 0..n {
                if let Err(e) = fold(i, Some(&mut *a))? {
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
    Ok(())
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
    let misuse = HANDLERS.with(|h| {
        let mut h = h.borrow_mut();
        if !h.decl.is_empty() && !h.typed() {
            h.misused("weir: fields declared, but no typed function registered".to_string());
        }
        h.misuse.take()
    });
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
        bit(h.map.is_some() || h.typed_map.is_some(), OP_MAP)
            | bit(h.flat_map.is_some() || h.typed_flat_map.is_some(), OP_FLAT_MAP)
            | bit(h.filter.is_some() || h.typed_filter.is_some(), OP_FILTER)
            | bit(h.agg.is_some(), OP_AGGREGATE)
    })
}

/// weir_fields: the declaration frame when a typed function is registered
/// (of no fields, if none was declared), or the empty slice, which leaves
/// the module a raw one.
pub(crate) fn run_fields<T>(done: impl FnOnce(&[u8]) -> T) -> T {
    HANDLERS.with(|h| {
        let mut h = h.borrow_mut();
        if !h.typed() {
            return done(&[]);
        }
        done(h.decl.frame())
    })
}

/// The types of the fields the last init declared, in order.
pub(crate) fn declared_types() -> Vec<FieldType> {
    HANDLERS.with(|h| h.borrow().decl.types())
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

/// Processes a typed batch frame (ABI section 14.3) for op.
pub(crate) fn run_typed_batch<T>(op: Op, frame: &[u8], done: impl FnOnce(Result<&[u8], FrameError>) -> T) -> T {
    with_proc(|p, h| done(p.typed_batch(h, op, frame)))
}

/// Processes a typed add frame (ABI section 14.5).
pub(crate) fn run_typed_agg_add<T>(frame: &[u8], done: impl FnOnce(Result<&[u8], FrameError>) -> T) -> T {
    with_proc(|p, h| done(p.typed_agg_add(h, frame)))
}

pub(crate) fn run_agg_create<T>(done: impl FnOnce(Option<&[u8]>) -> T) -> T {
    with_proc(|p, h| done(p.agg_create(h)))
}

pub(crate) fn run_agg_add<T>(frame: &[u8], done: impl FnOnce(Result<&[u8], FrameError>) -> T) -> T {
    with_proc(|p, h| done(p.agg_add(h, frame)))
}

/// The calls whose answer is a value output frame (ABI section 12.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AggCall {
    /// weir_agg_merge.
    Merge,
    /// weir_agg_result.
    Result,
    /// weir_agg_result_ctx.
    ResultCtx,
}

pub(crate) fn run_agg_values<T>(frame: &[u8], call: AggCall, done: impl FnOnce(Result<&[u8], FrameError>) -> T) -> T {
    with_proc(|p, h| done(p.agg_values(h, frame, call)))
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
            p.typed.shrink(KEEP);
            p.patch.shrink(KEEP);
        }
    })
}
