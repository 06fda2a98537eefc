//! The Rust guest SDK for weir: it turns plain Rust functions into a weir
//! WebAssembly plugin implementing ABI v1 (`abi/ABI.md`).
//!
//! A plugin is a `cdylib` crate that names its init function with
//! [`plugin!`]; init reads the operator's config and registers the plugin's
//! functions:
//!
//! ```no_run
//! use weir::{Config, Error, Output, Record};
//!
//! fn init(config: &Config) -> Result<(), Error> {
//!     let field = config.string("field", "name")?;
//!     weir::register_map(move |r: &Record, out: &mut Output| {
//!         let v = weir::json::get(r.value_bytes(), &field)?;
//!         if !v.exists() {
//!             return Err(weir::error!("missing field {}", field));
//!         }
//!         out.set_value(Some(v.raw)); // the field's JSON text
//!         Ok(())
//!     });
//!     Ok(())
//! }
//!
//! weir::plugin!(init);
//! ```
//!
//! built for `wasm32-wasi`:
//!
//! ```sh
//! cargo build --release --target wasm32-wasi
//! ```
//!
//! (`weir run` and `weir plugin test` build a plugin folder themselves.)
//!
//! # Functions
//!
//! Register at most one function of each kind, from init:
//! [`register_map`], [`register_flat_map`], [`register_filter`] and
//! [`register_aggregate`]. The module exports every entry point, and reports
//! the kinds registered through the ABI's `weir_ops` export, so that the
//! host refuses at load a plugin used as an operator of another kind ("the
//! plugin implements map, not filter"). A host that does not ask calls the
//! entry point anyway, which rejects each record with "plugin has no <kind>
//! handler".
//!
//! Each function is called once per record, in batch order, and answers with
//! a result or an [`Error`], which rejects that record: the host sends it to
//! the dead-letter output with the error's message. A panic cannot be caught
//! on `wasm32` (Rust's wasm targets abort on panic): it traps the instance,
//! and the host replays the batch record by record in a fresh instance, so
//! only the record that panics is lost, at the price of a new instance.
//! Return errors for bad data; keep panics for bugs.
//!
//! # Typed fields
//!
//! With the typed convention (ABI section 14) the plugin declares the JSON
//! fields it reads, [`declare_field`], and registers typed functions
//! ([`register_typed_map`], [`register_typed_flat_map`],
//! [`register_typed_filter`], [`register_typed_aggregate`]): the host
//! extracts the fields natively and passes the batch column by column, and
//! the function reads them from a [`Row`], with no JSON to parse, and
//! answers with a [`Patch`], which the host applies to the record's bytes:
//!
//! ```no_run
//! use weir::{Config, Error, Field, Patch, Row};
//!
//! fn init(_: &Config) -> Result<(), Error> {
//!     let price = weir::declare_field(Field::int("price").strict());
//!     weir::register_typed_map(move |r: &Row, p: &mut Patch| {
//!         let v = r.int(price).ok_or_else(|| weir::error!("price is {}", r.status(price)))?;
//!         p.set_int("price", v.checked_mul(2).ok_or("price overflows")?);
//!         Ok(())
//!     });
//!     Ok(())
//! }
//!
//! weir::plugin!(init);
//! ```
//!
//! The module exports the typed entry points whatever init registers;
//! `weir_fields` answers with the declaration only when a typed function is
//! registered, so a plugin without one stays a raw plugin. A kind has one
//! function, raw or typed.
//!
//! # Records and lifetimes
//!
//! A [`Record`]'s slices borrow the batch the host wrote into guest memory:
//! they are valid during the call only.
//!
//! # State
//!
//! [`ValueState`], [`MapState`] and [`ListState`] read and write keyed state
//! through the host, with the slot names and number encodings every weir SDK
//! uses, so state survives rewriting a plugin in another language.
//!
//! # Concurrency
//!
//! The host calls an instance from one thread, one call at a time; the SDK
//! keeps its buffers in thread-locals and never locks.

pub mod abi;
mod acc;
mod frame;
mod host;
pub mod json;
mod output;
mod patch;
mod record;
mod row;
mod runtime;
mod state;
pub mod testing;
mod testing_typed;
mod typed;
mod typed_dispatch;

#[cfg(feature = "serde_json")]
mod serde_support;

pub use acc::{append_bytes, append_f64, append_i64, append_u64, AccDecoder, AccError};
pub use frame::FrameError;
pub use output::{Emitter, Output, ValueBuf};
pub use patch::{Patch, PatchEmitter};
pub use record::{HeaderIter, Headers, Record};
pub use row::Row;
pub use runtime::{
    declare_field, register_aggregate, register_filter, register_flat_map, register_map, register_typed_aggregate,
    register_typed_filter, register_typed_flat_map, register_typed_map, AggContext, Aggregate, TypedAggregate,
};
pub use state::{append_state_key, status_text, ListState, MapState, StateError, StateKind, ValueState};
pub use typed::{Field, FieldStatus, FieldType};

