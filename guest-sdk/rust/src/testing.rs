//! Running a plugin's functions natively, without a host: for `cargo test`
//! of plugins and of the SDK. The functions here build the host's frames,
//! run the registered functions exactly as the exports do, and decode the
//! answers.
//!
//! ```
//! use weir::testing::{self, Entry, Input};
//!
//! fn init(_: &weir::Config) -> Result<(), weir::Error> {
//!     weir::register_filter(|r| Ok(r.value_bytes().len() > 1));
//!     Ok(())
//! }
//!
//! testing::init("{}", init).unwrap();
//! let out = testing::run(weir::testing::Op::Filter, &[Input::value("a"), Input::value("bb")]);
//! assert_eq!(out, vec![Entry::Keep(1)]);
//! ```
//!
//! Typed functions (ABI section 14) run the same way, on rows of field
//! values ([`run_typed`]):
//!
//! ```
//! use weir::testing::{self, Cell, Op, PatchOp, TypedEntry, TypedInput};
//! use weir::Field;
//!
//! fn init(_: &weir::Config) -> Result<(), weir::Error> {
//!     let n = weir::declare_field(Field::int("n"));
//!     weir::register_typed_map(move |r, p| {
//!         p.set_int("n", r.int(n).ok_or("no n")? + 1);
//!         Ok(())
//!     });
//!     Ok(())
//! }
//!
//! testing::init("{}", init).unwrap();
//! let out = testing::run_typed(Op::Map, &[TypedInput::new(vec![Cell::Int(1)]), TypedInput::new(vec![Cell::Null])]);
//! assert_eq!(out, vec![TypedEntry::patch(0, vec![PatchOp::set("n", Cell::Int(2))]), TypedEntry::error(1, "no n")]);
//! ```
//!
//! Off wasm, state lives in one per-thread map shared by every record key
//! ([`state`], [`clear_state`]) and log lines are collected ([`logs`]).
//! Registrations and buffers are per thread too, so tests may run in
//! parallel.

use crate::frame::{self, put_opt, put_u32, FrameError, Reader};
pub use crate::runtime::Op;
use crate::runtime;
pub use crate::testing_typed::{
    decode_typed_output, fields, run_typed, run_typed_frame, typed_add_frame, typed_agg_add, typed_batch_frame, Cell,
    PatchEntry, PatchOp, TypedEntry, TypedInput,
};
use crate::{AggContext, Config, Error};

/// One input record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Input {
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub timestamp: i64,
    pub headers: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Input {
    /// A record with this value and no key.
    pub fn value(v: impl AsRef<[u8]>) -> Self {
        Input { value: Some(v.as_ref().to_vec()), ..Default::default() }
    }

    /// A record with this key and value.
    pub fn keyed(k: impl AsRef<[u8]>, v: impl AsRef<[u8]>) -> Self {
        Input { key: Some(k.as_ref().to_vec()), value: Some(v.as_ref().to_vec()), ..Default::default() }
    }
}

/// Appends inputs as the records of a batch frame (without the count).
fn put_records(b: &mut Vec<u8>, inputs: &[Input]) {
    for r in inputs {
        frame::put_i64(b, r.timestamp);
        put_opt(b, r.key.as_deref());
        put_opt(b, r.value.as_deref());
        put_u32(b, r.headers.len() as u32);
        for (n, v) in &r.headers {
            put_opt(b, Some(n));
            put_opt(b, Some(v));
        }
    }
}

/// The batch frame (ABI 5.1) holding inputs.
pub fn batch_frame(inputs: &[Input]) -> Vec<u8> {
    let mut b = Vec::new();
    put_u32(&mut b, inputs.len() as u32);
    put_records(&mut b, inputs);
    b
}

/// One entry of an output frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// Keep input `.0` unchanged.
    Keep(u32),
    /// A record answering input `index`; `None` fields are inherited.
    Record {
        index: u32,
        key: Option<Option<Vec<u8>>>,
        timestamp: Option<i64>,
        headers: Option<Vec<(Vec<u8>, Vec<u8>)>>,
        value: Option<Vec<u8>>,
    },
    /// Reject input `.0` with the message.
    Error(u32, String),
}

impl Entry {
    /// A record entry that sets only the value.
    pub fn value(index: u32, v: impl AsRef<[u8]>) -> Self {
        Entry::Record { index, key: None, timestamp: None, headers: None, value: Some(v.as_ref().to_vec()) }
    }

