;; The "env" module that calls.wat and elems.wat import from. It is not
;; instrumented.
(module
  (global (export "base") i32 (i32.const 100))
  (global $noted (export "noted") (mut i32) (i32.const 0))
  (func (export "twice") (param i32) (result i32) (i32.mul (local.get 0) (i32.const 2)))
  (func (export "note") (param i32) (global.set $noted (local.get 0)))
  (func (export "seven") (result i32) (i32.const 7)))