use std::borrow::Cow;
use std::fmt;

/// The ABI version this SDK implements.
pub const ABI_VERSION: u32 = abi::ABI_VERSION;

/// A record's rejection (or init's failure): a message for the host.
///
/// It converts from strings and from the SDK's error types, so `?` works on
/// JSON, state and accumulator errors. Build one with [`Error::new`] or the
/// [`error!`] macro.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    msg: Cow<'static, str>,
}

impl Error {
    /// An error with the given message. A `&'static str` does not allocate.
    pub fn new(msg: impl Into<Cow<'static, str>>) -> Self {
        Error { msg: msg.into() }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.msg
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error({:?})", self.msg)
    }
}

impl std::error::Error for Error {}

impl From<&'static str> for Error {
    fn from(s: &'static str) -> Self {
        Error::new(s)
    }
}

impl From<String> for Error {
    fn from(s: String) -> Self {
        Error::new(s)
    }
}

macro_rules! error_from_display {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Self {
                Error::new(e.to_string())
            }
        }
    )*};
}

error_from_display!(
    json::SyntaxError,
    StateError,
    AccError,
    FrameError,
    std::str::Utf8Error,
    std::string::FromUtf8Error,
    std::num::ParseIntError,
    std::num::ParseFloatError,
    std::io::Error,
    fmt::Error
);

/// Builds an [`Error`] with a formatted message: `weir::error!("missing
/// field {}", name)`.
#[macro_export]
macro_rules! error {
    ($($arg:tt)*) => { $crate::Error::new(::std::format!($($arg)*)) };
}

/// The operator's configuration: the `config:` block of the pipeline as
/// compact JSON (`{}` when absent), with typed getters that follow the
/// conformance convention: an empty config, `null`, a config that is not
/// an object, a missing field and a `null` field all select the default; a
/// field of another type is an error, which fails init.
#[derive(Clone, Copy, Debug)]
pub struct Config<'a> {
    raw: &'a [u8],
}

impl<'a> Config<'a> {
    /// A config holding `raw`.
    pub fn new(raw: &'a [u8]) -> Self {
        Config { raw }
    }

    /// The config's JSON text.
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// The top-level field `name`, or a missing Value when the config is
    /// empty. Malformed JSON is an error.
    pub fn get(&self, name: &str) -> Result<json::Value<'a>, Error> {
        if self.raw.iter().all(|c| c.is_ascii_whitespace()) {
            return Ok(json::Value::default());
        }
        json::get(self.raw, name).map_err(|e| error!("config: {}", e))
    }

    fn typed<T>(
        &self,
        name: &str,
        default: T,
        want: &str,
        conv: impl FnOnce(&json::Value<'a>) -> Option<T>,
    ) -> Result<T, Error> {
        let v = self.get(name)?;
        if v.is_null_or_missing() {
            return Ok(default);
        }
        conv(&v).ok_or_else(|| error!("config: field {} must be {}, not {}", name, want, v.kind))
    }

    /// The string field `name`, or `default`.
    pub fn string(&self, name: &str, default: &str) -> Result<String, Error> {
        self.typed(name, default.to_string(), "a string", |v| {
            (v.kind == json::Kind::String).then(|| v.to_string_lossy())
        })
    }

    /// The integer field `name` (no fraction or exponent), or `default`.
    pub fn i64(&self, name: &str, default: i64) -> Result<i64, Error> {
        self.typed(name, default, "an integer", |v| v.as_i64())
    }

    /// The number field `name`, or `default`.
    pub fn f64(&self, name: &str, default: f64) -> Result<f64, Error> {
        self.typed(name, default, "a number", |v| v.as_f64())
    }

    /// The boolean field `name`, or `default`.
    pub fn bool(&self, name: &str, default: bool) -> Result<bool, Error> {
        self.typed(name, default, "a boolean", |v| v.as_bool())
    }
}

/// The severity of a log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Debug = abi::LOG_DEBUG as isize,
    Info = abi::LOG_INFO as isize,
    Warn = abi::LOG_WARN as isize,
    Error = abi::LOG_ERROR as isize,
}

/// Writes `msg` to weir's log, tagged with the operator. The host cuts lines
/// over 4096 bytes and rate-limits each instance. Any function may log,
/// including init.
pub fn log(level: Level, msg: &str) {
    host::log(level as i32, msg.as_bytes());
}

/// Logs a formatted line: `weir::log!(weir::Level::Info, "n = {}", n)`.
#[macro_export]
macro_rules! log {
    ($level:expr, $($arg:tt)*) => { $crate::log($level, &::std::format!($($arg)*)) };
}

