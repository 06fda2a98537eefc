;; The eight encodings of element segments, each with a function index
;; that moves when yield is imported, read back through call_indirect.
(module
  (type $r (func (result i32)))
  (import "env" "seven" (func $seven (result i32)))
  (table $t0 10 funcref)
  (table $t1 10 funcref)

  (func $one (result i32) (i32.const 1))
  (func $two (result i32) (i32.const 2))
  (func $three (result i32) (i32.const 3))
  (func $four (result i32) (i32.const 4))

  (elem (i32.const 0) $one $seven)                                 ;; 0: active, func indices
  (elem $p1 func $two $three)                                      ;; 1: passive, func indices
  (elem (table $t1) (i32.const 0) func $three $one)                ;; 2: active, table, func indices
  (elem declare func $four)                                        ;; 3: declarative, func indices
  (elem (i32.const 2) funcref (ref.func $two) (ref.null func))     ;; 4: active, expressions
  (elem $p5 funcref (ref.func $four) (ref.func $seven) (ref.null func)) ;; 5: passive, expressions
  (elem (table $t1) (i32.const 4) funcref (ref.func $two) (ref.null func) (ref.func $four)) ;; 6: active, table, expressions
  (elem declare funcref (ref.func $three) (ref.null func))         ;; 7: declarative, expressions

  (func (export "get0") (param i32) (result i32)
    (call_indirect $t0 (type $r) (local.get 0)))
  (func (export "get1") (param i32) (result i32)
    (call_indirect $t1 (type $r) (local.get 0)))

  
  ;; Copies the passive segments into t0 at 5 and 7.
  (func (export "init")
    (table.init $t0 $p1 (i32.const 5) (i32.const 0) (i32.const 2))
    (table.init $t0 $p5 (i32.const 7) (i32.const 0) (i32.const 3)))

  ;; Declared functions, by ref.func.
  (func (export "declared") (result i32)
    (table.set $t1 (i32.const 8) (ref.func $four))
    (table.set $t1 (i32.const 9) (ref.func $three))
    (i32.add
      (call_indirect $t1 (type $r) (i32.const 8))
      (i32.mul (i32.const 10) (call_indirect $t1 (type $r) (i32.const 9)))))
)
