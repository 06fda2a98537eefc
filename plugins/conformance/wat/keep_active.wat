;; keep_active, a typed filter (ABI §14), written by hand from abi/ABI.md
;; alone, for the default config only. It declares the field "active" as a
;; bool, with no flags, so every record reaches it with the field's status:
;; it keeps the records whose active is true, drops those whose active is
;; false, null or missing, and rejects those whose active holds another
;; type with the message "active is not a bool".
(module
  (memory (export "memory") 2)

  ;; §14.2, the declaration frame (20 bytes): version 1, one field: type 3
  ;; (bool), flags 0, path "active".
  (data (i32.const 1024) "\01\00\00\00\01\00\00\00\03\00\06\00\00\00active")
  (data (i32.const 1056) "active is not a bool")

  (func (export "weir_abi_v1"))

  (func $ensure (param $end i32)
    (local $pages i32)
    (local.set $pages (i32.shr_u (i32.add (local.get $end) (i32.const 65535)) (i32.const 16)))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size))) (i32.const -1))
          (then unreachable)))))

  ;; §3: one region for all input, at 64 KiB.
  (func (export "weir_alloc") (param $size i32) (result i32)
    (call $ensure (i32.add (i32.const 65536) (local.get $size)))
    (i32.const 65536))

  ;; §4: any config; there is nothing to configure.
  (func (export "weir_init") (param i32 i32) (result i64)
    (i64.const 0))

  (func (export "weir_fields") (result i64)
    (i64.or (i64.shl (i64.const 1024) (i64.const 32)) (i64.const 20)))

  ;; §14.3 in, §14.4 out: keep (kind 0) for each record kept, error (kind
  ;; 2) for each rejected, none for each dropped; indexes increasing. Field
  ;; 0 is column 2: statuses offset at 44, values offset at 48.
  (func (export "weir_typed_filter") (param $p i32) (param $len i32) (result i64)
    (local $n i32) (local $i i32) (local $st i32) (local $vals i32)
    (local $status i32) (local $out i32) (local $o i32) (local $count i32)
    (local.set $n (i32.load (local.get $p)))
    (local.set $st (i32.add (local.get $p) (i32.load offset=44 (local.get $p))))
    (local.set $vals (i32.add (local.get $p) (i32.load offset=48 (local.get $p))))
    (local.set $out (i32.and (i32.add (i32.add (local.get $p) (local.get $len)) (i32.const 7)) (i32.const -8)))
    (call $ensure (i32.add (local.get $out) (i32.add (i32.const 4) (i32.mul (local.get $n) (i32.const 29)))))
    (local.set $o (i32.add (local.get $out) (i32.const 4)))
    (block $done
      (loop $record
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $status (i32.load8_u (i32.add (local.get $st) (local.get $i))))
        (if (i32.and (i32.eqz (local.get $status))
                     (i32.load8_u (i32.add (local.get $vals) (local.get $i))))
          (then
            (i32.store8 (local.get $o) (i32.const 0))
            (i32.store offset=1 align=1 (local.get $o) (local.get $i))
            (local.set $o (i32.add (local.get $o) (i32.const 5)))
            (local.set $count (i32.add (local.get $count) (i32.const 1)))))
        (if (i32.eq (local.get $status) (i32.const 3)) ;; mismatch
          (then
            (i32.store8 (local.get $o) (i32.const 2))
            (i32.store offset=1 align=1 (local.get $o) (local.get $i))
            (i32.store offset=5 align=1 (local.get $o) (i32.const 20))
            (memory.copy (i32.add (local.get $o) (i32.const 9)) (i32.const 1056) (i32.const 20))
            (local.set $o (i32.add (local.get $o) (i32.const 29)))
            (local.set $count (i32.add (local.get $count) (i32.const 1)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $record)))
    (i32.store (local.get $out) (local.get $count))
    (i64.or (i64.shl (i64.extend_i32_u (local.get $out)) (i64.const 32))
            (i64.extend_i32_u (i32.sub (local.get $o) (local.get $out))))))