/// Defines the module's exports (ABI section 2) in the plugin crate and
/// names its init function, `fn(&weir::Config) -> Result<(), weir::Error>`,
/// which the host runs once per instance before any other call. Use it once,
/// at the crate's top level.
#[macro_export]
macro_rules! plugin {
    ($init:expr) => {
        const _: () = {
            #[export_name = $crate::__weir_export_name!(version)]
            pub extern "C" fn weir_abi_v1() {}

            #[export_name = $crate::__weir_export_name!(initialize)]
            pub extern "C" fn _initialize() {
                $crate::__rt::initialize()
            }

            #[export_name = $crate::__weir_export_name!(alloc)]
            pub extern "C" fn weir_alloc(size: u32) -> u32 {
                $crate::__rt::alloc(size)
            }

            #[export_name = $crate::__weir_export_name!(init)]
            pub extern "C" fn weir_init(ptr: u32, len: u32) -> u64 {
                $crate::__rt::init(ptr, len, $init)
            }

            #[export_name = $crate::__weir_export_name!(map)]
            pub extern "C" fn weir_map(ptr: u32, len: u32) -> u64 {
                $crate::__rt::batch($crate::__rt::Op::Map, ptr, len)
            }

            #[export_name = $crate::__weir_export_name!(flat_map)]
            pub extern "C" fn weir_flat_map(ptr: u32, len: u32) -> u64 {
                $crate::__rt::batch($crate::__rt::Op::FlatMap, ptr, len)
            }

            #[export_name = $crate::__weir_export_name!(filter)]
            pub extern "C" fn weir_filter(ptr: u32, len: u32) -> u64 {
                $crate::__rt::batch($crate::__rt::Op::Filter, ptr, len)
            }

            #[export_name = $crate::__weir_export_name!(agg_create)]
            pub extern "C" fn weir_agg_create() -> u64 {
                $crate::__rt::agg_create()
            }

            #[export_name = $crate::__weir_export_name!(agg_add)]
            pub extern "C" fn weir_agg_add(ptr: u32, len: u32) -> u64 {
                $crate::__rt::agg_add(ptr, len)
            }

            #[export_name = $crate::__weir_export_name!(agg_merge)]
            pub extern "C" fn weir_agg_merge(ptr: u32, len: u32) -> u64 {
                $crate::__rt::agg_merge(ptr, len)
            }

            #[export_name = $crate::__weir_export_name!(agg_result)]
            pub extern "C" fn weir_agg_result(ptr: u32, len: u32) -> u64 {
                $crate::__rt::agg_result(ptr, len)
            }

            #[export_name = $crate::__weir_export_name!(agg_result_ctx)]
            pub extern "C" fn weir_agg_result_ctx(ptr: u32, len: u32) -> u64 {
                $crate::__rt::agg_result_ctx(ptr, len)
            }

            #[export_name = $crate::__weir_export_name!(ops)]
            pub extern "C" fn weir_ops() -> u32 {
                $crate::__rt::ops()
            }

            #[export_name = $crate::__weir_export_name!(gc)]
            pub extern "C" fn weir_gc() {
                $crate::__rt::gc()
            }

            #[export_name = $crate::__weir_export_name!(fields)]
            pub extern "C" fn weir_fields() -> u64 {
                $crate::__rt::fields()
            }

            #[export_name = $crate::__weir_export_name!(typed_map)]
            pub extern "C" fn weir_typed_map(ptr: u32, len: u32) -> u64 {
                $crate::__rt::typed_batch($crate::__rt::Op::Map, ptr, len)
            }

            #[export_name = $crate::__weir_export_name!(typed_flat_map)]
            pub extern "C" fn weir_typed_flat_map(ptr: u32, len: u32) -> u64 {
                $crate::__rt::typed_batch($crate::__rt::Op::FlatMap, ptr, len)
            }

            #[export_name = $crate::__weir_export_name!(typed_filter)]
            pub extern "C" fn weir_typed_filter(ptr: u32, len: u32) -> u64 {
                $crate::__rt::typed_batch($crate::__rt::Op::Filter, ptr, len)
            }

            #[export_name = $crate::__weir_export_name!(typed_agg_add)]
            pub extern "C" fn weir_typed_agg_add(ptr: u32, len: u32) -> u64 {
                $crate::__rt::typed_agg_add(ptr, len)
            }
        };
    };
}

/// The implementation of the exports [`plugin!`] defines. Not a public API.
#[doc(hidden)]
pub mod __rt {
    pub use crate::runtime::Op;
    use crate::runtime::{self, AggCall};
    use std::cell::RefCell;

    thread_local! {
        /// The one region weir_alloc hands the host for call input.
        static INPUT: RefCell<Vec<u8>> = RefCell::new(Vec::new());
    }

    const MIN_INPUT: usize = 4 << 10;
    const MAX_INPUT: usize = 1 << 30;

