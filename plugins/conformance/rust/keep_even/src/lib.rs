//! Conformance plugin `keep_even` (filter): keeps the records whose JSON
//! field `n` is an even integer (written without fraction or exponent, within
//! i64), drops odd ones, and rejects the rest.

use weir::{json, Config, Error, Record};

fn keep_even(r: &Record) -> Result<bool, Error> {
    let v = json::get(r.value_bytes(), "n")?;
    if !v.exists() {
        return Err(Error::new("missing field n"));
    }
    let n = v.as_i64().ok_or("field n is not an integer")?;
    Ok(n % 2 == 0)
}

fn init(_: &Config) -> Result<(), Error> {
    weir::register_filter(keep_even);
    Ok(())
}

weir::plugin!(init);
