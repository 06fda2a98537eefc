;; no_memory has every export but defines no memory to exchange data in.
(module
  (func (export "weir_abi_v1"))
  (func (export "weir_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "weir_init") (param i32 i32) (result i64) (i64.const 0))
  (func (export "weir_map") (param i32 i32) (result i64) (i64.const 0)))
