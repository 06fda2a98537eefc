;; Bulk memory and table operations, passive segments (with a data count
;; section), saturating conversions and sign extension.
(module
  (memory (export "memory") 1)
  (data $greeting "hello, world")
  (data (i32.const 100) "active")
  (type $r (func (result i32)))
  (table $t 4 funcref)
  (elem $e func $eleven $twenty_two)
  (elem declare func $eleven)

  (func $eleven (result i32) (i32.const 11))
  (func $twenty_two (result i32) (i32.const 22))

  ;; memory.init, data.drop, memory.copy, memory.fill; returns a checksum.
  (func (export "bulk") (result i32)
    (local $i i32) (local $acc i32)
    (memory.init $greeting (i32.const 200) (i32.const 0) (i32.const 12))
    (data.drop $greeting)
    (memory.copy (i32.const 300) (i32.const 200) (i32.const 12))
    (memory.copy (i32.const 96) (i32.const 100) (i32.const 6))
    (memory.fill (i32.const 400) (i32.const 0x61) (i32.const 8))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (i32.const 512)))
        (local.set $acc
          (i32.add (i32.mul (local.get $acc) (i32.const 31)) (i32.load8_u (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.get $acc))

  ;; table.init, elem.drop, table.copy, table.grow, table.fill, table.size.
  (func (export "tables") (result i32)
    (table.init $t $e (i32.const 0) (i32.const 0) (i32.const 2))
    (elem.drop $e)
    (table.copy (i32.const 2) (i32.const 0) (i32.const 2))
    (drop (table.grow $t (ref.null func) (i32.const 3)))
    (table.fill $t (i32.const 5) (ref.func $eleven) (i32.const 2))
    (i32.add
      (i32.mul (table.size $t) (i32.const 1000))
      (i32.add
        (call_indirect $t (type $r) (i32.const 3))
        (call_indirect $t (type $r) (i32.const 6)))))

  ;; A second call traps: the passive data segment was dropped.
  (func (export "init_dropped")
    (memory.init $greeting (i32.const 0) (i32.const 0) (i32.const 1)))

  (func (export "sat") (param f64) (result i32) (i32.trunc_sat_f64_s (local.get 0)))
  (func (export "sat64") (param f32) (result i64) (i64.trunc_sat_f32_u (local.get 0)))
  (func (export "signext") (param i32) (result i32) (i32.extend8_s (local.get 0)))
  (func (export "signext64") (param i64) (result i64) (i64.extend32_s (local.get 0)))

  ;; memory.grow and memory.size.
  (func (export "grow") (result i32)
    (i32.add (memory.grow (i32.const 2)) (i32.mul (memory.size) (i32.const 100))))
)
