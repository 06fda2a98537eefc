//! Conformance plugin `keep_active` (filter, typed convention): declares
//! the field `active` as a bool without flags, so that every record reaches
//! it with the field's status; keeps the records whose `active` is true,
//! drops those whose `active` is false, null or missing, and rejects those
//! whose `active` holds another type.

use weir::{Config, Error, Field, FieldStatus, Row};

fn init(_: &Config) -> Result<(), Error> {
    let active = weir::declare_field(Field::bool("active"));
    weir::register_typed_filter(move |r: &Row| match r.status(active) {
        FieldStatus::Mismatch => Err(Error::new("active is not a bool")),
        _ => Ok(r.bool(active) == Some(true)),
    });
    Ok(())
}

weir::plugin!(init);
