;; agg_bad_signature exports weir_agg_create with the wrong type and lacks
;; weir_agg_result.
(module
  ;; #include lib/frame.wati
  (func (export "weir_abi_v1"))
  (func (export "weir_init") (param i32 i32) (result i64) (i64.const 0))
  (func (export "weir_agg_create") (param i32) (result i64) (i64.const 0))
  (func (export "weir_agg_add") (param i32 i32) (result i64) (i64.const 0))
  (func (export "weir_agg_merge") (param i32 i32) (result i64) (i64.const 0)))
