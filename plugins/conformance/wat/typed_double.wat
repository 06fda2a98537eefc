;; typed_double, a typed map (ABI §14), written by hand from abi/ABI.md
;; alone, for the default config only. It declares the field "price" as a
;; strict int, so the host dead-letters records whose price holds anything
;; but an integer before the guest sees them, and answers each record it
;; gets with a patch setting price to twice its value. A record whose price
;; is null or missing is rejected with the message "price is null" or
;; "price is missing", and one whose price doubled does not fit in 64 bits
;; with "price overflows".
(module
  (memory (export "memory") 2)

  ;; §14.2, the declaration frame (19 bytes): version 1, one field: type 1
  ;; (int), flags 2 (strict), path "price" (at 1038).
  (data (i32.const 1024) "\01\00\00\00\01\00\00\00\01\02\05\00\00\00price")
  (data (i32.const 1056) "price is null")
  (data (i32.const 1072) "price is missing")
  (data (i32.const 1096) "price overflows")

  (func (export "weir_abi_v1"))

  (func $ensure (param $end i32)
    (local $pages i32)
    (local.set $pages (i32.shr_u (i32.add (local.get $end) (i32.const 65535)) (i32.const 16)))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size))) (i32.const -1))
          (then unreachable)))))

  ;; §3: one region for all input, at 64 KiB (so 8-aligned, as §14.3 likes).
  (func (export "weir_alloc") (param $size i32) (result i32)
    (call $ensure (i32.add (i32.const 65536) (local.get $size)))
    (i32.const 65536))

  ;; §4: any config; there is nothing to configure.
  (func (export "weir_init") (param i32 i32) (result i64)
    (i64.const 0))

  (func (export "weir_fields") (result i64)
    (i64.or (i64.shl (i64.const 1024) (i64.const 32)) (i64.const 19)))

  ;; $error writes the rest of an error entry (kind 2) whose index is
  ;; written, with the message (ptr, len), at $o, and returns its end.
  (func $error (param $o i32) (param $ptr i32) (param $len i32) (result i32)
    (i32.store8 (local.get $o) (i32.const 2))
    (i32.store offset=5 align=1 (local.get $o) (local.get $len))
    (memory.copy (i32.add (local.get $o) (i32.const 9)) (local.get $ptr) (local.get $len))
    (i32.add (local.get $o) (i32.add (i32.const 9) (local.get $len))))

  ;; §14.3 in, §14.4 out: one entry per record, in order. Field 0 is column
  ;; 2, whose table entry is at 8 + 2 × 16 = 40: statuses offset at 44,
  ;; values offset at 48.
  (func (export "weir_typed_map") (param $p i32) (param $len i32) (result i64)
    (local $n i32) (local $i i32) (local $st i32) (local $vals i32)
    (local $out i32) (local $o i32) (local $status i32) (local $v i64)
    (local.set $n (i32.load (local.get $p)))
    (local.set $st (i32.add (local.get $p) (i32.load offset=44 (local.get $p))))
    (local.set $vals (i32.add (local.get $p) (i32.load offset=48 (local.get $p))))
    (local.set $out (i32.and (i32.add (i32.add (local.get $p) (local.get $len)) (i32.const 7)) (i32.const -8)))
    (call $ensure (i32.add (local.get $out) (i32.add (i32.const 4) (i32.mul (local.get $n) (i32.const 29)))))
    (local.set $o (i32.add (local.get $out) (i32.const 4)))
    (block $done
      (loop $record
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $status (i32.load8_u (i32.add (local.get $st) (local.get $i))))
        (local.set $v (i64.load (i32.add (local.get $vals) (i32.shl (local.get $i) (i32.const 3)))))
        (i32.store offset=1 align=1 (local.get $o) (local.get $i))
        (block $answered
          (if (i32.eq (local.get $status) (i32.const 1)) ;; null
            (then
              (local.set $o (call $error (local.get $o) (i32.const 1056) (i32.const 13)))
              (br $answered)))
          (if (local.get $status) ;; missing (a strict int is never a mismatch)
            (then
              (local.set $o (call $error (local.get $o) (i32.const 1072) (i32.const 16)))
              (br $answered)))
          (if (i32.or (i64.gt_s (local.get $v) (i64.const 0x3fffffffffffffff))
                      (i64.lt_s (local.get $v) (i64.const -0x4000000000000000)))
            (then
              (local.set $o (call $error (local.get $o) (i32.const 1096) (i32.const 15)))
              (br $answered)))
          ;; patch (kind 3), flags 0, one op: set (1) "price" int (1)
          (i32.store8 (local.get $o) (i32.const 3))
          (i32.store8 offset=5 (local.get $o) (i32.const 0))
          (i32.store offset=6 align=1 (local.get $o) (i32.const 1))
          (i32.store8 offset=10 (local.get $o) (i32.const 1))
          (i32.store offset=11 align=1 (local.get $o) (i32.const 5))
          (memory.copy (i32.add (local.get $o) (i32.const 15)) (i32.const 1038) (i32.const 5))
          (i32.store8 offset=20 (local.get $o) (i32.const 1))
          (i64.store offset=21 align=1 (local.get $o) (i64.mul (local.get $v) (i64.const 2)))
          (local.set $o (i32.add (local.get $o) (i32.const 29))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $record)))
    (i32.store (local.get $out) (local.get $n))
    (i64.or (i64.shl (i64.extend_i32_u (local.get $out)) (i64.const 32))
            (i64.extend_i32_u (i32.sub (local.get $o) (local.get $out))))))
