;; raw_double is the raw-convention baseline of the typed benchmarks: a map
;; that doubles the number after the first `"price":` in each record's
;; value, found by scanning the bytes (no JSON parsing, so it is not a
;; correct JSON transform: a lower bound on what a raw guest does for
;; typed_double's work). A record without it, or with no digits there, is
;; kept.
(module
  ;; #include lib/frame.wati

  (data (i32.const 1024) "\"price\":")

  (func (export "weir_abi_v1"))

  (func (export "weir_init") (param i32 i32) (result i64)
    (i64.const 0))

  ;; $find returns the offset in the current value just after `"price":`,
  ;; or -1.
  (func $find (result i32)
    (local $i i32) (local $end i32)
    (local.set $end (i32.sub (global.get $vlen) (i32.const 8)))
    (block $no
      (loop $scan
        (br_if $no (i32.gt_s (local.get $i) (local.get $end)))
        (if (i64.eq (i64.load align=1 (i32.add (global.get $vptr) (local.get $i))) (i64.load (i32.const 1024)))
          (then (return (i32.add (local.get $i) (i32.const 8)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $scan)))
    (i32.const -1))

  ;; $double writes record i's record entry: the value up to $at, twice
  ;; the digits from $at, and the rest.
  (func $double (param $i i32) (param $at i32)
    (local $d i32) (local $b i32) (local $v i64) (local $lenp i32) (local $tmp i32)
    (local.set $d (local.get $at))
    (block $end
      (loop $digit
        (br_if $end (i32.ge_s (local.get $d) (global.get $vlen)))
        (local.set $b (i32.sub (i32.load8_u (i32.add (global.get $vptr) (local.get $d))) (i32.const 48)))
        (br_if $end (i32.gt_u (local.get $b) (i32.const 9)))
        (local.set $v (i64.add (i64.mul (local.get $v) (i64.const 10)) (i64.extend_i32_u (local.get $b))))
        (local.set $d (i32.add (local.get $d) (i32.const 1)))
        (br $digit)))
    (if (i32.eq (local.get $d) (local.get $at))
      (then (call $out_keep (local.get $i)) (return)))
    (local.set $v (i64.mul (local.get $v) (i64.const 2)))
    (call $out_entry (i32.const 1) (local.get $i) (i32.add (global.get $vlen) (i32.const 26)))
    (i32.store8 (global.get $o) (i32.const 0)) ;; flags: the value only
    (local.set $lenp (i32.add (global.get $o) (i32.const 1)))
    (global.set $o (i32.add (local.get $lenp) (i32.const 4)))
    (memory.copy (global.get $o) (global.get $vptr) (local.get $at))
    (global.set $o (i32.add (global.get $o) (local.get $at)))
    (local.set $tmp (i32.const 2072))
    (loop $write
      (local.set $tmp (i32.sub (local.get $tmp) (i32.const 1)))
      (i32.store8 (local.get $tmp) (i32.add (i32.const 48) (i32.wrap_i64 (i64.rem_u (local.get $v) (i64.const 10)))))
      (local.set $v (i64.div_u (local.get $v) (i64.const 10)))
      (br_if $write (i64.ne (local.get $v) (i64.const 0))))
    (memory.copy (global.get $o) (local.get $tmp) (i32.sub (i32.const 2072) (local.get $tmp)))
    (global.set $o (i32.add (global.get $o) (i32.sub (i32.const 2072) (local.get $tmp))))
    (memory.copy (global.get $o) (i32.add (global.get $vptr) (local.get $d)) (i32.sub (global.get $vlen) (local.get $d)))
    (global.set $o (i32.add (global.get $o) (i32.sub (global.get $vlen) (local.get $d))))
    (i32.store align=1 (local.get $lenp) (i32.sub (global.get $o) (i32.add (local.get $lenp) (i32.const 4)))))

  (func (export "weir_map") (param $p i32) (param $len i32) (result i64)
    (local $n i32) (local $i i32) (local $r i32) (local $at i32)
    (local.set $n (i32.load (local.get $p)))
    (local.set $r (i32.add (local.get $p) (i32.const 4)))
    (call $out_begin (i32.add (local.get $p) (local.get $len)))
    (block $done
      (loop $record
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $r (call $read_record (local.get $r)))
        (local.set $at (call $find))
        (if (i32.lt_s (local.get $at) (i32.const 0))
          (then (call $out_keep (local.get $i)))
          (else (call $double (local.get $i) (local.get $at))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $record)))
    (call $out_finish)))
