;; init_trap traps in weir_init.
(module
  ;; #include lib/frame.wati
  (func (export "weir_abi_v1"))
  (func (export "weir_init") (param i32 i32) (result i64) unreachable)
  (func (export "weir_map") (param i32 i32) (result i64) (i64.const 0)))
