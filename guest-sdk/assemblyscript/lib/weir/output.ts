// Output and Emitter: how map and flat_map functions answer (ABI §5.2).

import { Record } from "./record";
import { Writer } from "./writer";
import { frame, fail, writeKeep, countEntry } from "./core";
import { ENTRY_RECORD, FLAG_KEY, FLAG_TIMESTAMP, FLAG_HEADERS, ABSENT } from "./abi";

// @ts-ignore: decorator
@inline const OPEN: u8 = 0; // accepting fields
// @ts-ignore: decorator
@inline const VALUE: u8 = 1; // value being written
// @ts-ignore: decorator
@inline const DONE: u8 = 2; // finished

// A Writer for misused Outputs to write into, so that a misuse fails the
// record without corrupting the frame.
const junk = new Writer();

/**
 * Output builds the one record a map function produces, or one record of
 * a flat_map (Emitter.begin). Fields left unset are inherited from the
 * input record; an Output on which nothing is set keeps the input record
 * unchanged.
 *
 * Set the key, timestamp and headers first, then the value, with
 * setValue, setString or writer(): the value finishes the record. A field
 * set after the value fails the record. A record with fields set but no
 * value gets a copy of the input's value.
 *
 * The Output belongs to the SDK and is reused: valid only during the call
 * it was given to (for Emitter.begin, until the next Emitter call).
 */
export class Output {
  /** @internal */ input: Record | null = null;
  /** @internal */ state: u8 = 2; // DONE
  /** @internal */ flags: u8 = 0;
  /** @internal */ key: Uint8Array | null = null;
  /** @internal */ ts: i64 = 0;
  /** @internal */ hdr: Writer = new Writer();
  /** @internal */ nhdr: u32 = 0;
  /** @internal */ lenPos: i32 = 0;
  /** @internal */ valueNull: bool = false;

  private open(what: string): bool {
    if (this.state == OPEN) return true;
    fail("weir: Output." + what + (this.state == VALUE ? " called after the value was set" : " called after its record was finished"));
    return false;
  }

  /** Sets the record's key; null means no key. Not copied until the value is set: keep key unchanged until then. */
  setKey(key: Uint8Array | null): void {
    if (!this.open("setKey")) return;
    this.flags |= FLAG_KEY;
    this.key = key;
  }

  /** Sets the record's key to the UTF-8 bytes of key. */
  setKeyString(key: string): void {
    this.setKey(Uint8Array.wrap(String.UTF8.encode(key)));
  }

  /** Sets the record's event time, in milliseconds since the Unix epoch. */
  setTimestamp(ms: i64): void {
    if (!this.open("setTimestamp")) return;
    this.flags |= FLAG_TIMESTAMP;
    this.ts = ms;
  }

  /**
   * Appends a header (value copied; null for an absent value). Once a
   * header is added, or clearHeaders is called, the record's headers are
   * exactly those added, none inherited.
   */
  addHeader(name: string, value: Uint8Array | null): void {
    if (!this.open("addHeader")) return;
    if ((this.flags & FLAG_HEADERS) == 0) {
      this.flags |= FLAG_HEADERS;
      this.hdr.reset();
      this.nhdr = 0;
    }
    let h = this.hdr;
    let pos = h.len;
    h.u32(0);
    h.string(name);
    h.setU32At(pos, <u32>(h.len - pos - 4));
    if (value === null) {
      h.u32(ABSENT);
    } else {
      h.u32(<u32>value.byteLength);
      h.bytes(value);
    }
    this.nhdr++;
  }

  /** Gives the record no headers (until addHeader adds some). */
  clearHeaders(): void {
    if (!this.open("clearHeaders")) return;
    this.flags |= FLAG_HEADERS;
    this.hdr.reset();
    this.nhdr = 0;
  }

  /**
   * Starts the value and returns the Writer to append it to: the output
   * frame itself, so the value is written in place, never copied. Append
   * only; the value ends when the function returns (or, for a flat_map,
   * at the next Emitter call). Calling writer() again returns the same
   * Writer, to go on appending.
   */
  writer(): Writer {
    if (this.state == VALUE && !this.valueNull) return frame;
    if (!this.open("writer")) return junk;
    this.writeHead();
    return frame;
  }

  /** Sets the value to a copy of v; null means an absent value. Finishes the record. */
  setValue(v: Uint8Array | null): void {
    if (!this.open("setValue")) return;
    this.writeHead();
    if (v === null) {
      this.valueNull = true;
    } else {
      frame.bytes(v);
    }
  }

  /** Sets the value to the UTF-8 bytes of s. Finishes the record. */
  setString(s: string): void {
    if (!this.open("setString")) return;
    this.writeHead();
    frame.string(s);
  }

