;; fail_on, the conformance map for per-record errors, written by hand from
;; abi/ABI.md alone, for the default config only: a record whose value is
;; exactly "bad" is rejected with the message "bad input: bad"; every other
;; record is kept.
(module
  (memory (export "memory") 2)

  (data (i32.const 1024) "this module takes no config")
  (data (i32.const 1056) "bad input: bad")

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

  ;; §4: only {} is accepted.
  (func (export "weir_init") (param $p i32) (param $len i32) (result i64)
    (if (i32.and (i32.eq (local.get $len) (i32.const 2))
                 (i32.eq (i32.load16_u (local.get $p)) (i32.const 0x7d7b))) ;; "{}"
      (then (return (i64.const 0))))
    (i64.or (i64.shl (i64.const 1024) (i64.const 32)) (i64.const 27)))

  ;; §5: one entry per record, in order: error (kind 2) for "bad", else
  ;; keep (kind 0).
  (func (export "weir_map") (param $p i32) (param $len i32) (result i64)
    (local $n i32) (local $i i32) (local $r i32) (local $klen i32)
    (local $vlen i32) (local $bad i32) (local $h i32) (local $hn i32)
    (local $out i32) (local $o i32)
    (local.set $n (i32.load (local.get $p)))
    (local.set $out (i32.and (i32.add (i32.add (local.get $p) (local.get $len)) (i32.const 7)) (i32.const -8)))
    (call $ensure (i32.add (local.get $out) (i32.add (i32.const 4) (i32.mul (local.get $n) (i32.const 23)))))
    (local.set $o (i32.add (local.get $out) (i32.const 4)))
    (local.set $r (i32.add (local.get $p) (i32.const 4)))
    (block $done
      (loop $record
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $r (i32.add (local.get $r) (i32.const 8))) ;; timestamp
        (local.set $klen (i32.load (local.get $r)))
        (local.set $r (i32.add (local.get $r) (i32.const 4)))
        (if (i32.ne (local.get $klen) (i32.const -1))
          (then (local.set $r (i32.add (local.get $r) (local.get $klen)))))
        (local.set $vlen (i32.load (local.get $r)))
        (local.set $r (i32.add (local.get $r) (i32.const 4)))
        ;; "bad" is 0x62 0x61 0x64
        (local.set $bad (i32.and (i32.eq (local.get $vlen) (i32.const 3))
          (i32.and (i32.eq (i32.load16_u (local.get $r)) (i32.const 0x6162))
                   (i32.eq (i32.load8_u offset=2 (local.get $r)) (i32.const 0x64)))))
        (if (i32.ne (local.get $vlen) (i32.const -1))
          (then (local.set $r (i32.add (local.get $r) (local.get $vlen)))))
        (local.set $hn (i32.load (local.get $r)))
        (local.set $r (i32.add (local.get $r) (i32.const 4)))
        (local.set $h (i32.const 0))
        (block $hdone
          (loop $header
            (br_if $hdone (i32.ge_u (local.get $h) (local.get $hn)))
            (local.set $r (i32.add (local.get $r) (i32.add (i32.const 4) (i32.load (local.get $r)))))
            (local.set $r (i32.add (local.get $r) (i32.add (i32.const 4) (i32.load (local.get $r)))))
            (local.set $h (i32.add (local.get $h) (i32.const 1)))
            (br $header)))
        (i32.store offset=1 align=1 (local.get $o) (local.get $i))
        (if (local.get $bad)
          (then
            (i32.store8 (local.get $o) (i32.const 2))
            (i32.store offset=5 align=1 (local.get $o) (i32.const 14))
            (memory.copy (i32.add (local.get $o) (i32.const 9)) (i32.const 1056) (i32.const 14))
            (local.set $o (i32.add (local.get $o) (i32.const 23))))
          (else
            (i32.store8 (local.get $o) (i32.const 0))
            (local.set $o (i32.add (local.get $o) (i32.const 5)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $record)))
    (i32.store (local.get $out) (local.get $n))
    (i64.or (i64.shl (i64.extend_i32_u (local.get $out)) (i64.const 32))
            (i64.extend_i32_u (i32.sub (local.get $o) (local.get $out))))))
