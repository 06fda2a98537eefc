;; Loops: an infinite one, counted and nested ones, recursion, and the
;; byte-summing loop of the benchmarks.
(module
  (memory (export "memory") 1)

  ;; Never returns: only a yield that panics stops it.
  (func (export "spin")
    (loop $forever
      (br $forever)))

  ;; Runs n iterations and returns n.
  (func (export "count") (param $n i32) (result i32)
    (local $i i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.get $i))

  ;; Sum of i*j over i < a, j < b.
  (func (export "nested") (param $a i32) (param $b i32) (result i64)
    (local $i i32) (local $j i32) (local $acc i64)
    (block $outer_done
      (loop $outer
        (br_if $outer_done (i32.ge_u (local.get $i) (local.get $a)))
        (local.set $j (i32.const 0))
        (block $inner_done
          (loop $inner
            (br_if $inner_done (i32.ge_u (local.get $j) (local.get $b)))
            (local.set $acc
              (i64.add (local.get $acc)
                (i64.extend_i32_u (i32.mul (local.get $i) (local.get $j)))))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $inner)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $outer)))
    (local.get $acc))

  ;; Recursion without loops: its checks are at function entry.
  (func $fib (export "fib") (param $n i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $n) (i32.const 2))
      (then (local.get $n))
      (else
        (i32.add
          (call $fib (i32.sub (local.get $n) (i32.const 1)))
          (call $fib (i32.sub (local.get $n) (i32.const 2)))))))

  ;; Writes byte i*7+seed at i for i < len.
  (func (export "fill") (param $len i32) (param $seed i32)
    (local $i i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (i32.store8 (local.get $i)
          (i32.add (local.get $seed) (i32.mul (local.get $i) (i32.const 7))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next))))

  ;; Sum of the bytes at [0, len): the hot loop of the benchmarks.
  (func (export "sum") (param $len i32) (result i32)
    (local $i i32) (local $acc i32)
    (block $done
      (br_if $done (i32.eqz (local.get $len)))
      (loop $next
        (local.set $acc
          (i32.add (local.get $acc) (i32.load8_u (local.get $i))))
        (br_if $next
          (i32.lt_u
            (local.tee $i (i32.add (local.get $i) (i32.const 1)))
            (local.get $len)))))
    (local.get $acc))
)