  /** Keeps the input record unchanged (the default when nothing is set). */
  keep(): void {
    if (this.state == OPEN && this.flags != 0) {
      fail("weir: Output.keep called after fields were set");
    }
  }

  // writeHead writes the entry up to the value's length, which finish patches.
  private writeHead(): void {
    let f = frame;
    let r = this.input!;
    if (this.flags == 0) {
      // Nothing set but the value (the common case): one reservation for
      // the kind, index, flags and the length that finishOutput patches.
      let p = f.reserve(10);
      store<u8>(p, ENTRY_RECORD);
      store<u32>(p, r.index, 1);
      store<u8>(p, 0, 5);
      store<u32>(p, 0, 6);
      this.lenPos = f.len + 6;
      f.len += 10;
      this.state = VALUE;
      this.valueNull = false;
      return;
    }
    f.byte(ENTRY_RECORD);
    f.u32(r.index);
    f.byte(this.flags);
    if (this.flags & FLAG_KEY) {
      let k = this.key;
      if (k === null) {
        f.u32(ABSENT);
      } else {
        f.u32(<u32>k.byteLength);
        f.bytes(k);
      }
    }
    if (this.flags & FLAG_TIMESTAMP) f.i64(this.ts);
    if (this.flags & FLAG_HEADERS) {
      f.u32(this.nhdr);
      f.raw(this.hdr.ptr, this.hdr.len);
    }
    this.lenPos = f.len;
    f.u32(0);
    this.state = VALUE;
    this.valueNull = false;
  }
}

/** @internal readies o for a record of input r */
// @ts-ignore: decorator
@inline
export function beginOutput(o: Output, r: Record): void {
  o.input = r;
  o.state = OPEN;
  o.flags = 0;
  o.key = null;
}

/** @internal writes o's entry, if it is not written yet */
export function finishOutput(o: Output): void {
  let s = o.state;
  if (s == OPEN) {
    if (o.flags == 0) {
      writeKeep(o.input!.index);
      o.state = DONE;
      return;
    }
    // Fields but no value: the record gets the input's value.
    let v = o.input!.value;
    o.setValue(v);
    s = o.state;
  }
  if (s == VALUE) {
    let len = o.valueNull ? ABSENT : <u32>(frame.len - o.lenPos - 4);
    frame.setU32At(o.lenPos, len);
    countEntry();
  }
  o.state = DONE;
  o.key = null;
}

/**
 * Emitter receives the records a flat_map function emits for one input,
 * in order. It belongs to the SDK and is reused: valid only during the
 * call it was given to.
 */
export class Emitter {
  /** @internal */ input: Record | null = null;
  /** @internal */ out: Output = new Output();
  /** @internal */ pending: bool = false;

  /** @internal */
  begin(r: Record): void {
    this.input = r;
    this.pending = false;
  }

  /** @internal finishes the record begun by begin(), if any */
  flush(): void {
    if (this.pending) {
      this.pending = false;
      finishOutput(this.out);
    }
  }

  /** Emits the input record unchanged. */
  keep(): void {
    this.flush();
    writeKeep(this.input!.index);
  }

  /** Emits a record with value v (copied; null for absent), inheriting the input's key, timestamp and headers. */
  emit(v: Uint8Array | null): void {
    this.flush();
    let o = this.out;
    beginOutput(o, this.input!);
    o.setValue(v);
    finishOutput(o);
  }

  /** Emits a record with value bytes [start, end) of v, inheriting the rest from the input. */
  emitSlice(v: Uint8Array, start: i32, end: i32): void {
    this.flush();
    let o = this.out;
    beginOutput(o, this.input!);
    o.writer().slice(v, start, end);
    finishOutput(o);
  }

  /** Emits a record whose value is the UTF-8 bytes of s, inheriting the rest from the input. */
  emitString(s: string): void {
    this.flush();
    let o = this.out;
    beginOutput(o, this.input!);
    o.setString(s);
    finishOutput(o);
  }

  /**
   * Emits a record whose value is appended, in place, to the returned
   * Writer, inheriting the rest from the input. The record ends at the
   * next Emitter call or when the function returns.
   */
  writer(): Writer {
    return this.begin_().writer();
  }

  /**
   * Starts a record whose key, timestamp, headers and value are set through
   * the returned Output, as for a map function. It is emitted at the next
   * Emitter call or when the function returns.
   */
  beginRecord(): Output {
    return this.begin_();
  }

  private begin_(): Output {
    this.flush();
    let o = this.out;
    beginOutput(o, this.input!);
    this.pending = true;
    return o;
  }
}
