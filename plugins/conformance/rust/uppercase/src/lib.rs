//! Conformance plugin `uppercase` (map). Its input is a JSON object; it
//! upper-cases the ASCII letters a-z of one string field and leaves every
//! other byte of the input as it was. See plugins/conformance/README.md.
//!
//! Config: `{"field": "name"}`; the default field is `name`.

use weir::{json, Config, Error, Output, Record};

fn init(config: &Config) -> Result<(), Error> {
    let field = config.string("field", "name")?;
    let mut text = Vec::new();
    weir::register_map(move |r: &Record, out: &mut Output| upper(r, out, &field, &mut text));
    Ok(())
}

/// Writes the record's value with the string field `field` upper-cased
/// (ASCII letters only), everything else byte for byte. `text` is scratch
/// space for the decoded string.
pub fn upper(r: &Record, out: &mut Output, field: &str, text: &mut Vec<u8>) -> Result<(), Error> {
    let doc = r.value_bytes();
    let v = json::get(doc, field)?;
    if !v.exists() {
        return Err(weir::error!("missing field {}", field));
    }
    if v.kind != json::Kind::String {
        return Err(weir::error!("field {} is not a string", field));
    }
    text.clear();
    v.decode_str(text);
    text.make_ascii_uppercase();
    let dst = out.value();
    dst.extend_from_slice(&doc[..v.offset]);
    json::append_quote(dst, text);
    dst.extend_from_slice(&doc[v.offset + v.raw.len()..]);
    Ok(())
}

weir::plugin!(init);

#[cfg(test)]
mod tests {
    use weir::testing::{self, Entry, Input, Op};

    #[test]
    fn upper_cases_the_field() {
        testing::init(r#"{"field":"kind"}"#, super::init).unwrap();
        let got = testing::run(Op::Map, &[Input::value(r#"{"id": "1", "kind": "temp"}"#), Input::value(r#"{"id":1}"#)]);
        assert_eq!(got, vec![Entry::value(0, r#"{"id": "1", "kind": "TEMP"}"#), Entry::error(1, "missing field kind")]);
    }
}
