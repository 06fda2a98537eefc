//! The aggregate of the customers-per-country example in Rust: the
//! CustomerAggregatorByCountry of the Flink article, which counts
//! customer-creation events per country. Each record is a customer as JSON,
//! such as `{"id":3, "first":"Yasemin", "last":"KOC", "country":"TR"}`, and
//! the pipeline keys the stream by "country". The accumulator is the pair
//! (country, count), as Flink's `Tuple2<String, Long>`:
//!
//! - create: ("", 0);
//! - add: country = the record's "country", count + 1;
//! - merge: (a.country, a.count + b.count), or b's country when a has none;
//! - result: `{"country":"TR","count":13}`.
//!
//! The accumulator's bytes are those of the Go plugin (`plugins/count`): the
//! country as a u32 little-endian length and its bytes, then the count as 8
//! bytes little-endian, so either plugin can take over the other's windows.

use weir::{json, Aggregate, Config, Error, Record, ValueBuf};

/// The country and the number of customers seen for it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Acc {
    pub country: Vec<u8>,
    pub count: i64,
}

pub struct CountByCountry;

impl Aggregate for CountByCountry {
    type Acc = Acc;

    fn create(&mut self) -> Acc {
        Acc::default()
    }

    fn add(&mut self, acc: &mut Acc, r: &Record) -> Result<(), Error> {
        let v = json::get(r.value_bytes(), "country")?;
        if !v.exists() {
            return Err(Error::new("missing field country"));
        }
        if v.kind != json::Kind::String {
            return Err(Error::new("field country is not a string"));
        }
        acc.country.clear();
        v.decode_str(&mut acc.country);
        acc.count += 1;
        Ok(())
    }

    fn merge(&mut self, a: Acc, b: Acc) -> Acc {
        let country = if a.country.is_empty() { b.country } else { a.country };
        Acc { country, count: a.count + b.count }
    }

    fn result(&mut self, acc: &Acc, out: &mut ValueBuf) -> Result<(), Error> {
        let mut w = json::Writer::new(out);
        w.begin_object();
        w.key("country");
        w.string_bytes(&acc.country);
        w.key("count");
        w.int(acc.count);
        w.end_object();
        Ok(())
    }

    fn encode(&mut self, acc: &Acc, out: &mut ValueBuf) {
        weir::append_bytes(out, &acc.country);
        weir::append_i64(out, acc.count);
    }

    fn decode(&mut self, b: &[u8]) -> Result<Acc, Error> {
        let mut d = weir::AccDecoder::new(b);
        let country = d.bytes().to_vec();
        let count = d.i64();
        d.end()?;
        Ok(Acc { country, count })
    }
}

fn init(_: &Config) -> Result<(), Error> {
    weir::register_aggregate(CountByCountry);
    Ok(())
}

weir::plugin!(init);

#[cfg(test)]
mod tests {
    use super::*;
    use weir::testing::{self, Input};

    fn enc(country: &str, count: i64) -> Vec<u8> {
        let mut b = Vec::new();
        weir::append_bytes(&mut b, country.as_bytes());
        weir::append_i64(&mut b, count);
        b
    }

    #[test]
    fn counts() {
        testing::init("{}", init).unwrap();
        let fresh = testing::agg_create().unwrap();
        assert_eq!(fresh, enc("", 0));
        let got = testing::agg_add(&[(
            fresh,
            vec![
                Input::keyed("TR", r#"{"id":3, "country":"TR"}"#),
                Input::keyed("TR", r#"{"id":1}"#),
                Input::keyed("TR", r#"{"country":["TR"]}"#),
                Input::keyed("TR", r#"{"id":4, "country":"TR"}"#),
            ],
        )]);
        let errs = vec![(1, "missing field country".to_string()), (2, "field country is not a string".to_string())];
        assert_eq!(got, vec![(errs, enc("TR", 2))]);
        assert_eq!(testing::agg_merge(&[(enc("", 0), enc("GB", 2))]), vec![Ok(enc("GB", 2))]);
        assert_eq!(testing::agg_merge(&[(enc("TR", 6), enc("TR", 7))]), vec![Ok(enc("TR", 13))]);
        let res = testing::agg_result(&[enc("TR", 13)]);
        assert_eq!(res, vec![Ok(Some(br#"{"country":"TR","count":13}"#.to_vec()))]);
    }
}