    #[inline]
    fn pack(ptr: *const u8, len: usize) -> u64 {
        ((ptr as usize as u64) << 32) | len as u64
    }

    /// The WASI reactor initialiser: runs the static constructors, and
    /// makes the linker treat the module as a reactor (no per-export
    /// constructor and destructor calls).
    pub fn initialize() {
        #[cfg(target_arch = "wasm32")]
        {
            extern "C" {
                fn __wasm_call_ctors();
            }
            unsafe { __wasm_call_ctors() }
        }
    }

    /// weir_alloc: the input region, grown to a power of two of at least
    /// size bytes; 0 when size is too large.
    pub fn alloc(size: u32) -> u32 {
        let size = size as usize;
        if size > MAX_INPUT {
            return 0;
        }
        INPUT.with(|b| {
            let mut b = b.borrow_mut();
            if b.is_empty() || b.len() < size {
                let n = size.max(MIN_INPUT).next_power_of_two();
                *b = vec![0u8; n];
            }
            b.as_ptr() as usize as u32
        })
    }

    /// The n bytes at ptr, which must lie in the input region.
    fn input<T>(ptr: u32, n: u32, f: impl FnOnce(&[u8]) -> T) -> T {
        if n == 0 {
            return f(&[]);
        }
        INPUT.with(|b| {
            let b = b.borrow();
            let base = b.as_ptr() as usize;
            let off = (ptr as usize).wrapping_sub(base);
            if (ptr as usize) < base || off + n as usize > b.len() {
                panic!("weir: input at {:#x}+{} is outside the weir_alloc region {:#x}+{}", ptr, n, base, b.len());
            }
            f(&b[off..off + n as usize])
        })
    }

    fn packed(r: Result<&[u8], crate::FrameError>) -> u64 {
        match r {
            Ok(out) => pack(out.as_ptr(), out.len()),
            Err(e) => panic!("{}", e),
        }
    }

    /// weir_init.
    pub fn init(ptr: u32, len: u32, init: fn(&crate::Config<'_>) -> Result<(), crate::Error>) -> u64 {
        let config = input(ptr, len, |b| b.to_vec());
        let msg = runtime::run_init(&config, init);
        if msg.is_empty() {
            runtime::set_init_msg(msg);
            return 0;
        }
        let (p, n) = runtime::set_init_msg(msg);
        pack(p, n)
    }

    /// weir_map, weir_flat_map, weir_filter.
    pub fn batch(op: Op, ptr: u32, len: u32) -> u64 {
        input(ptr, len, |frame| runtime::run_batch(op, frame, packed))
    }

    /// weir_agg_create. Without a registered aggregate it traps, naming the
    /// problem on stderr, as the ABI asks.
    pub fn agg_create() -> u64 {
        runtime::run_agg_create(|acc| match acc {
            Some(acc) => pack(acc.as_ptr(), acc.len()),
            None => panic!("weir: weir_agg_create: plugin has no aggregate handler"),
        })
    }

    /// weir_agg_add.
    pub fn agg_add(ptr: u32, len: u32) -> u64 {
        input(ptr, len, |frame| runtime::run_agg_add(frame, packed))
    }

    /// weir_agg_merge.
    pub fn agg_merge(ptr: u32, len: u32) -> u64 {
        input(ptr, len, |frame| runtime::run_agg_values(frame, AggCall::Merge, packed))
    }

    /// weir_agg_result: each result with an empty context.
    pub fn agg_result(ptr: u32, len: u32) -> u64 {
        input(ptr, len, |frame| runtime::run_agg_values(frame, AggCall::Result, packed))
    }

    /// weir_agg_result_ctx (ABI section 12.5): each result with its
    /// group's context.
    pub fn agg_result_ctx(ptr: u32, len: u32) -> u64 {
        input(ptr, len, |frame| runtime::run_agg_values(frame, AggCall::ResultCtx, packed))
    }

    /// weir_ops: the kinds registered by the last init.
    pub fn ops() -> u32 {
        runtime::ops()
    }

    /// weir_fields: the declaration, or the empty region for a raw plugin.
    pub fn fields() -> u64 {
        runtime::run_fields(|d| if d.is_empty() { 0 } else { pack(d.as_ptr(), d.len()) })
    }

    /// weir_typed_map, weir_typed_flat_map, weir_typed_filter.
    pub fn typed_batch(op: Op, ptr: u32, len: u32) -> u64 {
        input(ptr, len, |frame| runtime::run_typed_batch(op, frame, packed))
    }

    /// weir_typed_agg_add.
    pub fn typed_agg_add(ptr: u32, len: u32) -> u64 {
        input(ptr, len, |frame| runtime::run_typed_agg_add(frame, packed))
    }

    /// weir_gc.
    pub fn gc() {
        runtime::gc()
    }
}
