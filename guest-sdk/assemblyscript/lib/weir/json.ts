// A small, allocation-light JSON reader and writer for plugins (RFC 8259),
// the AssemblyScript counterpart of the Go SDK's wjson: look up a field
// of an object without building a tree, decode strings and numbers, and
// write JSON with minimal escaping, straight into an output Writer.

import { Writer } from "./writer";
import { utf8Equals } from "./record";
import { fail } from "./core";
import { parseDecimal, shortestDigits, digitsExp } from "./decimal";

/** The kinds of JSON value. Invalid is "not present": what a lookup gives when nothing is there. */
export enum Kind {
  Invalid = 0,
  Null = 1,
  Bool = 2,
  Number = 3,
  String = 4,
  Array = 5,
  Object = 6,
}

/** The lower-case name of a kind, such as "number". */
export function kindName(k: Kind): string {
  switch (k) {
    case Kind.Null: return "null";
    case Kind.Bool: return "bool";
    case Kind.Number: return "number";
    case Kind.String: return "string";
    case Kind.Array: return "array";
    case Kind.Object: return "object";
  }
  return "invalid";
}

/** The deepest nesting of arrays and objects the reader accepts. */
export const MAX_DEPTH: i32 = 10000;

/**
 * One JSON value inside a document: its kind and where its text is. The
 * text is not copied: a Value is valid while its document is (for a
 * record's value, until the plugin function returns).
 *
 * A lookup that finds nothing gives kind Invalid (exists() is false). A
 * malformed document gives kind Invalid and a non-null error.
 */
export class Value {
  kind: Kind = Kind.Invalid;
  /** Byte offsets of the value's text in the document (a string's includes its quotes). */
  start: i32 = 0;
  end: i32 = 0;
  /** The syntax error of the document, or null. */
  error: string | null = null;
  /** @internal */ base: usize = 0;
  /** @internal the document, kept alive */ doc: Uint8Array | null = null;
  /** @internal a string without escapes or non-ASCII bytes */ plain: bool = false;
  /** @internal */ intState: u8 = 0; // 0 unknown, 1 integer, 2 not
  /** @internal */ intVal: i64 = 0;

  /** Whether a lookup found a value. */
  @inline exists(): bool {
    return this.kind != Kind.Invalid;
  }

  /** Address of the value's text in memory. */
  @inline get ptr(): usize {
    return this.base + <usize>this.start;
  }

  /** Length of the value's text. */
  @inline get length(): i32 {
    return this.end - this.start;
  }

  /** The value's text, as a new view of its document. */
  raw(): Uint8Array {
    let d = this.doc;
    if (d === null) return new Uint8Array(0);
    return d.subarray(this.start, this.end);
  }

  /**
   * Appends the decoded content of a string (escapes replaced, invalid
   * UTF-8 and unpaired surrogates as U+FFFD) to w; for any other kind,
   * its raw text.
   */
  @inline appendString(w: Writer): void {
    if (this.kind != Kind.String || this.length < 2) {
      w.raw(this.ptr, this.length);
    } else if (this.plain) {
      w.raw(this.ptr + 1, this.length - 2);
    } else {
      appendUnquoted(w, this.ptr + 1, this.length - 2);
    }
  }

  /** The decoded content of a string (for other kinds, the raw text). Allocates. */
  toString(): string {
    scratch.reset();
    this.appendString(scratch);
    return scratch.toString();
  }

  /** Whether the value is a string whose content equals s. */
  equalsString(s: string): bool {
    if (this.kind != Kind.String) return false;
    if (this.plain) return utf8Equals(this.ptr + 1, this.length - 2, s);
    scratch.reset();
    this.appendString(scratch);
    return utf8Equals(scratch.ptr, scratch.len, s);
  }

  /**
   * Whether the value is an integer: a number written without fraction or
   * exponent, within the range of i64 (so 4.0 and 4e0 are not).
   */
  isInt(): bool {
    if (this.intState == 0) {
      this.intState = 2;
      if (this.kind == Kind.Number && parseIntRaw(this.ptr, this.length)) {
        this.intState = 1;
        this.intVal = parsedInt;
      }
    }
    return this.intState == 1;
  }

  /** The value of an integer (see isInt); 0 for anything else. */
  toInt(): i64 {
    return this.isInt() ? this.intVal : 0;
  }

  /**
   * The value of a number as the nearest f64, or NaN for other kinds. A
   * number beyond the range of f64 (1e400) gives ±Infinity.
   */
  toFloat(): f64 {
    if (this.kind != Kind.Number) return NaN;
    return parseDecimal(this.ptr, this.length);
  }

  /** true for the literal true; false for anything else. */
  toBool(): bool {
    return this.kind == Kind.Bool && load<u8>(this.ptr) == 0x74;
  }

  /** The field name of this object (see get). */
  get(name: string, dst: Value = new Value()): Value {
    return find(this.doc, this.base + <usize>this.start, this.length, this.start, name, dst);
  }
}

// scratch holds decoded strings.
const scratch = new Writer(256);

// The parser's state: the document being read, and the first error.
let B: usize = 0; // base address
let N: i32 = 0; // length
let depth: i32 = 0;
let errMsg: string | null = null;
let errOff: i32 = 0;
// What value() found.
let vKind: Kind = Kind.Invalid;
let vPlain: bool = false;

function setErr(i: i32, msg: string): i32 {
  if (errMsg === null) {
    errMsg = msg;
    errOff = i;
  }
  return -1;
}

function errEOF(): i32 {
  return setErr(N, "unexpected end of JSON input");
}

