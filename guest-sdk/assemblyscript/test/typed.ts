// Typed functions (ABI §14) that exercise the SDK's Row reader and Patch
// writer, for typed_test.go, which builds this module with the SDK's
// plugin options, declares nothing itself (the module does, here), and
// calls its typed exports with typed batch frames built by package abi,
// checking the typed output frames they return.
//
// Field s of each record says what the functions do with it: "fail",
// "late", "keep", "rekey", "stale"; anything else (or no s) is echoed.

import {
  Row, Patch, PatchEmitter, TypedAggregate, AccReader, AggContext, ResultOutput, Writer,
  FieldFlags, Status, statusName, intField, floatField, boolField, stringField, rawField,
  registerTypedMap, registerTypedFlatMap, registerTypedFilter, registerTypedAggregate, fail,
} from "weir";

const N = intField("n", FieldFlags.Strict);
const X = floatField("x");
const B = boolField("b", FieldFlags.Required);
const S = stringField("s");
const R = rawField("a\\.b.c", FieldFlags.Required | FieldFlags.Strict);

// The statuses of the fields, such as "present,missing,...".
function statuses(r: Row): string {
  let s = statusName(r.status(0));
  for (let f = 1; f <= R; f++) s += "," + statusName(r.status(f));
  return s;
}

// echo sets, for each part of r that has a value, a member holding it.
function echo(r: Row, p: Patch): void {
  p.setInt("ts", r.timestamp);
  let k = r.key;
  if (k === null) p.setNull("key");
  else p.setStringBytes("key", k);
  p.setString("status", statuses(r));
  if (r.has(N)) p.setInt("n", r.int(N));
  if (r.has(X)) p.setFloat("x", r.float(X));
  if (r.has(B)) p.setBool("b", r.bool(B));
  if (r.has(S)) p.setString("s", r.string(S));
  p.setRaw("r", r.bytes(R));
  p.setRawString("arr", "[1,2]");
  p.remove("gone");
}

registerTypedMap((r: Row, p: Patch): void => {
  let cmd = r.string(S);
  if (cmd == "fail") {
    p.setInt("partial", 1);
    fail("failed at " + r.index.toString());
  } else if (cmd == "late") {
    p.setInt("x", 1);
    p.setKeyString("k");
  } else if (cmd == "rekey") {
    p.newValue();
    p.setKey(null);
    p.setTimestamp(r.timestamp + 1);
  } else if (cmd != "keep") {
    echo(r, p);
  }
});

// The flat_map emits the input, then a patch per unit of n (none when
// absent), then an empty patch (the input again).
registerTypedFlatMap((r: Row, out: PatchEmitter): void => {
  out.keep();
  for (let i: i64 = 0; i < r.int(N); i++) out.patch().setInt("i", i);
  let last = out.patch();
  let cmd = r.string(S);
  if (cmd == "fail") fail("no " + r.keyString());
  if (cmd == "stale") {
    out.keep();
    last.setInt("x", 1);
  }
});

// The filter keeps the records whose b is true, and rejects "fail".
registerTypedFilter((r: Row): bool => {
  if (r.string(S) == "fail") fail("rejected " + r.index.toString());
  return r.bool(B);
});

// Sum adds up n; a record without n fails. Its result is the sum; given a
// context with a key or a window (weir_agg_result_ctx), "<key> <start>-<end>
// <sum>", "-" for no key or no window.
class Sum extends TypedAggregate<i64> {
  create(): i64 {
    return 0;
  }

  add(acc: i64, r: Row): i64 {
    if (r.status(N) != Status.Present) fail("n is " + statusName(r.status(N)) + " in " + r.index.toString());
    return acc + r.int(N);
  }

  merge(a: i64, b: i64): i64 {
    return a + b;
  }

  result(acc: i64, out: ResultOutput): void {
    out.writer().decimal(acc);
  }

  resultCtx(acc: i64, ctx: AggContext, out: ResultOutput): void {
    if (ctx.key === null && !ctx.windowed) {
      this.result(acc, out);
      return;
    }
    let w = out.writer();
    w.string(ctx.key === null ? "- " : ctx.keyString() + " ");
    if (ctx.windowed) {
      w.decimal(ctx.start);
      w.string("-");
      w.decimal(ctx.end);
    } else {
      w.string("-");
    }
    w.string(" ");
    w.decimal(acc);
  }

  encode(acc: i64, w: Writer): void {
    w.i64(acc);
  }

  decode(d: AccReader): i64 {
    return d.i64();
  }
}

registerTypedAggregate<i64>(new Sum());
