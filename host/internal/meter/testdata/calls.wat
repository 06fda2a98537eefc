;; Imports before the module's own functions, so that every function index
;; moves when yield is imported; direct and indirect calls, ref.func in
;; code and in a global, an element segment, exports, a start function, and
;; a name section (built with --debug-names).
(module $calls
  (import "env" "twice" (func $twice (param i32) (result i32)))
  (import "env" "base" (global $base i32))
  (import "env" "note" (func $note (param i32)))

  (type $binop (func (param i32 i32) (result i32)))
  (table $ops 8 funcref)
  (elem (table $ops) (i32.const 0) func $add $sub $mul)
  (elem declare func $sub)

  (global $started (mut i32) (i32.const 0))
  (global $mul_ref funcref (ref.func $mul))

  (func $add (type $binop) (i32.add (local.get 0) (local.get 1)))
  (func $sub (type $binop) (i32.sub (local.get 0) (local.get 1)))
  (func $mul (type $binop) (i32.mul (local.get 0) (local.get 1)))

  (func $init
    (global.set $started (i32.add (global.get $base) (i32.const 42)))
    (call $note (global.get $started)))
  (start $init)

  (func (export "started") (result i32) (global.get $started))

  ;; ops[op](a, b)
  (func (export "apply") (param $op i32) (param $a i32) (param $b i32) (result i32)
    (call_indirect $ops (type $binop) (local.get $a) (local.get $b) (local.get $op)))

  ;; Stores ref.func $sub at slot 5 and calls it.
  (func (export "via_ref") (param $a i32) (param $b i32) (result i32)
    (table.set $ops (i32.const 5) (ref.func $sub))
    (call_indirect $ops (type $binop) (local.get $a) (local.get $b) (i32.const 5)))

  ;; Stores the global's ref.func $mul at slot 6 and calls it.
  (func (export "via_global") (param $a i32) (param $b i32) (result i32)
    (table.set $ops (i32.const 6) (global.get $mul_ref))
    (call_indirect $ops (type $binop) (local.get $a) (local.get $b) (i32.const 6)))

  ;; twice(add(x, 1)), through an import.
  (func $direct (export "direct") (param $x i32) (result i32)
    (local $tmp i32)
    (local.set $tmp (call $add (local.get $x) (i32.const 1)))
    (call $twice (local.get $tmp)))

  ;; A trap two calls deep, for the stack trace.
  (func $boom (unreachable))
  (func $middle (call $boom))
  (func $trap (export "trap") (call $middle))

  (export "add" (func $add))
  (export "twice_again" (func $twice))
  (export "ops" (table $ops))
)