function quoteChar(c: u32): string {
  if (c == 0x27) return "'\\''";
  if (c == 0x22) return "'\"'";
  if (c >= 0x20 && c < 0x7f) return "'" + String.fromCharCode(c) + "'";
  let h = "0123456789abcdef";
  return "'\\x" + h.charAt(<i32>(c >> 4)) + h.charAt(<i32>(c & 15)) + "'";
}

function errChar(i: i32, context: string): i32 {
  return setErr(i, "invalid character " + quoteChar(load<u8>(B + <usize>i)) + " " + context);
}

// @ts-ignore: decorator
@inline
function at(i: i32): u32 {
  return <u32>load<u8>(B + <usize>i);
}

function ws(i: i32): i32 {
  let b = B;
  let n = N;
  while (i < n) {
    let c = <u32>load<u8>(b + <usize>i);
    if (c == 0x20 || c == 0x0a || c == 0x0d || c == 0x09) i++;
    else break;
  }
  return i;
}

// value reads the value at i and returns its end, or -1; sets vKind, vPlain.
function value(i: i32): i32 {
  if (i >= N) return errEOF();
  let c = at(i);
  vPlain = false;
  if (c == 0x22) {
    vKind = Kind.String;
    return str(i);
  }
  if (c == 0x7b) {
    let e = object(i);
    vKind = Kind.Object;
    vPlain = false;
    return e;
  }
  if (c == 0x5b) {
    let e = array(i);
    vKind = Kind.Array;
    vPlain = false;
    return e;
  }
  if (c == 0x2d || (c - 0x30) < 10) {
    vKind = Kind.Number;
    return num(i);
  }
  if (c == 0x74) {
    vKind = Kind.Bool;
    return lit(i, "true");
  }
  if (c == 0x66) {
    vKind = Kind.Bool;
    return lit(i, "false");
  }
  if (c == 0x6e) {
    vKind = Kind.Null;
    return lit(i, "null");
  }
  return errChar(i, "looking for beginning of value");
}

function lit(i: i32, word: string): i32 {
  let n = word.length;
  for (let j = 1; j < n; j++) {
    if (i + j >= N) return errEOF();
    let w = <u32>word.charCodeAt(j);
    if (at(i + j) != w) return errChar(i + j, "in literal " + word + " (expecting " + quoteChar(w) + ")");
  }
  return i + n;
}

// @ts-ignore: decorator
@inline
function isDigit(c: u32): bool {
  return c - 0x30 < 10;
}

function num(i: i32): i32 {
  let b = B;
  let n = N;
  if (at(i) == 0x2d) {
    i++;
    if (i >= N) return errEOF();
    if (!isDigit(at(i))) return errChar(i, "in numeric literal");
  }
  if (at(i) == 0x30) {
    i++;
  } else {
    while (i < n && isDigit(<u32>load<u8>(b + <usize>i))) i++;
  }
  if (i < N && at(i) == 0x2e) {
    i++;
    if (i >= N) return errEOF();
    if (!isDigit(at(i))) return errChar(i, "after decimal point in numeric literal");
    while (i < n && isDigit(<u32>load<u8>(b + <usize>i))) i++;
  }
  if (i < N && (at(i) | 0x20) == 0x65) {
    i++;
    if (i < N && (at(i) == 0x2b || at(i) == 0x2d)) i++;
    if (i >= N) return errEOF();
    if (!isDigit(at(i))) return errChar(i, "in exponent of numeric literal");
    while (i < n && isDigit(<u32>load<u8>(b + <usize>i))) i++;
  }
  return i;
}

function unhex(c: u32): i32 {
  if (c - 0x30 < 10) return <i32>(c - 0x30);
  c |= 0x20;
  if (c - 0x61 < 6) return <i32>(c - 0x61 + 10);
  return -1;
}

// str reads the string at i (a '"'); sets vPlain.
function str(i: i32): i32 {
  i++;
  let escaped = false;
  let bits: u32 = 0;
  let b = B;
  let n = N;
  while (true) {
    while (i < n) {
      let c = <u32>load<u8>(b + <usize>i);
      if (c < 0x20 || c == 0x22 || c == 0x5c) break;
      bits |= c;
      i++;
    }
    if (i >= n) return errEOF();
    let c = at(i);
    if (c == 0x22) {
      vPlain = !escaped && bits < 0x80;
      return i + 1;
    }
    if (c == 0x5c) {
      escaped = true;
      i++;
      if (i >= N) return errEOF();
      let e = at(i);
      if (e == 0x22 || e == 0x5c || e == 0x2f || e == 0x62 || e == 0x66 || e == 0x6e || e == 0x72 || e == 0x74) {
        i++;
      } else if (e == 0x75) {
        i++;
        for (let j = 0; j < 4; j++) {
          if (i >= N) return errEOF();
          if (unhex(at(i)) < 0) return errChar(i, "in \\u hexadecimal character escape");
          i++;
        }
      } else {
        return errChar(i, "in string escape code");
      }
    } else {
      return errChar(i, "in string literal");
    }
  }
  return -1;
}

function push(i: i32): bool {
  depth++;
  if (depth > MAX_DEPTH) {
    setErr(i, "exceeded max depth");
    return false;
  }
  return true;
}

// next reads the separator after a member ending at i: returns the start
// of the next member, or -(end + 2) after the closing byte, or -1 on error.
function next(i: i32, closing: u32, what: string): i32 {
  i = ws(i);
  if (i >= N) return errEOF();
  let c = at(i);
  if (c == 0x2c) {
    i = ws(i + 1);
    if (i >= N) return errEOF();
    return i;
  }
  if (c == closing) {
    depth--;
    return -(i + 1) - 2;
  }
  return errChar(i, "after " + what);
}

