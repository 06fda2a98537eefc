// average, a conformance plugin (aggregate): per group, the sum and count
// of the numeric field "n" of JSON objects; the result is
// {"avg":<sum/count>,"count":<count>} (avg null for no values). The
// accumulator is 16 bytes, the sum as an f64 and the count as an i64, each
// little-endian, as every SDK's average writes it.
import { Record, Writer, Aggregate, AccReader, ResultOutput, registerAggregate, fail, json } from "weir";

class Acc {
  constructor(public sum: f64 = 0, public count: i64 = 0) {}
}

const v = new json.Value();
const j = new json.JsonWriter(new Writer());

class Average extends Aggregate<Acc> {
  create(): Acc {
    return new Acc();
  }

  add(acc: Acc, r: Record): Acc {
    json.get(r.value, "n", v);
    if (v.error !== null) {
      fail(v.error!);
      return acc;
    }
    if (!v.exists()) {
      fail("missing field n");
      return acc;
    }
    if (v.kind != json.Kind.Number) {
      fail("field n is not a number");
      return acc;
    }
    let n = v.toFloat();
    if (!isFinite(n)) {
      fail("field n is out of range");
      return acc;
    }
    acc.sum += n;
    acc.count++;
    return acc;
  }

  merge(a: Acc, b: Acc): Acc {
    return new Acc(a.sum + b.sum, a.count + b.count);
  }

  result(acc: Acc, out: ResultOutput): void {
    j.reset(out.writer());
    j.beginObject();
    j.key("avg");
    if (acc.count == 0) j.null();
    else j.float(acc.sum / <f64>acc.count);
    j.key("count");
    j.int(acc.count);
    j.endObject();
  }

  encode(acc: Acc, w: Writer): void {
    w.f64(acc.sum);
    w.i64(acc.count);
  }

  decode(d: AccReader): Acc {
    let sum = d.f64();
    return new Acc(sum, d.i64());
  }
}

registerAggregate<Acc>(new Average());
