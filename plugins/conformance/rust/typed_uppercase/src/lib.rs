//! Conformance plugin `typed_uppercase` (map, typed convention), doing what
//! `uppercase` does: it declares the configured field as a required, strict
//! string, so that the host dead-letters records where it is missing, null
//! or not a string, and patches it upper-cased (ASCII letters only). The
//! host leaves every other byte of the record as it was.
//!
//! Config: `{"field": "name"}`; the default field is `name`.

use weir::{Config, Error, Field, Patch, Row};

fn init(config: &Config) -> Result<(), Error> {
    let field = config.string("field", "name")?;
    let f = weir::declare_field(Field::string(field.as_str()).required().strict());
    let mut text = Vec::new();
    weir::register_typed_map(move |r: &Row, p: &mut Patch| {
        let s = r.bytes(f).ok_or_else(|| weir::error!("field {} is {}", field, r.status(f)))?;
        text.clear();
        text.extend_from_slice(s);
        text.make_ascii_uppercase();
        p.set_string(&field, &text);
        Ok(())
    });
    Ok(())
}

weir::plugin!(init);
