;; trap_all is a map that traps on every batch, and so on every record when
;; the host replays them one at a time: the broken new version of the
;; hot-reload tests.
(module
  ;; #include lib/frame.wati
  (func (export "weir_abi_v1"))
  (func (export "weir_init") (param i32 i32) (result i64) (i64.const 0))
  (func (export "weir_map") (param i32 i32) (result i64) unreachable))