function object(i: i32): i32 {
  if (!push(i)) return -1;
  i = ws(i + 1);
  if (i >= N) return errEOF();
  if (at(i) == 0x7d) {
    depth--;
    return i + 1;
  }
  while (true) {
    if (at(i) != 0x22) return errChar(i, "looking for beginning of object key string");
    let kend = str(i);
    if (kend < 0) return -1;
    i = ws(kend);
    if (i >= N) return errEOF();
    if (at(i) != 0x3a) return errChar(i, "after object key");
    i = ws(i + 1);
    let vend = value(i);
    if (vend < 0) return -1;
    i = next(vend, 0x7d, "object key:value pair");
    if (i == -1) return -1;
    if (i < -1) return -(i + 2);
  }
  return -1;
}

function array(i: i32): i32 {
  if (!push(i)) return -1;
  i = ws(i + 1);
  if (i >= N) return errEOF();
  if (at(i) == 0x5d) {
    depth--;
    return i + 1;
  }
  while (true) {
    let end = value(i);
    if (end < 0) return -1;
    i = next(end, 0x5d, "array element");
    if (i == -1) return -1;
    if (i < -1) return -(i + 2);
  }
  return -1;
}

function eof(i: i32): i32 {
  i = ws(i);
  if (i < N) return errChar(i, "after top-level value");
  return i;
}

// begin starts reading the n bytes at p.
function begin(p: usize, n: i32): void {
  B = p;
  N = n;
  depth = 0;
  errMsg = null;
  errOff = 0;
}

function fillError(dst: Value, offset: i32): Value {
  dst.kind = Kind.Invalid;
  dst.start = 0;
  dst.end = 0;
  dst.error = "json: " + errMsg! + " at byte offset " + (errOff - offset).toString();
  errMsg = null;
  return dst;
}

function reset(dst: Value, doc: Uint8Array | null, p: usize): void {
  dst.kind = Kind.Invalid;
  dst.start = 0;
  dst.end = 0;
  dst.error = null;
  dst.plain = false;
  dst.intState = 0;
  dst.doc = doc;
  dst.base = p;
}

// find looks up name in the object text of n bytes at p (offset off in
// doc), validating all of it; base is doc's start.
function find(doc: Uint8Array | null, p: usize, n: i32, off: i32, name: string, dst: Value): Value {
  let base = p - <usize>off;
  reset(dst, doc, base);
  begin(p, n);
  let i = ws(0);
  let end: i32;
  if (i >= N) {
    errEOF();
    return fillError(dst, 0);
  }
  if (at(i) != 0x7b) {
    end = value(i);
  } else {
    end = findIn(i, name, dst, off);
  }
  if (end >= 0) end = eof(end);
  if (end < 0) return fillError(dst, 0);
  return dst;
}

function findIn(i: i32, name: string, dst: Value, off: i32): i32 {
  if (!push(i)) return -1;
  i = ws(i + 1);
  if (i >= N) return errEOF();
  if (at(i) == 0x7d) {
    depth--;
    return i + 1;
  }
  while (true) {
    if (at(i) != 0x22) return errChar(i, "looking for beginning of object key string");
    let kstart = i;
    let kend = str(i);
    if (kend < 0) return -1;
    let kplain = vPlain;
    i = ws(kend);
    if (i >= N) return errEOF();
    if (at(i) != 0x3a) return errChar(i, "after object key");
    i = ws(i + 1);
    let vend = value(i);
    if (vend < 0) return -1;
    let match: bool;
    if (kplain) {
      match = utf8Equals(B + <usize>kstart + 1, kend - kstart - 2, name);
    } else {
      scratch.reset();
      appendUnquoted(scratch, B + <usize>kstart + 1, kend - kstart - 2);
      match = utf8Equals(scratch.ptr, scratch.len, name);
    }
    if (match) {
      dst.kind = vKind;
      dst.plain = vPlain;
      dst.start = i + off;
      dst.end = vend + off;
      dst.intState = 0;
    }
    i = next(vend, 0x7d, "object key:value pair");
    if (i == -1) return -1;
    if (i < -1) return -(i + 2);
  }
  return -1;
}

// ---- fast path ----
//
// getFast is get for the common case, a flat object: one function with its
// state in locals (a call costs more than the work of most steps under a
// wasm JIT), scanning strings and digits 8 bytes at a time. It accepts only
// what the full reader (find) accepts, and gives the same result; anything
// else (a malformed document, a top-level value that is not an object) makes
// it return false and the caller runs find, which also explains the error.
// Nested objects and arrays are read by the full reader's value().

// @ts-ignore: decorator
@inline const ONES: u64 = 0x0101010101010101;
// @ts-ignore: decorator
@inline const HIGHS: u64 = 0x8080808080808080;

// strSpecial marks (in bit 7 of each byte) the bytes of v that end a run of
// plain string bytes: '"', '\\', control characters and non-ASCII bytes. A
// mark above the lowest can be spurious (a borrow), never the lowest.
// @ts-ignore: decorator
@inline
function strSpecial(v: u64): u64 {
  let q = v ^ (ONES * 0x22);
  let s = v ^ (ONES * 0x5c);
  return (((q - ONES) & ~q) | ((s - ONES) & ~s) | ((v - ONES * 0x20) & ~v) | v) & HIGHS;
}

// nonDigit marks the bytes of v outside '0'-'9' (the lowest mark is exact).
// @ts-ignore: decorator
@inline
function nonDigit(v: u64): u64 {
  return ((v + ONES * 0x46) | (v - ONES * 0x30)) & HIGHS;
}

