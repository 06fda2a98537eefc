;; no_alloc lacks weir_alloc, so the host cannot hand it input.
(module
  (memory (export "memory") 1)
  (func (export "weir_abi_v1"))
  (func (export "weir_init") (param i32 i32) (result i64) (i64.const 0))
  (func (export "weir_map") (param i32 i32) (result i64) (i64.const 0)))
