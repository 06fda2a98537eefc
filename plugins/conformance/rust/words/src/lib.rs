//! Conformance plugin `words` (flat_map): splits the raw value on ASCII
//! whitespace (space, \t, \n, \v, \f, \r) and emits each non-empty word, in
//! order, inheriting the input's key, timestamp and headers.

use weir::{Config, Emitter, Error, Record};

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn words(r: &Record, emit: &mut Emitter) -> Result<(), Error> {
    for w in r.value_bytes().split(|&c| is_space(c)).filter(|w| !w.is_empty()) {
        emit.emit(Some(w));
    }
    Ok(())
}

fn init(_: &Config) -> Result<(), Error> {
    weir::register_flat_map(words);
    Ok(())
}

weir::plugin!(init);
