;; SIMD: loads and stores with memargs, lanes, v128.const, i8x16.shuffle,
;; and opcodes from 0x80 up, whose LEB128 takes two bytes.
(module
  (memory (export "memory") 1)
  (data (i32.const 0) "\00\01\02\03\04\05\06\07\08\09\0a\0b\0c\0d\0e\0f\10\11\12\13\14\15\16\17\18\19\1a\1b\1c\1d\1e\1f")

  ;; Dot product of the two i32x4 at 0 and 16, by i32x4.mul and lanes.
  (func (export "dot") (result i32)
    (local $v v128)
    (local.set $v (i32x4.mul (v128.load (i32.const 0)) (v128.load offset=16 align=4 (i32.const 0))))
    (i32.add
      (i32.add (i32x4.extract_lane 0 (local.get $v)) (i32x4.extract_lane 1 (local.get $v)))
      (i32.add (i32x4.extract_lane 2 (local.get $v)) (i32x4.extract_lane 3 (local.get $v)))))

  ;; Reverses bytes with a shuffle of two constants.
  (func (export "shuffle") (result i64)
    (i64x2.extract_lane 1
      (i8x16.shuffle 15 14 13 12 11 10 9 8 23 22 21 20 19 18 17 16
        (v128.const i8x16 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
        (v128.const i32x4 0x11111111 0x22222222 0x33333333 0x44444444))))

  ;; Lane loads and stores, replace_lane, bitmask, all_true, load32_zero.
  (func (export "lanes") (result i32)
    (local $v v128)
    (local.set $v (v128.load32_zero (i32.const 4)))
    (local.set $v (v128.load8_lane 5 (i32.const 9) (local.get $v)))
    (local.set $v (i16x8.replace_lane 7 (local.get $v) (i32.const -1)))
    (v128.store16_lane 7 (i32.const 64) (local.get $v))
    (i32.add
      (i32.add (i8x16.bitmask (local.get $v)) (i32.load16_u (i32.const 64)))
      (i32.add (i32x4.all_true (local.get $v)) (i8x16.extract_lane_u 5 (local.get $v)))))

  ;; Sum of n i32x4 vectors from address 0, in a loop.
  (func (export "vector_sum") (param $n i32) (result i32)
    (local $acc v128) (local $p i32)
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.get $n)))
        (local.set $acc (i32x4.add (local.get $acc) (v128.load (local.get $p))))
        (local.set $p (i32.and (i32.add (local.get $p) (i32.const 16)) (i32.const 0xfff)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $next)))
    (i32.add
      (i32x4.extract_lane 0 (local.get $acc))
      (i32x4.extract_lane 3 (i32x4.extmul_high_i16x8_u (local.get $acc) (local.get $acc)))))

  ;; Floats: conversions and pairwise ops.
  (func (export "floats") (result f64)
    (local $f v128)
    (local.set $f (f64x2.promote_low_f32x4 (f32x4.sqrt (f32x4.convert_i32x4_u (v128.load (i32.const 8))))))
    (f64.add (f64x2.extract_lane 0 (local.get $f))
      (f64x2.extract_lane 1 (f64x2.pmax (local.get $f) (f64x2.splat (f64.const 2.5))))))
)
