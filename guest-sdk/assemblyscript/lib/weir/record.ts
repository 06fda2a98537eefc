// Record: one input record of a batch, decoded in place from the frame the
// host wrote (ABI §5.1).

import { ABSENT as NONE } from "./abi";

/**
 * One input record, as a plugin function sees it.
 *
 * `key` and `value` are views of the batch in the module's memory: valid
 * only until the function returns, and read-only. The SDK reuses the Record
 * and its views for the next record: copy (`value.slice()`) what must
 * outlive the call.
 */
export class Record {
  /** Event time, milliseconds since the Unix epoch. */
  timestamp: i64 = 0;
  /** The record key; null when the record has none (distinct from empty). */
  key: Uint8Array | null = null;
  /** The record value; null when absent (a tombstone). */
  value: Uint8Array | null = null;
  /** Position in the batch (or, in an aggregate, in its group). */
  index: u32 = 0;
  /** Number of headers. */
  headerCount: i32 = 0;

  /** @internal start of the encoded headers in the frame */
  hdrPtr: usize = 0;
  /** @internal the reusable views */
  keyView: Uint8Array = new Uint8Array(0);
  valueView: Uint8Array = new Uint8Array(0);

  /** The value decoded as UTF-8 ("" when absent). Allocates. */
  valueString(): string {
    let v = this.value;
    return v === null ? "" : String.UTF8.decodeUnsafe(v.dataStart, <usize>v.byteLength);
  }

  /** The key decoded as UTF-8 ("" when absent). Allocates. */
  keyString(): string {
    let k = this.key;
    return k === null ? "" : String.UTF8.decodeUnsafe(k.dataStart, <usize>k.byteLength);
  }

  /** The name of header i (0 <= i < headerCount). Allocates. */
  headerName(i: i32): string {
    let p = this.headerAt(i);
    let n = load<u32>(p);
    return String.UTF8.decodeUnsafe(p + 4, <usize>n);
  }

  /** The value of header i, as a new view; null for an absent value. */
  headerValue(i: i32): Uint8Array | null {
    let p = this.headerAt(i);
    p += 4 + <usize>load<u32>(p);
    let n = load<u32>(p);
    if (n == NONE) return null;
    return Uint8Array.wrap(inputBuffer(), <i32>(p + 4 - changetype<usize>(inputBuffer())), <i32>n);
  }

  /**
   * The value of the last header called name, as a new view; null when
   * there is none (or its value is absent).
   */
  header(name: string): Uint8Array | null {
    let found: i32 = -1;
    for (let i = 0; i < this.headerCount; i++) {
      let p = this.headerAt(i);
      if (utf8Equals(p + 4, <i32>load<u32>(p), name)) found = i;
    }
    return found < 0 ? null : this.headerValue(found);
  }

  private headerAt(i: i32): usize {
    if (<u32>i >= <u32>this.headerCount) abort("weir: header index out of range");
    let p = this.hdrPtr;
    for (let j = 0; j < i; j++) {
      p += 4 + <usize>load<u32>(p);
      let n = load<u32>(p);
      p += 4 + (n == NONE ? 0 : <usize>n);
    }
    return p;
  }
}

/** Whether the n UTF-8 bytes at p equal the string s. */
export function utf8Equals(p: usize, n: i32, s: string): bool {
  let sl = s.length;
  let sp = changetype<usize>(s);
  // Compare while both are ASCII, where a byte is a code unit.
  let m = n < sl ? n : sl;
  let i = 0;
  for (; i < m; i++) {
    let c = <u32>load<u8>(p + <usize>i);
    if (c != <u32>load<u16>(sp + (<usize>i << 1)) || c >= 0x80) break;
  }
  if (i == n && i == sl) return true;
  // The first i bytes match. If either side is ASCII (or ends) at i, the
  // encodings differ at byte i.
  if (i == n || i == sl) return false;
  if (load<u8>(p + <usize>i) < 0x80 || load<u16>(sp + (<usize>i << 1)) < 0x80) return false;
  let bl = String.UTF8.byteLength(s);
  if (bl != n) return false;
  let tmp = heap.alloc(<usize>bl + 1);
  String.UTF8.encodeUnsafe(sp, sl, tmp, false, String.UTF8.ErrorMode.REPLACE);
  let eq = memory.compare(tmp, p, <usize>n) == 0;
  heap.free(tmp);
  return eq;
}

// The region weir_alloc hands out (ABI §3): a managed ArrayBuffer, so that
// record views can point into it.
let input: ArrayBuffer = new ArrayBuffer(0);

/** @internal */
export function inputBuffer(): ArrayBuffer {
  return input;
}

/** @internal weir_alloc: a region of at least size bytes, or 0. */
export function allocInput(size: u32): usize {
  if (size > (1 << 30)) return 0;
  if (<u32>input.byteLength < size) {
    let n: u32 = 4096;
    while (n < size) n <<= 1;
    input = new ArrayBuffer(<i32>n);
  }
  return changetype<usize>(input);
}

/** @internal checks that ptr+len lies in the input region. */
export function checkInput(ptr: usize, len: u32): void {
  if (len == 0) return;
  let base = changetype<usize>(input);
  if (ptr < base || <u64>(ptr - base) + <u64>len > <u64>input.byteLength) {
    abort("weir: call input outside the weir_alloc region");
  }
}

/** @internal points view at n bytes at p, inside the input region. */
// @ts-ignore: decorator
@inline
export function repoint(view: Uint8Array, p: usize, n: i32): void {
  let v = changetype<usize>(view);
  let buf = changetype<usize>(input);
  if (load<usize>(v, offsetof<Uint8Array>("buffer")) != buf) {
    store<usize>(v, buf, offsetof<Uint8Array>("buffer"));
    __link(v, buf, false);
  }
  store<usize>(v, p, offsetof<Uint8Array>("dataStart"));
  store<i32>(v, n, offsetof<Uint8Array>("byteLength"));
}

/**
 * @internal Decodes the record at p (which must not pass end) into r,
 * and returns the address after it. Inlined: it runs once per record.
 */
// @ts-ignore: decorator
@inline
export function decodeRecord(r: Record, p: usize, end: usize, index: u32): usize {
  if (p + 12 > end) badFrame();
  r.index = index;
  r.timestamp = load<i64>(p);
  let n = load<u32>(p, 8);
  p += 12;
  if (n == NONE) {
    r.key = null;
  } else {
    if (<u64>p + <u64>n > <u64>end) badFrame();
    repoint(r.keyView, p, <i32>n);
    r.key = r.keyView;
    p += <usize>n;
  }
  if (p + 4 > end) badFrame();
  n = load<u32>(p);
  p += 4;
  if (n == NONE) {
    r.value = null;
  } else {
    if (<u64>p + <u64>n > <u64>end) badFrame();
    repoint(r.valueView, p, <i32>n);
    r.value = r.valueView;
    p += <usize>n;
  }
  if (p + 4 > end) badFrame();
  let h = load<u32>(p);
  p += 4;
  r.headerCount = <i32>h;
  r.hdrPtr = p;
  for (let i: u32 = 0; i < h; i++) {
    if (p + 4 > end) badFrame();
    let m = load<u32>(p);
    if (<u64>p + 8 + <u64>m > <u64>end) badFrame();
    p += 4 + <usize>m;
    m = load<u32>(p);
    p += 4;
    if (m != NONE) {
      if (<u64>p + <u64>m > <u64>end) badFrame();
      p += <usize>m;
    }
  }
  return p;
}

/** @internal */
export function badFrame(): void {
  abort("weir: malformed input frame");
}