// @ts-ignore: decorator
@inline
function isWS(c: u32): bool {
  // ' ', '\n', '\r' and '\t' as bits of a mask.
  return c <= 0x20 && ((<u64>1 << <u64>c) & 0x100002600) != 0;
}

// fwsAt skips whitespace from i in the n bytes at b.
// @ts-ignore: decorator
@inline
function fwsAt(b: usize, n: i32, i: i32): i32 {
  while (i < n && isWS(<u32>load<u8>(b + <usize>i))) i++;
  return i;
}

// fstr reads the string whose opening quote is at i, in the n bytes at b:
// returns the index after its closing quote times 2, plus 1 when the string
// is plain (no escapes, all ASCII); or -1 for anything the fast path leaves
// to the full reader.
// @ts-ignore: decorator
@inline
function fstr(b: usize, n: i32, i: i32): i32 {
  i++;
  let plain = true;
  while (true) {
    // All loads are inside the document: i + 8 <= n.
    while (i + 8 <= n) {
      let m = strSpecial(load<u64>(b + <usize>i));
      if (m != 0) {
        i += <i32>(ctz<u64>(m) >> 3);
        break;
      }
      i += 8;
    }
    if (i >= n) return -1;
    let c = <u32>load<u8>(b + <usize>i);
    if (c == 0x22) return ((i + 1) << 1) | <i32>plain;
    if (c >= 0x80) {
      plain = false;
      i++;
    } else if (c == 0x5c) {
      plain = false;
      if (i + 1 >= n) return -1;
      let e = <u32>load<u8>(b + <usize>i + 1);
      if (e == 0x22 || e == 0x5c || e == 0x2f || e == 0x62 || e == 0x66 || e == 0x6e || e == 0x72 || e == 0x74) {
        i += 2;
      } else if (e == 0x75) {
        if (i + 6 > n || hex4(b + <usize>i + 2, 4) < 0) return -1;
        i += 6;
      } else {
        return -1;
      }
    } else if (c < 0x20) {
      return -1;
    } else {
      // A plain byte after a spurious mark, or in the tail of fewer than 8.
      i++;
    }
  }
  return -1;
}

// fdigits skips the digits from i in the n bytes at b.
// @ts-ignore: decorator
@inline
function fdigits(b: usize, n: i32, i: i32): i32 {
  // All loads are inside the document: i + 8 <= n.
  while (i + 8 <= n) {
    let m = nonDigit(load<u64>(b + <usize>i));
    if (m != 0) return i + <i32>(ctz<u64>(m) >> 3);
    i += 8;
  }
  while (i < n && isDigit(<u32>load<u8>(b + <usize>i))) i++;
  return i;
}

// getFast looks up name in the n bytes at p as get does, into dst, reset
// for the document at p; on false, dst may be half written: the caller
// resets it again.
function getFast(p: usize, n: i32, name: string, dst: Value): bool {
  let b = p;
  let i = fwsAt(b, n, 0);
  if (i >= n || load<u8>(b + <usize>i) != 0x7b) return false;
  i = fwsAt(b, n, i + 1);
  if (i < n && load<u8>(b + <usize>i) == 0x7d) return fwsAt(b, n, i + 1) == n;
  let np = changetype<usize>(name);
  let nl = name.length;
  while (true) {
    if (i >= n || load<u8>(b + <usize>i) != 0x22) return false;
    let ks = fstr(b, n, i);
    if (ks < 0) return false;
    let kend = ks >> 1;
    // A plain key is ASCII, one byte per code unit of a matching name; any
    // other key goes through the decoder.
    let match = false;
    let kl = kend - i - 2;
    if (ks & 1) {
      if (kl == nl) {
        match = true;
        let kp = b + <usize>i + 1;
        for (let j = 0; j < kl; j++) {
          if (<u32>load<u8>(kp + <usize>j) != <u32>load<u16>(np + (<usize>j << 1))) {
            match = false;
            break;
          }
        }
      }
    } else {
      scratch.reset();
      appendUnquoted(scratch, b + <usize>i + 1, kl);
      match = utf8Equals(scratch.ptr, scratch.len, name);
    }
    i = fwsAt(b, n, kend);
    if (i >= n || load<u8>(b + <usize>i) != 0x3a) return false;
    i = fwsAt(b, n, i + 1);
    if (i >= n) return false;
    let start = i;
    let k = Kind.Invalid;
    let vpl = false;
    let c = <u32>load<u8>(b + <usize>i);
    if (c == 0x22) {
      k = Kind.String;
      let vs = fstr(b, n, i);
      i = vs >> 1; // -1 stays -1
      vpl = (vs & 1) != 0;
    } else if (c == 0x74) {
      // "true" and "null" as one little-endian u32, in the document.
      k = Kind.Bool;
      i = i + 4 <= n && load<u32>(b + <usize>i) == 0x65757274 ? i + 4 : -1;
    } else if (c == 0x6e) {
      k = Kind.Null;
      i = i + 4 <= n && load<u32>(b + <usize>i) == 0x6c6c756e ? i + 4 : -1;
    } else if (c == 0x66) {
      k = Kind.Bool;
      i = i + 5 <= n && load<u32>(b + <usize>i + 1) == 0x65736c61 ? i + 5 : -1;
    } else if (c == 0x7b || c == 0x5b) {
      // Nested: the full reader, at depth 1 (inside this object).
      begin(b, n);
      depth = 1;
      i = value(i);
      k = vKind;
      vpl = vPlain;
      if (errMsg !== null) {
        errMsg = null;
        return false;
      }
    } else {
      k = Kind.Number;
      if (c == 0x2d) {
        i++;
        if (i >= n) return false;
        c = <u32>load<u8>(b + <usize>i);
      }
      if (c == 0x30) {
        i++;
      } else if (isDigit(c)) {
        i = fdigits(b, n, i + 1);
      } else {
        return false;
      }
      if (i < n && load<u8>(b + <usize>i) == 0x2e) {
        i++;
        if (i >= n || !isDigit(<u32>load<u8>(b + <usize>i))) return false;
        i = fdigits(b, n, i + 1);
      }
      if (i < n && (<u32>load<u8>(b + <usize>i) | 0x20) == 0x65) {
        i++;
        if (i < n) {
          let s = <u32>load<u8>(b + <usize>i);
          if (s == 0x2b || s == 0x2d) i++;
        }
        if (i >= n || !isDigit(<u32>load<u8>(b + <usize>i))) return false;
        i = fdigits(b, n, i + 1);
      }
    }
    if (i < 0) return false;
    if (match) {
      dst.kind = k;
      dst.start = start;
      dst.end = i;
      dst.plain = vpl;
    }
    i = fwsAt(b, n, i);
    if (i >= n) return false;
    c = <u32>load<u8>(b + <usize>i);
    if (c == 0x7d) {
      if (fwsAt(b, n, i + 1) != n) return false;
      break;
    }
    if (c != 0x2c) return false;
    i = fwsAt(b, n, i + 1);
  }
  return true;
}

