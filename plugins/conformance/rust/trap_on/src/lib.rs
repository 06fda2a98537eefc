//! Conformance plugin `trap_on` (map, instance failure): a record whose raw
//! value equals the configured trap value kills the instance with a
//! WebAssembly trap (`unreachable`) in the middle of the batch call; every
//! other record is kept.
//!
//! Config: `{"trap": "trap"}`; the default is `trap`.

use weir::{Config, Error};

fn trap() -> ! {
    #[cfg(target_arch = "wasm32")]
    core::arch::wasm32::unreachable();
    #[cfg(not(target_arch = "wasm32"))]
    std::process::abort();
}

fn init(config: &Config) -> Result<(), Error> {
    let value = config.string("trap", "trap")?;
    weir::register_map(move |r, _out| {
        if r.value_bytes() == value.as_bytes() {
            eprintln!("trap_on: trapping on {:?}", value);
            trap();
        }
        Ok(())
    });
    Ok(())
}

weir::plugin!(init);
