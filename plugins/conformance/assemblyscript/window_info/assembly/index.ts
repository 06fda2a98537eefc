// window_info, a conformance plugin (aggregate) whose result comes from the
// result's context (ABI §12.5): it counts a group's records and writes
// {"key":<key>,"start":<window start>,"end":<window end>,"count":<count>},
// the key a JSON string (null for none), the bounds in milliseconds (null
// when the group is not a window's). The accumulator is the count, an i64,
// 8 bytes little-endian, as every SDK's window_info writes it.
import { Record, Writer, Aggregate, AccReader, AggContext, ResultOutput, registerAggregate, json } from "weir";

const j = new json.JsonWriter(new Writer());

class WindowInfo extends Aggregate<i64> {
  create(): i64 {
    return 0;
  }

  add(acc: i64, r: Record): i64 {
    return acc + 1;
  }

  merge(a: i64, b: i64): i64 {
    return a + b;
  }

  resultCtx(acc: i64, ctx: AggContext, out: ResultOutput): void {
    j.reset(out.writer());
    j.beginObject();
    j.key("key");
    let k = ctx.key;
    if (k === null) j.null();
    else j.stringBytes(k);
    j.key("start");
    if (ctx.windowed) j.int(ctx.start);
    else j.null();
    j.key("end");
    if (ctx.windowed) j.int(ctx.end);
    else j.null();
    j.key("count");
    j.int(acc);
    j.endObject();
  }

  encode(acc: i64, w: Writer): void {
    w.i64(acc);
  }

  decode(d: AccReader): i64 {
    return d.i64();
  }
}

registerAggregate<i64>(new WindowInfo());
