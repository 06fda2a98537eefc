// Writer: a growable byte buffer in unmanaged memory, the one way the SDK
// builds bytes: output frames, values built in place, accumulators, state
// keys, log lines.

/**
 * A growable byte buffer. Its bytes live in unmanaged memory (heap.alloc),
 * so the garbage collector never scans or moves them; `ptr` changes when
 * the buffer grows. Appends never allocate managed objects.
 *
 * The Writer a plugin function is given (Output.writer(), Emitter.writer(),
 * ResultOutput.writer(), the encoder of an Aggregate) appends straight into
 * the output frame the host reads, so a value written there is never
 * copied. Such a Writer is valid only until the function returns; write
 * only by appending (do not change `len` or write below it).
 */
export class Writer {
  /** Start of the bytes; 0 until the first append. */
  ptr: usize = 0;
  /** Number of bytes written. */
  len: i32 = 0;
  /** Capacity at ptr. */
  cap: i32 = 0;

  constructor(capacity: i32 = 0) {
    if (capacity > 0) {
      this.ptr = heap.alloc(<usize>capacity);
      this.cap = capacity;
    }
  }

  /** Forgets the contents, keeping the memory. */
  @inline reset(): void {
    this.len = 0;
  }

  /** Makes room for n more bytes and returns where they go. */
  @inline reserve(n: i32): usize {
    let need = this.len + n;
    if (need > this.cap) this.grow(need);
    return this.ptr + <usize>this.len;
  }

  /** Grows the capacity to at least need bytes. */
  grow(need: i32): void {
    if (need < 0) abort("weir: Writer larger than 2 GiB");
    let c = this.cap < 256 ? 256 : this.cap;
    while (c < need) c <<= 1;
    this.ptr = this.ptr ? heap.realloc(this.ptr, <usize>c) : heap.alloc(<usize>c);
    this.cap = c;
  }

  /** Appends one byte. */
  @inline byte(b: u32): void {
    let p = this.reserve(1);
    store<u8>(p, <u8>b);
    this.len += 1;
  }

  /** Appends v as 4 bytes little-endian. */
  @inline u32(v: u32): void {
    let p = this.reserve(4);
    store<u32>(p, v);
    this.len += 4;
  }

  /** Appends v as 8 bytes little-endian (two's complement). */
  @inline i64(v: i64): void {
    let p = this.reserve(8);
    store<i64>(p, v);
    this.len += 8;
  }

  /** Appends v as 8 bytes little-endian. */
  @inline u64(v: u64): void {
    let p = this.reserve(8);
    store<u64>(p, v);
    this.len += 8;
  }

  /** Appends the IEEE-754 binary64 bits of v, 8 bytes little-endian. */
  @inline f64(v: f64): void {
    let p = this.reserve(8);
    store<f64>(p, v);
    this.len += 8;
  }

  /** Appends n bytes from src. */
  @inline raw(src: usize, n: i32): void {
    if (n <= 0) return;
    let p = this.reserve(n);
    memory.copy(p, src, <usize>n);
    this.len += n;
  }

  /** Appends the bytes of b (nothing for null). */
  @inline bytes(b: Uint8Array | null): void {
    if (b !== null) this.raw(b.dataStart, b.byteLength);
  }

  /** Appends the bytes of b from start to end (byte offsets). */
  @inline slice(b: Uint8Array, start: i32, end: i32): void {
    this.raw(b.dataStart + <usize>start, end - start);
  }

  /** Appends s encoded as UTF-8 (a lone surrogate becomes U+FFFD). */
  string(s: string): void {
    let n = s.length;
    if (n == 0) return;
    // At most 3 bytes per UTF-16 code unit.
    let p = this.reserve(n * 3);
    this.len += <i32>String.UTF8.encodeUnsafe(changetype<usize>(s), n, p, false, String.UTF8.ErrorMode.REPLACE);
  }

  /** Appends b as a u32 little-endian length and its bytes, as the ABI frames a byte string. */
  lengthPrefixed(b: Uint8Array): void {
    this.u32(<u32>b.byteLength);
    this.bytes(b);
  }

  /** Appends v in decimal. */
  decimal(v: i64): void {
    let p = this.reserve(20);
    this.len += writeDecimal(p, v);
  }

  /** Overwrites the 4 bytes at offset pos with v, little-endian. */
  @inline setU32At(pos: i32, v: u32): void {
    store<u32>(this.ptr + <usize>pos, v);
  }

  /** The byte at offset i. */
  @inline at(i: i32): u8 {
    return load<u8>(this.ptr + <usize>i);
  }

  /** A copy of the bytes, as a new Uint8Array. */
  toUint8Array(): Uint8Array {
    let a = new Uint8Array(this.len);
    if (this.len > 0) memory.copy(a.dataStart, this.ptr, <usize>this.len);
    return a;
  }

  /** The bytes decoded as UTF-8 into a string. */
  toString(): string {
    return String.UTF8.decodeUnsafe(this.ptr, <usize>this.len);
  }
}

/** Writes v in decimal at p (room for 20 bytes) and returns the length. */
export function writeDecimal(p: usize, v: i64): i32 {
  let n: i32 = 0;
  let u: u64 = <u64>v;
  if (v < 0) {
    store<u8>(p, 0x2d); // '-'
    p++;
    n = 1;
    u = <u64>(-v); // -i64.MIN_VALUE wraps to 2^63 as u64: right
  }
  let digits: i32 = 1;
  for (let t = u; t >= 10; t /= 10) digits++;
  let q = p + <usize>digits;
  do {
    q--;
    store<u8>(q, <u8>(0x30 + <u32>(u % 10)));
    u /= 10;
  } while (u != 0);
  return n + digits;
}
