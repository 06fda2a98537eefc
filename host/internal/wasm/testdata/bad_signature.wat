;; bad_signature exports weir_map and weir_gc with the wrong types.
(module
  ;; #include lib/frame.wati
  (func (export "weir_abi_v1"))
  (func (export "weir_init") (param i32 i32) (result i64) (i64.const 0))
  (func (export "weir_gc") (param i32))
  (func (export "weir_map") (param i32) (result i32) (i32.const 0)))
