//! Conformance plugin `fail_on` (map, per-record errors): a record whose raw
//! value equals the configured bad value is rejected with `bad input: <value>`;
//! every other record is kept. An absent value compares as empty.
//!
//! Config: `{"bad": "bad"}`; the default is `bad`.

use weir::{Config, Error};

fn init(config: &Config) -> Result<(), Error> {
    let bad = config.string("bad", "bad")?;
    weir::register_map(move |r, _out| {
        if r.value_bytes() == bad.as_bytes() {
            return Err(weir::error!("bad input: {}", bad));
        }
        Ok(()) // keep
    });
    Ok(())
}

weir::plugin!(init);
