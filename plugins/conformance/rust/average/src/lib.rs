//! Conformance plugin `average` (aggregate). Input: a JSON object with a
//! numeric field `n`. The accumulator is the sum (f64) then the count (i64),
//! each 8 bytes little-endian, so any SDK's accumulators merge with any
//! other's. The result is `{"avg":<sum/count>,"count":<count>}`, the average
//! formatted as Python's repr, or null for no records.

use weir::{json, Aggregate, Config, Error, Record, ValueBuf};

/// The running sum and count of one group.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Acc {
    pub sum: f64,
    pub count: i64,
}

pub struct Average;

impl Aggregate for Average {
    type Acc = Acc;

    fn create(&mut self) -> Acc {
        Acc::default()
    }

    fn add(&mut self, acc: &mut Acc, r: &Record) -> Result<(), Error> {
        let v = json::get(r.value_bytes(), "n")?;
        if !v.exists() {
            return Err(Error::new("missing field n"));
        }
        if v.kind != json::Kind::Number {
            return Err(Error::new("field n is not a number"));
        }
        let n = v.as_f64().ok_or("field n is out of range")?;
        acc.sum += n;
        acc.count += 1;
        Ok(())
    }

    fn merge(&mut self, a: Acc, b: Acc) -> Acc {
        Acc { sum: a.sum + b.sum, count: a.count + b.count }
    }

    fn result(&mut self, acc: &Acc, out: &mut ValueBuf) -> Result<(), Error> {
        let mut w = json::Writer::new(out);
        w.begin_object();
        w.key("avg");
        if acc.count == 0 {
            w.null();
        } else {
            w.float(acc.sum / acc.count as f64);
        }
        w.key("count");
        w.int(acc.count);
        w.end_object();
        Ok(())
    }

    fn encode(&mut self, acc: &Acc, out: &mut ValueBuf) {
        weir::append_f64(out, acc.sum);
        weir::append_i64(out, acc.count);
    }

    fn decode(&mut self, b: &[u8]) -> Result<Acc, Error> {
        let mut d = weir::AccDecoder::new(b);
        let acc = Acc { sum: d.f64(), count: d.i64() };
        d.end()?;
        Ok(acc)
    }
}

fn init(_: &Config) -> Result<(), Error> {
    weir::register_aggregate(Average);
    Ok(())
}

weir::plugin!(init);
