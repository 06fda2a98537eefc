;; identity keeps every record: for a batch of n records it answers with n
;; keep entries. It implements map, flat_map and filter the same way, and
;; counts weir_gc calls in the exported global gc_calls.
(module
  ;; #include lib/frame.wati

  (global $gc_calls (export "gc_calls") (mut i32) (i32.const 0))

  (func (export "weir_abi_v1"))

  (func (export "weir_init") (param i32 i32) (result i64)
    (i64.const 0))

  (func (export "weir_gc")
    (global.set $gc_calls (i32.add (global.get $gc_calls) (i32.const 1))))

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
