;; ops_none exports map and filter, but reports through weir_ops that it
;; registered no operation, so that the host refuses it for any operator
;; and never calls them.
(module
  ;; #include lib/frame.wati

  (func (export "weir_abi_v1"))

  (func (export "weir_init") (param i32 i32) (result i64)
    (i64.const 0))

  (func (export "weir_ops") (result i32)
    (i32.const 0))

  (func $none (param $p i32) (param $len i32) (result i64)
    (call $out_begin (i32.add (local.get $p) (local.get $len)))
    (call $out_finish))

  (export "weir_map" (func $none))
  (export "weir_filter" (func $none)))
