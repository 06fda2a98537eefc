;; bad_import_signature imports weir_v1.log with the wrong types.
(module
  (import "weir_v1" "log" (func (param i32 i32)))
  ;; #include lib/frame.wati
  (func (export "weir_abi_v1"))
  (func (export "weir_init") (param i32 i32) (result i64) (i64.const 0))
  (func (export "weir_map") (param i32 i32) (result i64) (i64.const 0)))
