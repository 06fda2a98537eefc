;; Multi-value functions, blocks, loops and ifs with parameters, and
;; br_table, so that checks are placed where the stack holds block values.
(module
  (func $swap (param i32 i32) (result i32 i32) (local.get 1) (local.get 0))
  (func (export "swap") (param i32 i32) (result i32 i32)
    (call $swap (local.get 0) (local.get 1)))

  ;; (a+b, a-b) computed inside a block that takes (a, b).
  (func (export "block_params") (param $a i32) (param $b i32) (result i32 i32)
    (local $x i32) (local $y i32)
    (local.get $a) (local.get $b)
    (block (param i32 i32) (result i32 i32)
      (local.set $y) (local.set $x)
      (i32.add (local.get $x) (local.get $y))
      (i32.sub (local.get $x) (local.get $y))))

  ;; Sum of 1..n with (acc, i) carried on the stack by the loop.
  (func (export "loop_params") (param $n i32) (result i32)
    (local $acc i32) (local $i i32)
    (i32.const 0) (local.get $n)
    (loop $l (param i32 i32) (result i32)
      (local.set $i) (local.set $acc)
      (i32.add (local.get $acc) (local.get $i))
      (i32.sub (local.get $i) (i32.const 1))
      (local.tee $i)
      (if (param i32) (result i32 i32)
        (then (local.get $i) (br $l))
        (else (i32.const 0)))
      (drop)))

  ;; br_table over four cases and a default.
  (func (export "classify") (param i32) (result i32)
    (block $default
      (block $c
        (block $b
          (block $a
            (br_table $a $b $c $default (local.get 0)))
          (return (i32.const 10)))
        (return (i32.const 20)))
      (return (i32.const 30)))
    (i32.const 40))

  ;; An if with parameters and two results.
  (func (export "if_params") (param $c i32) (param $x i32) (param $y i32) (result i32 i32)
    (local.get $x) (local.get $y)
    (if (param i32 i32) (result i32 i32) (local.get $c)
      (then (i32.add) (i32.const 1))
      (else (i32.sub) (i32.const 2))))

  ;; A loop whose body exits through br_table.
  (func (export "table_loop") (param $n i32) (result i32)
    (local $steps i32)
    (block $out
      (loop $again
        (local.set $steps (i32.add (local.get $steps) (i32.const 1)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br_table $out $again $again (i32.and (local.get $n) (i32.const 1)))))
    (local.get $steps))
)
