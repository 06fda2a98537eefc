;; abi_v2 declares a future ABI version this host does not speak.
(module
  ;; #include lib/frame.wati
  (func (export "weir_abi_v2"))
  (func (export "weir_init") (param i32 i32) (result i64) (i64.const 0))
  (func (export "weir_map") (param i32 i32) (result i64) (i64.const 0)))
