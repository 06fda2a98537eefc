;; filter_only implements filter but not map: it keeps records whose value
;; does not start with '-' and drops the others.
(module
  ;; #include lib/frame.wati
  (func (export "weir_abi_v1"))
  (func (export "weir_init") (param i32 i32) (result i64) (i64.const 0))
  (func (export "weir_filter") (param $p i32) (param $len i32) (result i64)
    (local $n i32) (local $i i32) (local $r i32)
    (local.set $n (i32.load (local.get $p)))
    (local.set $r (i32.add (local.get $p) (i32.const 4)))
    (call $out_begin (i32.add (local.get $p) (local.get $len)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $r (call $read_record (local.get $r)))
        (if (i32.ne (call $first_byte) (i32.const 45)) ;; '-'
          (then (call $out_keep (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (call $out_finish)))
