;; ops reports, through weir_ops, the operations its config names: the
;; config must be one byte, which is the set (abi.OpSet: 1 map, 2 flat_map,
;; 4 filter, 8 aggregate; other bits reserved), and weir_init rejects any
;; other config. The byte 0xff makes weir_ops trap. It exports map, flat_map
;; and filter, each keeping every record, as an SDK whose exports are fixed
;; does.
(module
  ;; #include lib/frame.wati

  (global $ops (mut i32) (i32.const 0))

  (data (i32.const 16) "want a one-byte config: the operations to report") ;; 48 bytes

  (func (export "weir_abi_v1"))

  (func (export "weir_init") (param $p i32) (param $n i32) (result i64)
    (if (i32.ne (local.get $n) (i32.const 1))
      (then (return (call $pack (i32.const 16) (i32.const 48)))))
    (global.set $ops (i32.load8_u (local.get $p)))
    (i64.const 0))

  (func (export "weir_ops") (result i32)
    (if (i32.eq (global.get $ops) (i32.const 0xff))
      (then unreachable))
    (global.get $ops))

  (func $keep_all (param $p i32) (param $len i32) (result i64)
    (local $n i32) (local $i i32) (local $o i32)
    (local.set $n (i32.load (local.get $p)))
    (call $out_begin (i32.add (local.get $p) (local.get $len)))
    (local.set $o (global.get $o))
    (call $ensure (i32.add (local.get $o) (i32.mul (local.get $n) (i32.const 5))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (i32.store8 (local.get $o) (i32.const 0)) ;; keep
        (i32.store offset=1 align=1 (local.get $o) (local.get $i))
        (local.set $o (i32.add (local.get $o) (i32.const 5)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (global.set $o (local.get $o))
    (global.set $count (local.get $n))
    (call $out_finish))

  (export "weir_map" (func $keep_all))
  (export "weir_flat_map" (func $keep_all))
  (export "weir_filter" (func $keep_all)))
