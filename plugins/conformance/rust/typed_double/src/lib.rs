//! Conformance plugin `typed_double` (map, typed convention): declares the
//! field `price` as a strict int, so that the host dead-letters records
//! whose price is not an integer, and patches `price` to twice its value.
//! A record without a price, or with a null one, is rejected with "price is
//! missing" or "price is null"; a price whose double does not fit in 64
//! bits with "price overflows".

use weir::{Config, Error, Field, Patch, Row};

fn init(_: &Config) -> Result<(), Error> {
    let price = weir::declare_field(Field::int("price").strict());
    weir::register_typed_map(move |r: &Row, p: &mut Patch| {
        let v = r.int(price).ok_or_else(|| weir::error!("price is {}", r.status(price)))?;
        p.set_int("price", v.checked_mul(2).ok_or("price overflows")?);
        Ok(())
    });
    Ok(())
}

weir::plugin!(init);
