;; foreign_import imports from modules weir does not provide: env.memcpy
;; (only env.abort exists) and a module named "js".
(module
  (import "env" "memcpy" (func (param i32 i32 i32) (result i32)))
  (import "js" "now" (func (result f64)))
  ;; #include lib/frame.wati
  (func (export "weir_abi_v1"))
  (func (export "weir_init") (param i32 i32) (result i64) (i64.const 0))
  (func (export "weir_map") (param i32 i32) (result i64) (i64.const 0)))
