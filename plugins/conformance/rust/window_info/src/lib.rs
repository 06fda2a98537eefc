//! Conformance plugin `window_info` (aggregate): it counts a group's
//! records, and its result comes from the result's context (ABI section
//! 12.5): `{"key":<key>,"start":<window start>,"end":<window end>,
//! "count":<count>}`, the key a JSON string (null for none), the bounds in
//! milliseconds (null when the group is not a window's). The accumulator is
//! the count, an i64, 8 bytes little-endian.

use weir::{json, AggContext, Aggregate, Config, Error, Record, ValueBuf};

pub struct WindowInfo;

impl Aggregate for WindowInfo {
    type Acc = i64;

    fn create(&mut self) -> i64 {
        0
    }

    fn add(&mut self, acc: &mut i64, _: &Record) -> Result<(), Error> {
        *acc += 1;
        Ok(())
    }

    fn merge(&mut self, a: i64, b: i64) -> i64 {
        a + b
    }

    fn result_ctx(&mut self, acc: &i64, ctx: &AggContext<'_>, out: &mut ValueBuf) -> Result<(), Error> {
        let mut w = json::Writer::new(out);
        w.begin_object();
        w.key("key");
        match ctx.key {
            Some(k) => w.string_bytes(k),
            None => w.null(),
        }
        let (start, end) = match ctx.window {
            Some((s, e)) => (Some(s), Some(e)),
            None => (None, None),
        };
        for (name, ms) in [("start", start), ("end", end)] {
            w.key(name);
            match ms {
                Some(ms) => w.int(ms),
                None => w.null(),
            }
        }
        w.key("count");
        w.int(*acc);
        w.end_object();
        Ok(())
    }

    fn encode(&mut self, acc: &i64, out: &mut ValueBuf) {
        weir::append_i64(out, *acc);
    }

    fn decode(&mut self, b: &[u8]) -> Result<i64, Error> {
        let mut d = weir::AccDecoder::new(b);
        let n = d.i64();
        d.end()?;
        Ok(n)
    }
}

fn init(_: &Config) -> Result<(), Error> {
    weir::register_aggregate(WindowInfo);
    Ok(())
}

weir::plugin!(init);
