// Exact conversions between decimal text and f64, for the JSON reader and
// writer: parseDecimal, the f64 nearest a decimal number (ties to even),
// as strconv.ParseFloat and Python's float() read it; and shortestDigits,
// the shortest digits that read back as an f64, the nearest of them to it,
// as strconv's shortest formatting and Python's repr write it. Both work
// on big integers in static memory: nothing is allocated. The module is
// not reentrant (the host calls a module from one thread).

// A big integer: an i32 count of limbs, then up to CAP u32 limbs, least
// significant first. CAP holds the largest numbers the conversions make
// (about 3800 bits: a decimal of MAX_DIGITS digits scaled to the smallest
// double).
// @ts-ignore: decorator
@inline const CAP = 200;
// @ts-ignore: decorator
@inline const BYTES = (CAP + 1) << 2;

const B0 = memory.data(BYTES, 4);
const B1 = memory.data(BYTES, 4);
const B2 = memory.data(BYTES, 4);
const B3 = memory.data(BYTES, 4);
const B4 = memory.data(BYTES, 4);
const B5 = memory.data(BYTES, 4);

// @ts-ignore: decorator
@inline function count(a: usize): i32 {
  return load<i32>(a);
}

// @ts-ignore: decorator
@inline function setCount(a: usize, n: i32): void {
  store<i32>(a, n);
}

// @ts-ignore: decorator
@inline function limb(a: usize, i: i32): u32 {
  return load<u32>(a + 4 + (<usize>i << 2));
}

// @ts-ignore: decorator
@inline function setLimb(a: usize, i: i32, v: u32): void {
  store<u32>(a + 4 + (<usize>i << 2), v);
}

function limbAt(a: usize, i: i32): u64 {
  return i >= 0 && i < count(a) ? <u64>limb(a, i) : 0;
}

function bigSet(a: usize, v: u64): void {
  let n = 0;
  while (v != 0) {
    setLimb(a, n++, <u32>v);
    v >>= 32;
  }
  setCount(a, n);
}

function bigCopy(dst: usize, src: usize): void {
  memory.copy(dst, src, (<usize>count(src) + 1) << 2);
}

// bigMulAdd sets a to a * m + c.
function bigMulAdd(a: usize, m: u32, c: u32): void {
  let n = count(a);
  let carry = <u64>c;
  for (let i = 0; i < n; i++) {
    let t = <u64>limb(a, i) * <u64>m + carry;
    setLimb(a, i, <u32>t);
    carry = t >> 32;
  }
  if (carry != 0) {
    if (n >= CAP) abort("weir: decimal conversion out of room");
    setLimb(a, n, <u32>carry);
    setCount(a, n + 1);
  }
}

const POW5 = memory.data<u32>([1, 5, 25, 125, 625, 3125, 15625, 78125, 390625, 1953125, 9765625, 48828125, 244140625, 1220703125]);

// bigMulPow5 sets a to a * 5^k.
function bigMulPow5(a: usize, k: i32): void {
  while (k >= 13) {
    bigMulAdd(a, 1220703125, 0);
    k -= 13;
  }
  if (k > 0) bigMulAdd(a, load<u32>(POW5 + (<usize>k << 2)), 0);
}

// bigShl sets a to a * 2^k.
function bigShl(a: usize, k: i32): void {
  let n = count(a);
  if (n == 0 || k == 0) return;
  let w = k >> 5;
  let b = <u32>(k & 31);
  if (n + w + 1 > CAP) abort("weir: decimal conversion out of room");
  if (b == 0) {
    for (let i = n - 1; i >= 0; i--) setLimb(a, i + w, limb(a, i));
  } else {
    let top = limb(a, n - 1) >> (32 - b);
    for (let i = n - 1; i > 0; i--) setLimb(a, i + w, (limb(a, i) << b) | (limb(a, i - 1) >> (32 - b)));
    setLimb(a, w, limb(a, 0) << b);
    setLimb(a, n + w, top);
    if (top != 0) n++;
  }
  for (let i = 0; i < w; i++) setLimb(a, i, 0);
  setCount(a, n + w);
}

