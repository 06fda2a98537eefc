;; unknown_import imports a host function weir does not provide.
(module
  (import "weir_v1" "teleport" (func (param i32 i32) (result i32)))
  ;; #include lib/frame.wati
  (func (export "weir_abi_v1"))
  (func (export "weir_init") (param i32 i32) (result i64) (i64.const 0))
  (func (export "weir_map") (param i32 i32) (result i64) (i64.const 0)))
