;; typed_sum is a typed aggregate (ABI §14.5) for the host's tests: it
;; declares the field "n" as a strict int, and sums it. The accumulator
;; and the result are the sum, 8 bytes little-endian; a record whose n is
;; null or missing is rejected with the message "no n" (and one whose n
;; is not an integer never reaches it).
(module
  ;; #include lib/frame.wati

  ;; §14.2: version 1, one field: int, strict, "n".
  (data (i32.const 1024) "\01\00\00\00\01\00\00\00\01\02\01\00\00\00n")
  (data (i32.const 1056) "no n")
  ;; 1072: the fresh accumulator, 8 zero bytes.

  (func (export "weir_abi_v1"))

  (func (export "weir_init") (param i32 i32) (result i64)
    (i64.const 0))

  (func (export "weir_fields") (result i64)
    (call $pack (i32.const 1024) (i32.const 15)))

  (func (export "weir_agg_create") (result i64)
    (call $pack (i32.const 1072) (i32.const 8)))

  ;; $acc writes a u32 length 8 and the sum.
  (func $acc (param $sum i64)
    (i32.store align=1 (global.get $o) (i32.const 8))
    (i64.store offset=4 align=1 (global.get $o) (local.get $sum))
    (global.set $o (i32.add (global.get $o) (i32.const 12))))

  ;; §14.5 in, §12.2 out.
  (func (export "weir_typed_agg_add") (param $p i32) (param $len i32) (result i64)
    (local $groups i32) (local $g i32) (local $t i32) (local $batch i32)
    (local $st i32) (local $vals i32) (local $r i32) (local $n i32) (local $j i32)
    (local $sum i64) (local $errs i32) (local $nerr i32)
    (local.set $groups (i32.load (local.get $p)))
    ;; the group table: acc_len (always 8 here), acc, record_count
    (local.set $t (i32.add (local.get $p) (i32.const 4)))
    (local.set $batch (i32.add (local.get $t) (i32.mul (local.get $groups) (i32.const 16))))
    (local.set $batch (i32.add (local.get $p)
      (i32.and (i32.add (i32.sub (local.get $batch) (local.get $p)) (i32.const 7)) (i32.const -8))))
    (local.set $st (i32.add (local.get $batch) (i32.load offset=44 (local.get $batch))))
    (local.set $vals (i32.add (local.get $batch) (i32.load offset=48 (local.get $batch))))
    (global.set $out (i32.and (i32.add (i32.add (local.get $p) (local.get $len)) (i32.const 7)) (i32.const -8)))
    (call $ensure (i32.add (global.get $out)
      (i32.add (i32.const 4) (i32.add (i32.mul (local.get $groups) (i32.const 16))
                                      (i32.mul (i32.load (local.get $batch)) (i32.const 12))))))
    (i32.store (global.get $out) (local.get $groups))
    (global.set $o (i32.add (global.get $out) (i32.const 4)))
    (block $done
      (loop $group
        (br_if $done (i32.ge_u (local.get $g) (local.get $groups)))
        (local.set $sum (i64.load offset=4 align=1 (local.get $t)))
        (local.set $n (i32.load offset=12 align=1 (local.get $t)))
        (local.set $errs (global.get $o))
        (global.set $o (i32.add (global.get $o) (i32.const 4)))
        (local.set $nerr (i32.const 0))
        (local.set $j (i32.const 0))
        (block $gdone
          (loop $record
            (br_if $gdone (i32.ge_u (local.get $j) (local.get $n)))
            (if (i32.eqz (i32.load8_u (i32.add (local.get $st) (local.get $r))))
              (then
                (local.set $sum (i64.add (local.get $sum)
                  (i64.load (i32.add (local.get $vals) (i32.shl (local.get $r) (i32.const 3)))))))
              (else
                (i32.store align=1 (global.get $o) (local.get $j))
                (i32.store offset=4 align=1 (global.get $o) (i32.const 4))
                (i32.store offset=8 align=1 (global.get $o) (i32.load (i32.const 1056)))
                (global.set $o (i32.add (global.get $o) (i32.const 12)))
                (local.set $nerr (i32.add (local.get $nerr) (i32.const 1)))))
            (local.set $r (i32.add (local.get $r) (i32.const 1)))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $record)))
        (i32.store align=1 (local.get $errs) (local.get $nerr))
        (call $acc (local.get $sum))
        (local.set $t (i32.add (local.get $t) (i32.const 16)))
        (local.set $g (i32.add (local.get $g) (i32.const 1)))
        (br $group)))
    (call $pack (global.get $out) (i32.sub (global.get $o) (global.get $out))))

  ;; §12.3 in, §12.4 out: each input is one accumulator (result) or two
  ;; (merge), of 8 bytes each; the answer is their sum.
  (func $values (param $p i32) (param $len i32) (param $per i32) (result i64)
    (local $n i32) (local $i i32) (local $k i32) (local $in i32) (local $sum i64)
    (local.set $n (i32.load (local.get $p)))
    (local.set $in (i32.add (local.get $p) (i32.const 4)))
    (global.set $out (i32.and (i32.add (i32.add (local.get $p) (local.get $len)) (i32.const 7)) (i32.const -8)))
    (call $ensure (i32.add (global.get $out) (i32.add (i32.const 4) (i32.mul (local.get $n) (i32.const 13)))))
    (i32.store (global.get $out) (local.get $n))
    (global.set $o (i32.add (global.get $out) (i32.const 4)))
    (block $done
      (loop $entry
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $sum (i64.const 0))
        (local.set $k (i32.const 0))
        (block $kdone
          (loop $acc
            (br_if $kdone (i32.ge_u (local.get $k) (local.get $per)))
            (local.set $sum (i64.add (local.get $sum) (i64.load offset=4 align=1 (local.get $in))))
            (local.set $in (i32.add (local.get $in) (i32.const 12)))
            (local.set $k (i32.add (local.get $k) (i32.const 1)))
            (br $acc)))
        (i32.store8 (global.get $o) (i32.const 0))
        (global.set $o (i32.add (global.get $o) (i32.const 1)))
        (call $acc (local.get $sum))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $entry)))
    (call $pack (global.get $out) (i32.sub (global.get $o) (global.get $out))))

  (func (export "weir_agg_merge") (param $p i32) (param $len i32) (result i64)
    (call $values (local.get $p) (local.get $len) (i32.const 2)))

  (func (export "weir_agg_result") (param $p i32) (param $len i32) (result i64)
    (call $values (local.get $p) (local.get $len) (i32.const 1))))