/**
 * Validates doc (a JSON document; null counts as empty) and returns its
 * top-level field name: the last occurrence when the name repeats, as
 * JSON parsers keep. When doc is not an object, or has no such field, the
 * result has kind Invalid; when doc is malformed, it also has an error.
 * dst, if given, is filled instead of a new Value.
 */
export function get(doc: Uint8Array | null, name: string, dst: Value = new Value()): Value {
  if (doc === null) return find(null, 0, 0, 0, name, dst);
  let p = doc.dataStart;
  let n = doc.byteLength;
  reset(dst, doc, p);
  if (getFast(p, n, name, dst)) return dst;
  return find(doc, p, n, 0, name, dst);
}

/** Validates doc and returns its top-level value (with an error if malformed). */
export function parse(doc: Uint8Array | null, dst: Value = new Value()): Value {
  let p: usize = doc === null ? 0 : doc.dataStart;
  let n: i32 = doc === null ? 0 : doc.byteLength;
  reset(dst, doc, p);
  begin(p, n);
  let i = ws(0);
  let end = value(i);
  if (end >= 0) {
    dst.kind = vKind;
    dst.plain = vPlain;
    dst.start = i;
    dst.end = end;
    end = eof(end);
  }
  if (end < 0) return fillError(dst, 0);
  return dst;
}

/** Whether doc is one well-formed JSON value, optionally surrounded by whitespace. */
export function valid(doc: Uint8Array | null): bool {
  return parse(doc, tmpValue).error === null;
}

const tmpValue = new Value();

/** The function each calls with each field: its name (a Value of kind String) and its value; false stops. */
export type EachFn = (key: Value, val: Value) => bool;

/**
 * Validates doc and calls fn with each field of its top-level object, in
 * document order and including repeated names, until fn returns false.
 * Returns null, or the error: the syntax error of a malformed document
 * (before fn is called), or for a well-formed document that is not an
 * object "json: wrong kind of JSON value: want object, got <kind>". The
 * Values are new for each call and valid while doc is; fn may read other
 * documents (and doc) with this module's functions.
 */
export function each(doc: Uint8Array | null, fn: EachFn): string | null {
  let top = parse(doc, tmpValue);
  if (top.error !== null) return top.error;
  if (top.kind != Kind.Object) return "json: wrong kind of JSON value: want object, got " + kindName(top.kind);
  let d = doc!;
  let p = d.dataStart;
  let n = d.byteLength;
  begin(p, n);
  let i = ws(top.start + 1);
  if (at(i) == 0x7d) return null;
  depth = 1;
  while (true) {
    let key = new Value();
    reset(key, d, p);
    key.kind = Kind.String;
    key.start = i;
    key.end = str(i);
    key.plain = vPlain;
    i = ws(ws(key.end) + 1);
    let val = new Value();
    reset(val, d, p);
    val.start = i;
    val.end = value(i);
    val.kind = vKind;
    val.plain = vPlain;
    if (!fn(key, val)) return null;
    // fn may have read other documents: the parser's state is doc's again.
    begin(p, n);
    depth = 1;
    i = next(val.end, 0x7d, "object key:value pair");
    if (i < -1) return null;
  }
  return null;
}

// ---- strings ----

// decoded rune and its size, from decodeRune
let runeSize: i32 = 0;

// decodeRune decodes the UTF-8 sequence at p (n bytes available) as Go's
// utf8.DecodeRune: invalid sequences give U+FFFD with size 1.
function decodeRune(p: usize, n: i32): u32 {
  let c0 = <u32>load<u8>(p);
  runeSize = 1;
  if (c0 < 0x80) return c0;
  if (c0 < 0xc2 || c0 > 0xf4 || n < 2) return 0xfffd;
  let c1 = <u32>load<u8>(p, 1);
  if (c0 < 0xe0) {
    if ((c1 & 0xc0) != 0x80) return 0xfffd;
    runeSize = 2;
    return ((c0 & 0x1f) << 6) | (c1 & 0x3f);
  }
  let lo: u32 = 0x80, hi: u32 = 0xbf;
  if (c0 == 0xe0) lo = 0xa0;
  else if (c0 == 0xed) hi = 0x9f;
  else if (c0 == 0xf0) lo = 0x90;
  else if (c0 == 0xf4) hi = 0x8f;
  if (c1 < lo || c1 > hi || n < 3) return 0xfffd;
  let c2 = <u32>load<u8>(p, 2);
  if ((c2 & 0xc0) != 0x80) return 0xfffd;
  if (c0 < 0xf0) {
    runeSize = 3;
    return ((c0 & 0x0f) << 12) | ((c1 & 0x3f) << 6) | (c2 & 0x3f);
  }
  if (n < 4) return 0xfffd;
  let c3 = <u32>load<u8>(p, 3);
  if ((c3 & 0xc0) != 0x80) return 0xfffd;
  runeSize = 4;
  return ((c0 & 0x07) << 18) | ((c1 & 0x3f) << 12) | ((c2 & 0x3f) << 6) | (c3 & 0x3f);
}

