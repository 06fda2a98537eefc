;; ops_bad_signature is identity with a weir_ops export of the wrong type:
;; it takes an i32.
(module
  ;; #include lib/frame.wati

  (func (export "weir_abi_v1"))

  (func (export "weir_init") (param i32 i32) (result i64)
    (i64.const 0))

  (func (export "weir_ops") (param i32) (result i32)
    (i32.const 1))

  (func (export "weir_map") (param i32 i32) (result i64)
    (i64.const 0)))
