;; words, the conformance flat_map, written by hand from abi/ABI.md alone:
;; each record's value is split on the ASCII whitespace bytes (space, \t,
;; \n, \v, \f, \r) and every non-empty word is emitted, in order, as a
;; record that sets only its value. It takes no config.
;;
;; Memory: the host's input region (weir_alloc) starts at 64 KiB; a batch's
;; output frame is written right after its input, 8-byte aligned, growing
;; memory as needed.
(module
  (memory (export "memory") 2)

  (global $in_cap (mut i32) (i32.const 0)) ;; bytes reserved for input at 64 KiB

  (func (export "weir_abi_v1"))

  ;; ensure grows memory so that [0, end) is addressable, or traps.
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
    (global.set $in_cap (local.get $size))
    (i32.const 65536))

  ;; §4: success is an empty region. Any config but {} is refused, with
  ;; the message at 1024.
  (data (i32.const 1024) "this module takes no config")
  (func (export "weir_init") (param $p i32) (param $len i32) (result i64)
    (if (i32.and (i32.eq (local.get $len) (i32.const 2))
                 (i32.eq (i32.load16_u (local.get $p)) (i32.const 0x7d7b))) ;; "{}"
      (then (return (i64.const 0))))
    (i64.or (i64.shl (i64.const 1024) (i64.const 32)) (i64.const 27)))

  ;; is_space reports whether byte $c is ASCII whitespace.
  (func $is_space (param $c i32) (result i32)
    (i32.or (i32.eq (local.get $c) (i32.const 32))
            (i32.and (i32.ge_u (local.get $c) (i32.const 9)) (i32.le_u (local.get $c) (i32.const 13)))))

  ;; §5.1 in, §5.2 out: a record entry (kind 1, flags 0, value) per word.
  (func (export "weir_flat_map") (param $p i32) (param $len i32) (result i64)
    (local $n i32) (local $i i32) (local $r i32) (local $klen i32)
    (local $v i32) (local $vlen i32) (local $h i32) (local $hn i32)
    (local $out i32) (local $o i32) (local $count i32)
    (local $j i32) (local $start i32)
    (local.set $n (i32.load (local.get $p)))
    ;; the output frame: after the input, 8-byte aligned. A word costs at
    ;; most 14 bytes of entry per byte of value, so reserve 14 × len.
    (local.set $out (i32.and (i32.add (i32.add (local.get $p) (local.get $len)) (i32.const 7)) (i32.const -8)))
    (call $ensure (i32.add (local.get $out) (i32.add (i32.const 4) (i32.mul (local.get $len) (i32.const 14)))))
    (local.set $o (i32.add (local.get $out) (i32.const 4)))
    (local.set $r (i32.add (local.get $p) (i32.const 4)))
    (block $done
      (loop $record
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        ;; i64 timestamp, u32 key_len, key, u32 value_len, value, headers
        (local.set $r (i32.add (local.get $r) (i32.const 8)))
        (local.set $klen (i32.load (local.get $r)))
        (local.set $r (i32.add (local.get $r) (i32.const 4)))
        (if (i32.ne (local.get $klen) (i32.const -1))
          (then (local.set $r (i32.add (local.get $r) (local.get $klen)))))
        (local.set $vlen (i32.load (local.get $r)))
        (local.set $r (i32.add (local.get $r) (i32.const 4)))
        (local.set $v (local.get $r))
        (if (i32.eq (local.get $vlen) (i32.const -1))
          (then (local.set $vlen (i32.const 0)))
          (else (local.set $r (i32.add (local.get $r) (local.get $vlen)))))
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
        ;; split the value
        (local.set $j (i32.const 0))
        (local.set $start (i32.const -1))
        (block $vdone
          (loop $byte
            (if (i32.or (i32.ge_u (local.get $j) (local.get $vlen))
                        (call $is_space (i32.load8_u (i32.add (local.get $v) (local.get $j)))))
              (then
                (if (i32.ge_s (local.get $start) (i32.const 0))
                  (then
                    ;; kind 1, input index, flags 0, u32 len, bytes
                    (i32.store8 (local.get $o) (i32.const 1))
                    (i32.store offset=1 align=1 (local.get $o) (local.get $i))
                    (i32.store8 offset=5 (local.get $o) (i32.const 0))
                    (i32.store offset=6 align=1 (local.get $o) (i32.sub (local.get $j) (local.get $start)))
                    (memory.copy (i32.add (local.get $o) (i32.const 10))
                                 (i32.add (local.get $v) (local.get $start))
                                 (i32.sub (local.get $j) (local.get $start)))
                    (local.set $o (i32.add (local.get $o) (i32.add (i32.const 10) (i32.sub (local.get $j) (local.get $start)))))
                    (local.set $count (i32.add (local.get $count) (i32.const 1)))
                    (local.set $start (i32.const -1)))))
              (else
                (if (i32.lt_s (local.get $start) (i32.const 0))
                  (then (local.set $start (local.get $j))))))
            (br_if $vdone (i32.ge_u (local.get $j) (local.get $vlen)))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $byte)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $record)))
    (i32.store (local.get $out) (local.get $count))
    (i64.or (i64.shl (i64.extend_i32_u (local.get $out)) (i64.const 32))
            (i64.extend_i32_u (i32.sub (local.get $o) (local.get $out))))))