function bigCmp(a: usize, b: usize): i32 {
  let n = count(a);
  let m = count(b);
  if (n != m) return n < m ? -1 : 1;
  for (let i = n - 1; i >= 0; i--) {
    let x = limb(a, i);
    let y = limb(b, i);
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

// bigAdd sets a to a + b.
function bigAdd(a: usize, b: usize): void {
  let n = count(a);
  let m = count(b);
  let len = n > m ? n : m;
  let carry: u64 = 0;
  for (let i = 0; i < len; i++) {
    let t = limbAt(a, i) + limbAt(b, i) + carry;
    setLimb(a, i, <u32>t);
    carry = t >> 32;
  }
  if (carry != 0) {
    if (len >= CAP) abort("weir: decimal conversion out of room");
    setLimb(a, len++, 1);
  }
  setCount(a, len);
}

// bigSub sets a to a - b, for a >= b.
function bigSub(a: usize, b: usize): void {
  let n = count(a);
  let m = count(b);
  let borrow: i64 = 0;
  for (let i = 0; i < n; i++) {
    let t = <i64>limb(a, i) - <i64>(i < m ? limb(b, i) : 0) - borrow;
    borrow = 0;
    if (t < 0) {
      t += <i64>1 << 32;
      borrow = 1;
    }
    setLimb(a, i, <u32>t);
  }
  while (n > 0 && limb(a, n - 1) == 0) n--;
  setCount(a, n);
}

// bigMulU64 sets a to a * v, using t as scratch.
function bigMulU64(a: usize, v: u64, t: usize): void {
  bigCopy(t, a);
  bigMulAdd(a, <u32>v, 0);
  if ((v >> 32) != 0) {
    bigMulAdd(t, <u32>(v >> 32), 0);
    bigShl(t, 32);
    bigAdd(a, t);
  }
}

function bigBitLen(a: usize): i32 {
  let n = count(a);
  if (n == 0) return 0;
  return (n << 5) - <i32>clz<u32>(limb(a, n - 1));
}

// bigBits64 returns the 64 bits of a from bit lo up (below bit 0, zeros).
function bigBits64(a: usize, lo: i32): u64 {
  if (lo < 0) return lo <= -64 ? 0 : bigBits64(a, 0) << <u64>(-lo);
  let w = lo >> 5;
  let s = <u64>(lo & 31);
  let v = limbAt(a, w) | (limbAt(a, w + 1) << 32);
  if (s == 0) return v;
  return (v >> s) | (limbAt(a, w + 2) << (64 - s));
}

// bigAnyBelow reports whether a has a bit set below bit.
function bigAnyBelow(a: usize, bit: i32): bool {
  if (bit <= 0) return false;
  let w = bit >> 5;
  for (let i = 0; i < w && i < count(a); i++) if (limb(a, i) != 0) return true;
  let s = bit & 31;
  return s != 0 && (limbAt(a, w) & ((<u64>1 << <u64>s) - 1)) != 0;
}

// ---- decimal to f64 ----

// The significant digits a decimal keeps: enough that no halfway point
// between two doubles (at most 767 significant digits) lies between the
// number and its truncation, which parseDecimal marks with a final 1.
// @ts-ignore: decorator
@inline const MAX_DIGITS = 800;
const DIGITS = memory.data(MAX_DIGITS + 1);

// @ts-ignore: decorator
@inline const MANTISSA: u64 = (<u64>1 << 52) - 1;
// @ts-ignore: decorator
@inline const HIDDEN: u64 = <u64>1 << 52;
// @ts-ignore: decorator
@inline const INF_BITS: u64 = 0x7ff0000000000000;

// The powers of ten that are exact doubles.
const POW10 = memory.data<f64>([1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
  1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22]);

/**
 * The f64 nearest the JSON number literal of n bytes at p (which must be
 * well-formed), ties to even; ±Infinity beyond the largest double, ±0
 * below half the smallest.
 */
export function parseDecimal(p: usize, n: i32): f64 {
  let i = 0;
  let neg = false;
  if (n > 0 && load<u8>(p) == 0x2d) {
    neg = true;
    i = 1;
  }
  // The value is the integer of DIGITS[0..nd) times 10^exp.
  let nd = 0;
  let exp: i64 = 0;
  let sticky = false;
  for (; i < n; i++) {
    let d = <u32>load<u8>(p + <usize>i) - 0x30;
    if (d >= 10) break;
    if (nd == 0 && d == 0) continue;
    if (nd < MAX_DIGITS) {
      store<u8>(DIGITS + <usize>(nd++), <u8>d);
    } else {
      exp++;
      if (d != 0) sticky = true;
    }
  }
  if (i < n && load<u8>(p + <usize>i) == 0x2e) {
    for (i++; i < n; i++) {
      let d = <u32>load<u8>(p + <usize>i) - 0x30;
      if (d >= 10) break;
      if (nd == 0 && d == 0) {
        exp--;
      } else if (nd < MAX_DIGITS) {
        store<u8>(DIGITS + <usize>(nd++), <u8>d);
        exp--;
      } else if (d != 0) {
        sticky = true;
      }
    }
  }
  if (i < n && (<u32>load<u8>(p + <usize>i) | 0x20) == 0x65) {
    i++;
    let eneg = false;
    if (i < n) {
      let s = load<u8>(p + <usize>i);
      if (s == 0x2d || s == 0x2b) {
        eneg = s == 0x2d;
        i++;
      }
    }
    let e: i64 = 0;
    for (; i < n; i++) {
      let d = <u32>load<u8>(p + <usize>i) - 0x30;
      if (d >= 10) break;
      if (e < 1000000000) e = e * 10 + <i64>d;
    }
    exp += eneg ? -e : e;
  }
  if (nd == 0) return neg ? -0.0 : 0.0;
  if (sticky) {
    store<u8>(DIGITS + <usize>(nd++), 1);
    exp--;
  }
  while (load<u8>(DIGITS + <usize>nd - 1) == 0) {
    nd--;
    exp++;
  }
  let f = magnitude(nd, exp);
  return neg ? -f : f;
}

// magnitude returns the f64 nearest the integer of DIGITS[0..nd) (which
// starts and ends with a digit other than 0) times 10^exp.
function magnitude(nd: i32, exp: i64): f64 {
  // The value is at least 10^(nd + exp - 1) and below 10^(nd + exp).
  if (<i64>nd + exp > 310) return Infinity;
  if (<i64>nd + exp < -324) return 0;
  let e = <i32>exp;
  if (nd <= 19 && e >= -22 && e <= 22) {
    let m: u64 = 0;
    for (let i = 0; i < nd; i++) m = m * 10 + <u64>load<u8>(DIGITS + <usize>i);
    if (m <= HIDDEN << 1) {
      // Both the digits and the power of ten are exact doubles: one
      // correctly rounded operation (Clinger's fast path).
      let f = <f64>m;
      return e < 0 ? f / load<f64>(POW10 + (<usize>(-e) << 3)) : f * load<f64>(POW10 + (<usize>e << 3));
    }
  }
  let a = B0;
  bigSet(a, 0);
  let i = 0;
  while (i < nd) {
    let chunk: u32 = 0;
    let scale: u32 = 1;
    for (let j = 0; j < 9 && i < nd; j++, i++) {
      chunk = chunk * 10 + <u32>load<u8>(DIGITS + <usize>i);
      scale *= 10;
    }
    bigMulAdd(a, scale, chunk);
  }
  if (e >= 0) {
    bigMulPow5(a, e);
    bigShl(a, e);
    return roundBig(a);
  }
  // The value is a / b, b = 10^-e: estimate it from the leading bits, then
  // step to the nearest double, comparing exactly with the halfway points
  // on either side.
  let b = B1;
  bigSet(b, 1);
  bigMulPow5(b, -e);
  bigShl(b, -e);
  let la = bigBitLen(a);
  let lb = bigBitLen(b);
  let est = scale2(<f64>bigBits64(a, la - 64) / <f64>bigBits64(b, lb - 64), la - lb);
  let u = reinterpret<u64>(est);
  for (let step = 0; step < 64; step++) {
    if (u < INF_BITS) {
      let c = cmpHalfway(a, b, u);
      if (c > 0 || (c == 0 && (u & 1) != 0)) {
        u++;
        continue;
      }
    }
    if (u > 0) {
      let c = cmpHalfway(a, b, u - 1);
      if (c < 0 || (c == 0 && (u & 1) != 0)) {
        u--;
        continue;
      }
    }
    break;
  }
  return reinterpret<f64>(u);
}

// roundBig returns the f64 nearest the integer a, ties to even.
function roundBig(a: usize): f64 {
  let l = bigBitLen(a);
  if (l <= 53) return <f64>bigBits64(a, 0);
  if (l > 1024) return Infinity;
  let top = bigBits64(a, l - 64);
  let m = top >> 11;
  let rest = top & 0x7ff;
  if (rest > 0x400 || (rest == 0x400 && (bigAnyBelow(a, l - 64) || (m & 1) != 0))) {
    m++;
    if (m == HIDDEN << 1) {
      m >>= 1;
      l++;
      if (l > 1024) return Infinity;
    }
  }
  return reinterpret<f64>((<u64>(l + 1022) << 52) | (m & MANTISSA));
}

// scale2 returns x * 2^k.
function scale2(x: f64, k: i32): f64 {
  while (k > 1000) {
    x *= reinterpret<f64>(<u64>(1000 + 1023) << 52);
    k -= 1000;
  }
  while (k < -1000) {
    x *= reinterpret<f64>(<u64>(-1000 + 1023) << 52);
    k += 1000;
  }
  return x * reinterpret<f64>(<u64>(k + 1023) << 52);
}

// cmpHalfway compares a / b with the point halfway between the doubles of
// bits u and u + 1.
function cmpHalfway(a: usize, b: usize, u: u64): i32 {
  let e1 = <i32>(u >> 52);
  let m1 = e1 == 0 ? u & MANTISSA : (u & MANTISSA) | HIDDEN;
  e1 = e1 == 0 ? -1074 : e1 - 1075;
  let v = u + 1;
  let e2 = <i32>(v >> 52);
  let m2 = e2 == 0 ? v & MANTISSA : (v & MANTISSA) | HIDDEN;
  e2 = e2 == 0 ? -1074 : e2 - 1075;
  // The halfway point is (m1 + m2 * 2^(e2 - e1)) * 2^(e1 - 1).
  let s = m1 + (m2 << <u64>(e2 - e1));
  let t = e1 - 1;
  let l = B2;
  let r = B3;
  bigCopy(l, a);
  bigCopy(r, b);
  bigMulU64(r, s, B4);
  if (t >= 0) bigShl(r, t);
  else bigShl(l, -t);
  return bigCmp(l, r);
}

// ---- f64 to the shortest decimal ----

/** The exponent of shortestDigits's digits: the number is 0.d1d2... * 10^digitsExp. */
export let digitsExp: i32 = 0;

/**
 * Writes to out (room for 17 bytes) the ASCII digits of the shortest
 * decimal that reads back as f (positive and finite), the nearest to f of
 * those (ties to an even digit), and returns how many; see digitsExp.
 * Burger and Dybvig's free-format algorithm, on big integers.
 */
export function shortestDigits(f: f64, out: usize): i32 {
  let bits = reinterpret<u64>(f);
  let be = <i32>(bits >> 52);
  let m = be == 0 ? bits & MANTISSA : (bits & MANTISSA) | HIDDEN;
  let e = be == 0 ? -1074 : be - 1075;
  if (e <= 0 && e > -53 && (m & ((<u64>1 << <u64>(-e)) - 1)) == 0) {
    // An integer below 2^53: no other number of as few digits is
    // nearer than a neighbouring double, so its digits are the answer.
    return integerDigits(m >> <u64>(-e), out);
  }
  let even = (m & 1) == 0;
  // The value is r / s, and the doubles next to it are (r - mm) / s and
  // (r + mp) / s: halfway to them is where other numbers stop reading
  // back as f. Each is 5^a * 2^b; the powers of two they share are left
  // out, which keeps them small.
  let asym = m == HIDDEN && e > -1074 ? 1 : 0; // the gap below is half the gap above
  // k estimates the decimal exponent, at most one too small.
  let log2 = 63 - <i32>clz<u64>(m) + e;
  let k = <i32>Math.ceil(<f64>log2 * 0.30102999566398114 - 1e-10);
  // r = m * 2^(e+1+asym), s = 2^(1+asym), mp = 2^(e+asym), mm = 2^e,
  // then s times 10^k, or the others times 10^-k.
  let re = e + 1 + asym;
  let se = 1 + asym;
  let pe = e + asym;
  let me = e;
  let s5 = 0;
  let r5 = 0;
  if (k >= 0) {
    s5 = k;
    se += k;
  } else {
    r5 = -k;
    re -= k;
    pe -= k;
    me -= k;
  }
  let low = me < se ? me : se;
  let r = B0;
  let s = B1;
  let mp = B2;
  let mm = B3;
  let t = B4;
  bigSet(r, m);
  bigMulPow5(r, r5);
  bigShl(r, re - low);
  bigSet(s, 1);
  bigMulPow5(s, s5);
  bigShl(s, se - low);
  bigSet(mp, 1);
  bigMulPow5(mp, r5);
  bigShl(mp, pe - low);
  bigSet(mm, 1);
  bigMulPow5(mm, r5);
  bigShl(mm, me - low);
  if (cmpSum(r, mp, s, t) >= (even ? 0 : 1)) {
    bigMulAdd(s, 10, 0);
    k++;
  }
  digitsExp = k;
  if (bigBitLen(s) <= 60) {
    // Everything fits in a u64 as the digits are made: r and mp stay
    // below s before each step multiplies them by 10.
    return digitsU64(bigBits64(r, 0), bigBits64(s, 0), bigBits64(mp, 0), bigBits64(mm, 0), even, out);
  }
  let nd = 0;
  while (true) {
    bigMulAdd(r, 10, 0);
    bigMulAdd(mp, 10, 0);
    bigMulAdd(mm, 10, 0);
    let d: u32 = 0;
    while (bigCmp(r, s) >= 0) {
      bigSub(r, s);
      d++;
    }
    let c1 = bigCmp(r, mm);
    let lower = even ? c1 <= 0 : c1 < 0; // the digits so far read back, rounded down
    let upper = cmpSum(r, mp, s, t) >= (even ? 0 : 1); // they do, rounded up
    if (!lower && !upper) {
      store<u8>(out + <usize>(nd++), <u8>(0x30 + d));
      continue;
    }
    if (lower && upper) {
      bigCopy(t, r);
      bigShl(t, 1);
      let c = bigCmp(t, s);
      if (c > 0 || (c == 0 && (d & 1) != 0)) d++;
    } else if (upper) {
      d++;
    }
    store<u8>(out + <usize>(nd++), <u8>(0x30 + d));
    return nd;
  }
  return nd;
}

// digitsU64 is shortestDigits's digit loop for an s below 2^60.
function digitsU64(r: u64, s: u64, mp: u64, mm: u64, even: bool, out: usize): i32 {
  let nd = 0;
  while (true) {
    r *= 10;
    mp *= 10;
    mm *= 10;
    let d = <u32>(r / s);
    r %= s;
    let lower = even ? r <= mm : r < mm;
    let upper = even ? r + mp >= s : r + mp > s;
    if (!lower && !upper) {
      store<u8>(out + <usize>(nd++), <u8>(0x30 + d));
      continue;
    }
    if (lower && upper) {
      if (2 * r > s || (2 * r == s && (d & 1) != 0)) d++;
    } else if (upper) {
      d++;
    }
    store<u8>(out + <usize>(nd++), <u8>(0x30 + d));
    return nd;
  }
  return nd;
}

// cmpSum compares a + b with c, using t as scratch.
function cmpSum(a: usize, b: usize, c: usize, t: usize): i32 {
  bigCopy(t, a);
  bigAdd(t, b);
  return bigCmp(t, c);
}

// integerDigits writes the digits of v (positive), without trailing zeros,
// and sets digitsExp to their count.
function integerDigits(v: u64, out: usize): i32 {
  let n = 0;
  for (let x = v; x != 0; x /= 10) n++;
  digitsExp = n;
  for (let i = n - 1; i >= 0; i--) {
    store<u8>(out + <usize>i, <u8>(0x30 + v % 10));
    v /= 10;
  }
  while (n > 1 && load<u8>(out + <usize>n - 1) == 0x30) n--;
  return n;
}