/** Appends the UTF-8 encoding of code point r. */
export function appendRune(w: Writer, r: u32): void {
  if (r < 0x80) {
    w.byte(r);
  } else if (r < 0x800) {
    let p = w.reserve(2);
    store<u8>(p, <u8>(0xc0 | (r >> 6)));
    store<u8>(p, <u8>(0x80 | (r & 0x3f)), 1);
    w.len += 2;
  } else if (r < 0x10000) {
    let p = w.reserve(3);
    store<u8>(p, <u8>(0xe0 | (r >> 12)));
    store<u8>(p, <u8>(0x80 | ((r >> 6) & 0x3f)), 1);
    store<u8>(p, <u8>(0x80 | (r & 0x3f)), 2);
    w.len += 3;
  } else {
    let p = w.reserve(4);
    store<u8>(p, <u8>(0xf0 | (r >> 18)));
    store<u8>(p, <u8>(0x80 | ((r >> 12) & 0x3f)), 1);
    store<u8>(p, <u8>(0x80 | ((r >> 6) & 0x3f)), 2);
    store<u8>(p, <u8>(0x80 | (r & 0x3f)), 3);
    w.len += 4;
  }
}

function hex4(p: usize, n: i32): i32 {
  if (n < 4) return -1;
  let r: i32 = 0;
  for (let j = 0; j < 4; j++) {
    let d = unhex(<u32>load<u8>(p + <usize>j));
    if (d < 0) return -1;
    r = (r << 4) | d;
  }
  return r;
}

/**
 * Appends to w the decoding of the n bytes at p, the content of a JSON
 * string between its quotes: escapes replaced, invalid UTF-8 and unpaired
 * surrogates as U+FFFD (as Go's encoding/json decodes).
 */
export function appendUnquoted(w: Writer, p: usize, n: i32): void {
  let start = 0;
  let i = 0;
  while (i < n) {
    let c = <u32>load<u8>(p + <usize>i);
    if (c >= 0x20 && c < 0x80 && c != 0x5c) {
      i++;
      continue;
    }
    if (c >= 0x80) {
      let r = decodeRune(p + <usize>i, n - i);
      if (r != 0xfffd || runeSize != 1) {
        i += runeSize;
        continue;
      }
      w.raw(p + <usize>start, i - start);
      appendRune(w, 0xfffd);
      i++;
      start = i;
      continue;
    }
    w.raw(p + <usize>start, i - start);
    if (c != 0x5c || i + 1 >= n) {
      w.byte(c);
      i++;
      start = i;
      continue;
    }
    let e = <u32>load<u8>(p + <usize>i + 1);
    i += 2;
    if (e == 0x22 || e == 0x5c || e == 0x2f) w.byte(e);
    else if (e == 0x62) w.byte(0x08);
    else if (e == 0x66) w.byte(0x0c);
    else if (e == 0x6e) w.byte(0x0a);
    else if (e == 0x72) w.byte(0x0d);
    else if (e == 0x74) w.byte(0x09);
    else if (e == 0x75) {
      let r = hex4(p + <usize>i, n - i);
      if (r < 0) {
        appendRune(w, 0xfffd);
      } else {
        i += 4;
        if (r >= 0xd800 && r < 0xe000) {
          let r2: i32 = -1;
          if (r < 0xdc00 && i + 1 < n && load<u8>(p + <usize>i) == 0x5c && load<u8>(p + <usize>i + 1) == 0x75) {
            r2 = hex4(p + <usize>i + 2, n - i - 2);
          }
          if (r2 >= 0xdc00 && r2 < 0xe000) {
            r = (((r - 0xd800) << 10) | (r2 - 0xdc00)) + 0x10000;
            i += 6;
          } else {
            r = 0xfffd;
          }
        }
        appendRune(w, <u32>r);
      }
    } else {
      w.byte(c);
      w.byte(e);
    }
    start = i;
  }
  w.raw(p + <usize>start, n - start);
}

const HEX = memory.data<u8>([0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66]);

/**
 * Appends the n bytes at p as a JSON string with the minimal escaping:
 * `"` and `\` as `\"` and `\\`; U+0000-U+001F as \b, \f, \n, \r, \t or
 * \u00xx (lower-case hex); every other character as its UTF-8 bytes. A byte
 * that is not part of valid UTF-8 is written as the escape \ufffd.
 */
// @ts-ignore: decorator
@inline
export function appendQuoted(w: Writer, p: usize, n: i32): void {
  // Inlined, for the common case of nothing to escape; the rest is in
  // appendQuotedSlow.
  let i = plainPrefix(p, n);
  if (i >= n) {
    // Nothing to escape: one copy.
    let q = w.reserve(n + 2);
    store<u8>(q, 0x22);
    memory.copy(q + 1, p, <usize>n);
    store<u8>(q + 1 + <usize>n, 0x22);
    w.len += n + 2;
  } else {
    appendQuotedSlow(w, p, n, i);
  }
}

