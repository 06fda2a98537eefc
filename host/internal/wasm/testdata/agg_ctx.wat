;; agg_ctx is an aggregate that exports weir_agg_result_ctx (ABI.md §12.5).
;; Its accumulator is a count, an i64, 8 bytes little-endian, as
;; agg_count's; weir_agg_create returns 0, weir_agg_add counts the records
;; of each group and weir_agg_merge adds two counts (no rejections).
;;
;; weir_agg_result_ctx answers each entry with the entry itself as the
;; value: its context and accumulator, as the frame holds them, so that a
;; test can decode what the host sent; an accumulator of 666 traps.
;; weir_agg_result, which a host that knows weir_agg_result_ctx never
;; calls, answers every accumulator with the error "no context".
(module
  ;; #include lib/frame.wati

  (data (i32.const 64) "\00\00\00\00\00\00\00\00") ;; the fresh accumulator
  (data (i32.const 96) "no context") ;; 10 bytes

  (func (export "weir_abi_v1"))

  (func (export "weir_init") (param i32 i32) (result i64)
    (i64.const 0))

  (func (export "weir_agg_create") (result i64)
    (call $pack (i32.const 64) (i32.const 8)))

  (func $put8 (param $v i32)
    (call $ensure (i32.add (global.get $o) (i32.const 1)))
    (i32.store8 (global.get $o) (local.get $v))
    (global.set $o (i32.add (global.get $o) (i32.const 1))))

  (func $put32 (param $v i32)
    (call $ensure (i32.add (global.get $o) (i32.const 4)))
    (i32.store align=1 (global.get $o) (local.get $v))
    (global.set $o (i32.add (global.get $o) (i32.const 4))))

  (func $put_bytes (param $ptr i32) (param $len i32)
    (call $ensure (i32.add (global.get $o) (i32.add (local.get $len) (i32.const 4))))
    (call $out_bytes (local.get $ptr) (local.get $len)))

  (func $put_acc (param $v i64)
    (call $put32 (i32.const 8))
    (call $ensure (i32.add (global.get $o) (i32.const 8)))
    (i64.store align=1 (global.get $o) (local.get $v))
    (global.set $o (i32.add (global.get $o) (i32.const 8))))

  ;; $skip_acc returns the offset after the accumulator at $r.
  (func $skip_acc (param $r i32) (result i32)
    (i32.add (i32.add (local.get $r) (i32.const 4)) (i32.load (local.get $r))))

  (func (export "weir_agg_add") (param $p i32) (param $len i32) (result i64)
    (local $groups i32) (local $g i32) (local $r i32) (local $n i32) (local $i i32)
    (local $count i64)
    (local.set $groups (i32.load (local.get $p)))
    (local.set $r (i32.add (local.get $p) (i32.const 4)))
    (call $out_begin (i32.add (local.get $p) (local.get $len)))
    (block $gdone
      (loop $gnext
        (br_if $gdone (i32.ge_u (local.get $g) (local.get $groups)))
        (local.set $count (i64.load (i32.add (local.get $r) (i32.const 4))))
        (local.set $r (call $skip_acc (local.get $r)))
        (local.set $n (i32.load (local.get $r)))
        (local.set $r (i32.add (local.get $r) (i32.const 4)))
        (local.set $i (i32.const 0))
        (block $rdone
          (loop $rnext
            (br_if $rdone (i32.ge_u (local.get $i) (local.get $n)))
            (local.set $r (call $read_record (local.get $r)))
            (local.set $count (i64.add (local.get $count) (i64.const 1)))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $rnext)))
        (call $put32 (i32.const 0)) ;; no errors
        (call $put_acc (local.get $count))
        (local.set $g (i32.add (local.get $g) (i32.const 1)))
        (br $gnext)))
    (global.set $count (local.get $groups))
    (call $out_finish))

  (func (export "weir_agg_merge") (param $p i32) (param $len i32) (result i64)
    (local $n i32) (local $i i32) (local $r i32) (local $a i64)
    (local.set $n (i32.load (local.get $p)))
    (local.set $r (i32.add (local.get $p) (i32.const 4)))
    (call $out_begin (i32.add (local.get $p) (local.get $len)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $a (i64.load (i32.add (local.get $r) (i32.const 4))))
        (local.set $r (call $skip_acc (local.get $r)))
        (local.set $a (i64.add (local.get $a) (i64.load (i32.add (local.get $r) (i32.const 4)))))
        (local.set $r (call $skip_acc (local.get $r)))
        (call $put8 (i32.const 0))
        (call $put_acc (local.get $a))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (global.set $count (local.get $n))
    (call $out_finish))

  (func (export "weir_agg_result") (param $p i32) (param $len i32) (result i64)
    (local $n i32) (local $i i32)
    (local.set $n (i32.load (local.get $p)))
    (call $out_begin (i32.add (local.get $p) (local.get $len)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (call $put8 (i32.const 1))
        (call $put_bytes (i32.const 96) (i32.const 10))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (global.set $count (local.get $n))
    (call $out_finish))

  (func (export "weir_agg_result_ctx") (param $p i32) (param $len i32) (result i64)
    (local $n i32) (local $i i32) (local $r i32) (local $start i32) (local $klen i32)
    (local.set $n (i32.load (local.get $p)))
    (local.set $r (i32.add (local.get $p) (i32.const 4)))
    (call $out_begin (i32.add (local.get $p) (local.get $len)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $start (local.get $r))
        ;; the key, absent or not; the flags and bounds; the accumulator
        (local.set $klen (i32.load (local.get $r)))
        (local.set $r (i32.add (local.get $r) (i32.const 4)))
        (if (i32.ne (local.get $klen) (i32.const -1))
          (then (local.set $r (i32.add (local.get $r) (local.get $klen)))))
        (local.set $r (i32.add (local.get $r) (i32.const 17)))
        (if (i64.eq (i64.load (i32.add (local.get $r) (i32.const 4))) (i64.const 666))
          (then unreachable))
        (local.set $r (call $skip_acc (local.get $r)))
        (call $put8 (i32.const 0))
        (call $put_bytes (local.get $start) (i32.sub (local.get $r) (local.get $start)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (global.set $count (local.get $n))
    (call $out_finish)))
