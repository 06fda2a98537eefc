//! Conformance plugin `counter` (map, keyed state): keeps a ValueState
//! "count" (an i64, state key `vcount`) per record key, increments it for
//! each record and outputs `{"key":<key as a JSON string, or null>,"count":<n>}`.

use weir::{json, Config, Error, Output, Record, ValueState};

static COUNT: ValueState = ValueState::new("count");

fn counter(r: &Record, out: &mut Output) -> Result<(), Error> {
    let n = COUNT.get_i64(r)?.unwrap_or(0) + 1;
    COUNT.put_i64(r, n)?;
    let mut w = json::Writer::new(out.value());
    w.begin_object();
    w.key("key");
    match r.key {
        Some(k) => w.string_bytes(k),
        None => w.null(),
    }
    w.key("count");
    w.int(n);
    w.end_object();
    Ok(())
}

fn init(_: &Config) -> Result<(), Error> {
    weir::register_map(counter);
    Ok(())
}

weir::plugin!(init);