// plainPrefix returns the length of the longest prefix of the n bytes at p
// that appendQuoted writes as it is (ASCII without '"', '\\' or control
// characters), scanning 8 bytes at a time.
// @ts-ignore: decorator
@inline
function plainPrefix(p: usize, n: i32): i32 {
  let i = 0;
  // All loads are inside the n bytes at p: i + 8 <= n.
  while (i + 8 <= n) {
    let m = strSpecial(load<u64>(p + <usize>i));
    if (m != 0) {
      i += <i32>(ctz<u64>(m) >> 3);
      break;
    }
    i += 8;
  }
  if (i + 8 > n) {
    while (i < n) {
      let c = <u32>load<u8>(p + <usize>i);
      if (c < 0x20 || c == 0x22 || c == 0x5c || c >= 0x80) break;
      i++;
    }
  }
  return i;
}

// appendQuotedSlow is appendQuoted for text whose first i bytes are plain
// and whose byte i is not.
function appendQuotedSlow(w: Writer, p: usize, n: i32, i: i32): void {
  w.byte(0x22);
  let start = 0;
  while (i < n) {
    let c = <u32>load<u8>(p + <usize>i);
    if (c >= 0x20 && c != 0x22 && c != 0x5c && c < 0x80) {
      i++;
      continue;
    }
    if (c >= 0x80) {
      let r = decodeRune(p + <usize>i, n - i);
      if (r != 0xfffd || runeSize != 1) {
        i += runeSize;
        continue;
      }
      w.raw(p + <usize>start, i - start);
      appendAscii(w, "\\ufffd");
      i++;
      start = i;
      continue;
    }
    w.raw(p + <usize>start, i - start);
    if (c == 0x22 || c == 0x5c) {
      w.byte(0x5c);
      w.byte(c);
    } else if (c == 0x0a) {
      w.byte(0x5c);
      w.byte(0x6e);
    } else if (c == 0x0d) {
      w.byte(0x5c);
      w.byte(0x72);
    } else if (c == 0x09) {
      w.byte(0x5c);
      w.byte(0x74);
    } else if (c == 0x08) {
      w.byte(0x5c);
      w.byte(0x62);
    } else if (c == 0x0c) {
      w.byte(0x5c);
      w.byte(0x66);
    } else {
      appendAscii(w, "\\u00");
      w.byte(load<u8>(HEX + <usize>(c >> 4)));
      w.byte(load<u8>(HEX + <usize>(c & 15)));
    }
    i++;
    start = i;
  }
  w.raw(p + <usize>start, n - start);
  w.byte(0x22);
}

/** appendQuoted for the bytes of b (a null b is written as null). */
export function quoteBytes(w: Writer, b: Uint8Array | null): void {
  if (b === null) appendAscii(w, "null");
  else appendQuoted(w, b.dataStart, b.byteLength);
}

/** appendQuoted for a string (encoded as UTF-8 first). */
export function quoteString(w: Writer, s: string): void {
  let n = s.length;
  let ascii = true;
  let sp = changetype<usize>(s);
  for (let i = 0; i < n; i++) {
    let c = <u32>load<u16>(sp + (<usize>i << 1));
    if (c < 0x20 || c >= 0x80 || c == 0x22 || c == 0x5c) {
      ascii = false;
      break;
    }
  }
  if (ascii) {
    w.byte(0x22);
    appendAscii(w, s);
    w.byte(0x22);
    return;
  }
  let tmp = new Writer(n * 3);
  tmp.string(s);
  appendQuoted(w, tmp.ptr, tmp.len);
  heap.free(tmp.ptr);
}

// appendAscii appends an ASCII string.
function appendAscii(w: Writer, s: string): void {
  let n = s.length;
  let p = w.reserve(n);
  let sp = changetype<usize>(s);
  for (let i = 0; i < n; i++) store<u8>(p + <usize>i, <u8>load<u16>(sp + (<usize>i << 1)));
  w.len += n;
}

// ---- numbers ----

let parsedInt: i64 = 0;

// parseIntRaw parses an integer literal (-?digits, no fraction or
// exponent) that fits in i64 into parsedInt.
function parseIntRaw(p: usize, n: i32): bool {
  let i = 0;
  let neg = false;
  if (n > 0 && load<u8>(p) == 0x2d) {
    neg = true;
    i = 1;
  }
  if (i >= n) return false;
  let u: u64 = 0;
  for (; i < n; i++) {
    let d = <u32>load<u8>(p + <usize>i) - 0x30;
    if (d >= 10) return false;
    if (u > 922337203685477580) return false; // (2^63-1) / 10
    u = u * 10 + d;
    if (u > 0x8000000000000000) return false;
  }
  if (!neg && u == 0x8000000000000000) return false;
  parsedInt = neg ? -(<i64>u) : <i64>u;
  return true;
}

// ---- float formatting ----

const DIGITS = memory.data(32);

/**
 * Appends f formatted as Python's repr(float), as the Go SDK's
 * wjson.AppendFloat: the shortest digits that read back as f (the nearest
 * to f of those); positional notation when 1e-4 <= |f| < 1e16, always
 * with a decimal point (52.0, 0.0001, 1000000000000000.0); otherwise
 * exponent notation with a sign and at least two exponent digits (1e+16,
 * 1.5e-05); -0.0 as "-0.0"; NaN and ±Infinity as nan, inf, -inf.
 */
