//! Conformance plugin `typed_average` (aggregate, typed convention, ABI
//! section 14.5): `average`'s aggregate, typed. It declares the field `n`
//! as a required and strict float, so that the host dead-letters the
//! records where `n` is missing, null or not a number (1e400, beyond f64,
//! included) with its own reason, and keeps, per group, the sum and the
//! count of `n`. The result is `{"avg":<sum/count>,"count":<count>}`, as
//! `average` writes it, with null for the average of no values. The
//! accumulator is `average`'s: the sum (f64) then the count (i64), each 8
//! bytes little-endian, so that either plugin's accumulators, of any SDK,
//! merge with the other's. See plugins/conformance/README.md.

use weir::{json, Config, Error, Field, Row, TypedAggregate, ValueBuf};

/// The running sum and count of one group.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Acc {
    pub sum: f64,
    pub count: i64,
}

pub struct TypedAverage {
    /// The index of the declared field `n`.
    n: usize,
}

impl TypedAggregate for TypedAverage {
    type Acc = Acc;

    fn create(&mut self) -> Acc {
        Acc::default()
    }

    /// Folds `n` in. The declaration makes the host pass only records with
    /// a number in `n`; the check keeps a host bug from becoming a wrong
    /// sum.
    fn add(&mut self, acc: &mut Acc, r: &Row) -> Result<(), Error> {
        let n = r.float(self.n).ok_or_else(|| weir::error!("n is {}", r.status(self.n)))?;
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
    let n = weir::declare_field(Field::float("n").required().strict());
    weir::register_typed_aggregate(TypedAverage { n });
    Ok(())
}

weir::plugin!(init);