    /// An error entry.
    pub fn error(index: u32, msg: &str) -> Self {
        Entry::Error(index, msg.to_string())
    }
}

/// Decodes an output frame (ABI 5.2).
pub fn decode_output(b: &[u8]) -> Result<Vec<Entry>, FrameError> {
    let mut rd = Reader::new(b);
    let n = rd.count("entry count")?;
    let mut out = Vec::new();
    for _ in 0..n {
        let head = rd.opt_bytes_fixed(5)?;
        let (kind, index) = (head[0], u32::from_le_bytes([head[1], head[2], head[3], head[4]]));
        match kind {
            frame::KIND_KEEP => out.push(Entry::Keep(index)),
            frame::KIND_ERROR => {
                let m = rd.opt_bytes("message")?.unwrap_or(&[]);
                out.push(Entry::Error(index, String::from_utf8_lossy(m).into_owned()));
            }
            frame::KIND_RECORD => {
                let flags = rd.opt_bytes_fixed(1)?[0];
                let key = if flags & frame::FLAG_KEY != 0 {
                    Some(rd.opt_bytes("key")?.map(|k| k.to_vec()))
                } else {
                    None
                };
                let timestamp = if flags & frame::FLAG_TIMESTAMP != 0 {
                    Some(i64::from_le_bytes(rd.opt_bytes_fixed(8)?.try_into().unwrap()))
                } else {
                    None
                };
                let headers = if flags & frame::FLAG_HEADERS != 0 {
                    let hc = rd.u32("header count")?;
                    let mut hs = Vec::new();
                    for _ in 0..hc {
                        let n = rd.opt_bytes("header")?.unwrap_or(&[]).to_vec();
                        let v = rd.opt_bytes("header")?.unwrap_or(&[]).to_vec();
                        hs.push((n, v));
                    }
                    Some(hs)
                } else {
                    None
                };
                let value = rd.opt_bytes("value")?.map(|v| v.to_vec());
                out.push(Entry::Record { index, key, timestamp, headers, value });
            }
            _ => return Err(FrameError { offset: 0, what: "unknown entry kind" }),
        }
    }
    rd.end()?;
    Ok(out)
}