export function appendFloat(w: Writer, f: f64): void {
  if (isNaN(f)) {
    appendAscii(w, "nan");
    return;
  }
  if (!isFinite(f)) {
    appendAscii(w, f > 0 ? "inf" : "-inf");
    return;
  }
  if (f == 0) {
    appendAscii(w, (reinterpret<u64>(f) >> 63) != 0 ? "-0.0" : "0.0");
    return;
  }
  if (f < 0) {
    w.byte(0x2d);
    f = -f;
  }
  let nd = shortestDigits(f, DIGITS);
  // The value is 0.d1d2... * 10^digitsExp; e is d1's exponent.
  let e = digitsExp - 1;
  if (e < -4 || e >= 16) {
    w.byte(load<u8>(DIGITS));
    if (nd > 1) {
      w.byte(0x2e);
      w.raw(DIGITS + 1, nd - 1);
    }
    w.byte(0x65);
    if (e < 0) {
      w.byte(0x2d);
      e = -e;
    } else {
      w.byte(0x2b);
    }
    if (e < 10) w.byte(0x30);
    w.decimal(e);
    return;
  }
  let pt = e + 1; // digits before the decimal point
  if (pt <= 0) {
    w.byte(0x30);
    w.byte(0x2e);
    for (; pt < 0; pt++) w.byte(0x30);
    w.raw(DIGITS, nd);
  } else if (pt < nd) {
    w.raw(DIGITS, pt);
    w.byte(0x2e);
    w.raw(DIGITS + <usize>pt, nd - pt);
  } else {
    w.raw(DIGITS, nd);
    for (let j = nd; j < pt; j++) w.byte(0x30);
    w.byte(0x2e);
    w.byte(0x30);
  }
}

// ---- writer ----

/**
 * JsonWriter appends JSON text to a Writer, inserting the commas between
 * members and elements itself; the caller writes a key before each object
 * member and matches begins with ends.
 *
 *     const j = new JsonWriter(out.writer());
 *     j.beginObject(); j.key("n"); j.int(1); j.endObject(); // {"n":1}
 *
 * Floats are written as appendFloat writes them, NaN and ±Infinity as null.
 */
export class JsonWriter {
  w: Writer;
  private comma: bool = false;

  constructor(w: Writer) {
    this.w = w;
  }

  /** Makes the writer append to w, as the start of a new JSON text. */
  reset(w: Writer): JsonWriter {
    this.w = w;
    this.comma = false;
    return this;
  }

  private sep(): void {
    if (this.comma) this.w.byte(0x2c);
    this.comma = true;
  }

  beginObject(): void {
    this.sep();
    this.w.byte(0x7b);
    this.comma = false;
  }

  endObject(): void {
    this.w.byte(0x7d);
    this.comma = true;
  }

  beginArray(): void {
    this.sep();
    this.w.byte(0x5b);
    this.comma = false;
  }

  endArray(): void {
    this.w.byte(0x5d);
    this.comma = true;
  }

  /** Writes an object member's name and the colon. */
  key(name: string): void {
    this.sep();
    quoteString(this.w, name);
    this.w.byte(0x3a);
    this.comma = false;
  }

  /** Writes s as a JSON string. */
  string(s: string): void {
    this.sep();
    quoteString(this.w, s);
  }

  /** Writes the bytes of b as a JSON string (null for a null b). */
  stringBytes(b: Uint8Array | null): void {
    this.sep();
    quoteBytes(this.w, b);
  }

  /** Writes raw, which must be one well-formed JSON value, as it is. */
  raw(raw: Uint8Array): void {
    this.sep();
    this.w.bytes(raw);
  }

  /** Writes a Value's text as it is. */
  value(v: Value): void {
    this.sep();
    this.w.raw(v.ptr, v.length);
  }

  int(v: i64): void {
    this.sep();
    this.w.decimal(v);
  }

  float(v: f64): void {
    this.sep();
    if (!isFinite(v)) appendAscii(this.w, "null");
    else appendFloat(this.w, v);
  }

  bool(v: bool): void {
    this.sep();
    appendAscii(this.w, v ? "true" : "false");
  }

  null(): void {
    this.sep();
    appendAscii(this.w, "null");
  }
}

// ---- config ----

/**
 * The string field name of a plugin's JSON config, as the conformance
 * plugins read their config: def when config is empty (or whitespace),
 * null, not an object, or lacks the field or has it null. A field of
 * another kind, or malformed JSON, fails the init (see fail) and returns
 * def.
 */
export function configString(config: Uint8Array, name: string, def: string): string {
  let v = configField(config, name);
  if (v === null) return def;
  if (v.kind == Kind.String) return v.toString();
  fail("config: field " + name + " must be a string, not " + kindName(v.kind));
  return def;
}

/** configString for a number field. */
export function configNumber(config: Uint8Array, name: string, def: f64): f64 {
  let v = configField(config, name);
  if (v === null) return def;
  if (v.kind == Kind.Number) return v.toFloat();
  fail("config: field " + name + " must be a number, not " + kindName(v.kind));
  return def;
}

/** configString for a bool field. */
export function configBool(config: Uint8Array, name: string, def: bool): bool {
  let v = configField(config, name);
  if (v === null) return def;
  if (v.kind == Kind.Bool) return v.toBool();
  fail("config: field " + name + " must be a bool, not " + kindName(v.kind));
  return def;
}

// configField returns the field, or null for the default (having failed
// the init on malformed JSON).
function configField(config: Uint8Array, name: string): Value | null {
  let blank = true;
  for (let i = 0; i < config.byteLength; i++) {
    let c = config[i];
    if (c != 0x20 && c != 0x09 && c != 0x0a && c != 0x0d) {
      blank = false;
      break;
    }
  }
  if (blank) return null;
  let v = get(config, name);
  if (v.error !== null) {
    fail("config: " + v.error!);
    return null;
  }
  if (v.kind == Kind.Invalid || v.kind == Kind.Null) return null;
  return v;
}
