;; initialize_loop never returns from _initialize, as a guest whose start-up
;; code hangs; it would keep every record.
(module
  ;; #include lib/frame.wati

  (func (export "_initialize") (loop $forever (br $forever)))
  (func (export "weir_abi_v1"))
  (func (export "weir_init") (param i32 i32) (result i64) (i64.const 0))

  (func (export "weir_map") (param $p i32) (param $len i32) (result i64)
    (local $n i32) (local $i i32)
    (local.set $n (i32.load (local.get $p)))
    (call $out_begin (i32.add (local.get $p) (local.get $len)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (call $out_keep (local.get $i))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (call $out_finish)))