/// Runs an init function with `config` as weir_init does (clearing the
/// registrations first). `Err` holds init's error message.
pub fn init(config: &str, f: fn(&Config<'_>) -> Result<(), Error>) -> Result<(), String> {
    let msg = runtime::run_init(config.as_bytes(), f);
    if msg.is_empty() {
        Ok(())
    } else {
        Err(msg)
    }
}

/// weir_ops: the kinds the last init registered, as the ABI's bit set
/// (1 map, 2 flat_map, 4 filter, 8 aggregate).
pub fn ops() -> u32 {
    runtime::ops()
}

/// Runs one batch of inputs through the registered function for op, and
/// returns the output frame's entries.
pub fn run(op: Op, inputs: &[Input]) -> Vec<Entry> {
    let f = batch_frame(inputs);
    runtime::run_batch(op, &f, |out| decode_output(out.expect("batch frame")).expect("output frame"))
}

/// weir_agg_create: the fresh accumulator, or None without an aggregate.
pub fn agg_create() -> Option<Vec<u8>> {
    runtime::run_agg_create(|acc| acc.map(|a| a.to_vec()))
}

/// The answer for one group of an add call: the rejected records (index,
/// message) and the new accumulator.
pub type GroupAnswer = (Vec<(u32, String)>, Vec<u8>);

/// weir_agg_add over groups of (accumulator, records).
pub fn agg_add(groups: &[(Vec<u8>, Vec<Input>)]) -> Vec<GroupAnswer> {
    let mut b = Vec::new();
    put_u32(&mut b, groups.len() as u32);
    for (acc, recs) in groups {
        put_opt(&mut b, Some(acc));
        put_u32(&mut b, recs.len() as u32);
        put_records(&mut b, recs);
    }
    runtime::run_agg_add(&b, |out| decode_add_output(out.expect("add frame")))
}

/// Decodes an add output frame (ABI 12.2); panics if it is malformed.
pub(crate) fn decode_add_output(out: &[u8]) -> Vec<GroupAnswer> {
    let mut rd = Reader::new(out);
    let n = rd.u32("group count").unwrap();
    let mut res = Vec::new();
    for _ in 0..n {
        let ne = rd.u32("error count").unwrap();
        let mut errs = Vec::new();
        for _ in 0..ne {
            let i = rd.u32("index").unwrap();
            let m = rd.opt_bytes("message").unwrap().unwrap_or(&[]);
            errs.push((i, String::from_utf8_lossy(m).into_owned()));
        }
        res.push((errs, rd.acc().unwrap().to_vec()));
    }
    rd.end().unwrap();
    res
}

fn values(frame: &[u8], call: runtime::AggCall) -> Vec<Result<Option<Vec<u8>>, String>> {
    runtime::run_agg_values(frame, call, |out| {
        let mut rd = Reader::new(out.expect("value frame"));
        let n = rd.u32("count").unwrap();
        let mut res = Vec::new();
        for _ in 0..n {
            let status = rd.opt_bytes_fixed(1).unwrap()[0];
            let v = rd.opt_bytes("value").unwrap();
            res.push(match status {
                0 => Ok(v.map(|v| v.to_vec())),
                _ => Err(String::from_utf8_lossy(v.unwrap_or(&[])).into_owned()),
            });
        }
        rd.end().unwrap();
        res
    })
}

/// weir_agg_merge over pairs: the merged accumulators, or errors.
pub fn agg_merge(pairs: &[(Vec<u8>, Vec<u8>)]) -> Vec<Result<Vec<u8>, String>> {
    let mut b = Vec::new();
    put_u32(&mut b, pairs.len() as u32);
    for (a, c) in pairs {
        put_opt(&mut b, Some(a));
        put_opt(&mut b, Some(c));
    }
    values(&b, runtime::AggCall::Merge).into_iter().map(|r| r.map(|v| v.unwrap_or_default())).collect()
}

/// weir_agg_result over accumulators: the results (None: absent), or
/// errors.
pub fn agg_result(accs: &[Vec<u8>]) -> Vec<Result<Option<Vec<u8>>, String>> {
    let mut b = Vec::new();
    put_u32(&mut b, accs.len() as u32);
    for a in accs {
        put_opt(&mut b, Some(a));
    }
    values(&b, runtime::AggCall::Result)
}

/// weir_agg_result_ctx over accumulators, each with its group's context
/// (ABI section 12.5): the results (None: absent), or errors.
pub fn agg_result_ctx(accs: &[(AggContext<'_>, Vec<u8>)]) -> Vec<Result<Option<Vec<u8>>, String>> {
    values(&result_ctx_frame(accs), runtime::AggCall::ResultCtx)
}

/// The result context frame (ABI section 12.5) of accumulators with their
/// contexts.
pub fn result_ctx_frame(accs: &[(AggContext<'_>, Vec<u8>)]) -> Vec<u8> {
    let mut b = Vec::new();
    put_u32(&mut b, accs.len() as u32);
    for (c, a) in accs {
        put_opt(&mut b, c.key);
        let (flags, (start, end)) = match c.window {
            Some(w) => (crate::abi::AGG_CONTEXT_WINDOWED, w),
            None => (0, (0, 0)),
        };
        b.push(flags);
        b.extend_from_slice(&start.to_le_bytes());
        b.extend_from_slice(&end.to_le_bytes());
        put_opt(&mut b, Some(a));
    }
    b
}

/// Runs a raw result context frame through weir_agg_result_ctx: the
/// output frame, or the frame error (a malformed frame traps in a module).
pub fn run_agg_result_ctx_frame(frame: &[u8]) -> Result<Vec<u8>, crate::FrameError> {
    runtime::run_agg_values(frame, runtime::AggCall::ResultCtx, |out| out.map(|o| o.to_vec()))
}

/// Empties the native state store.
pub fn clear_state() {
    #[cfg(not(target_arch = "wasm32"))]
    crate::host::STORE.with(|s| s.borrow_mut().clear());
}

/// The value under a raw state key in the native store.
pub fn state(key: &[u8]) -> Option<Vec<u8>> {
    #[cfg(not(target_arch = "wasm32"))]
    return crate::host::STORE.with(|s| s.borrow().get(key).cloned());
    #[cfg(target_arch = "wasm32")]
    {
        let _ = key;
        None
    }
}

/// The log lines written so far (level, text), emptying the list.
pub fn logs() -> Vec<(i32, String)> {
    #[cfg(not(target_arch = "wasm32"))]
    return crate::host::LOGS.with(|l| std::mem::take(&mut *l.borrow_mut()));
    #[cfg(target_arch = "wasm32")]
    Vec::new()
}
