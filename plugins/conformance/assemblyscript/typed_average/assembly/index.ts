// typed_average, a conformance plugin (aggregate) of the typed convention
// (ABI §14.5): average's aggregate, typed. It declares the field n as a
// required and strict float, so that the host dead-letters the records
// where n is missing, null or not a number (1e400, beyond f64, included)
// with its own reason, and keeps, per group, the sum and the count of n;
// its result is {"avg":<sum/count>,"count":<count>}, as average writes it,
// with null for the average of no values. The accumulator is average's,
// 16 bytes: the sum as an f64 and the count as an i64, each little-endian,
// so that either plugin's accumulators, of any SDK, merge with the
// other's. See plugins/conformance/README.md.
import {
  Row, Writer, TypedAggregate, AccReader, ResultOutput, FieldFlags, Status,
  floatField, registerTypedAggregate, statusName, fail, json,
} from "weir";

const N = floatField("n", FieldFlags.Required | FieldFlags.Strict);

class Acc {
  constructor(public sum: f64 = 0, public count: i64 = 0) {}
}

const j = new json.JsonWriter(new Writer());

class TypedAverage extends TypedAggregate<Acc> {
  create(): Acc {
    return new Acc();
  }

  // add folds n in. The declaration makes the host pass only records with
  // a number in n; the check keeps a host bug from becoming a wrong sum.
  add(acc: Acc, r: Row): Acc {
    let s = r.status(N);
    if (s != Status.Present) {
      fail("n is " + statusName(s));
      return acc;
    }
    acc.sum += r.float(N);
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

registerTypedAggregate<Acc>(new TypedAverage());
