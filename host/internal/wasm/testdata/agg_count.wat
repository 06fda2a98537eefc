;; agg_count implements only the aggregate operation. Its accumulator is a
;; count: an i64, 8 bytes little-endian; weir_agg_create returns 0.
;;
;; weir_agg_add counts the records of each group, except that a value
;; starting with
;;   'x'  is rejected with the message "rejected x";
;;   '!'  traps (unreachable);
;;   '?'  makes the group's answer reject record 1000, which breaks the ABI.
;; weir_agg_merge adds two counts. weir_agg_result writes a count in
;; decimal, or the error "empty" for 0. In both, an accumulator that is not
;; 8 bytes gets the error "bad accumulator", and a count of 666 traps.
(module
  ;; #include lib/frame.wati

  (data (i32.const 64) "\00\00\00\00\00\00\00\00") ;; the fresh accumulator
  (data (i32.const 80) "rejected x") ;; 10 bytes
  (data (i32.const 96) "empty") ;; 5 bytes
  (data (i32.const 112) "bad accumulator") ;; 15 bytes

  (func (export "weir_abi_v1"))

  (func (export "weir_init") (param i32 i32) (result i64)
    (i64.const 0))

  (func (export "weir_agg_create") (result i64)
    (call $pack (i32.const 64) (i32.const 8)))

  ;; Writers at the output cursor $o, growing memory as needed.
  (func $put8 (param $v i32)
    (call $ensure (i32.add (global.get $o) (i32.const 1)))
    (i32.store8 (global.get $o) (local.get $v))
    (global.set $o (i32.add (global.get $o) (i32.const 1))))

  (func $put32 (param $v i32)
    (call $ensure (i32.add (global.get $o) (i32.const 4)))
    (i32.store align=1 (global.get $o) (local.get $v))
    (global.set $o (i32.add (global.get $o) (i32.const 4))))

  ;; $put_bytes writes a u32 length and the bytes.
  (func $put_bytes (param $ptr i32) (param $len i32)
    (call $ensure (i32.add (global.get $o) (i32.add (local.get $len) (i32.const 4))))
    (call $out_bytes (local.get $ptr) (local.get $len)))

  ;; $put_acc writes an accumulator: length 8 and the count.
  (func $put_acc (param $v i64)
    (call $put32 (i32.const 8))
    (call $ensure (i32.add (global.get $o) (i32.const 8)))
    (i64.store align=1 (global.get $o) (local.get $v))
    (global.set $o (i32.add (global.get $o) (i32.const 8))))

  ;; $put_decimal writes an ok entry whose value is $v in decimal.
  (func $put_decimal (param $v i64)
    (local $p i32)
    (local.set $p (i32.const 200)) ;; digits go backwards from 200
    (loop $digit
      (local.set $p (i32.sub (local.get $p) (i32.const 1)))
      (i32.store8 (local.get $p)
        (i32.add (i32.const 48) (i32.wrap_i64 (i64.rem_u (local.get $v) (i64.const 10)))))
      (local.set $v (i64.div_u (local.get $v) (i64.const 10)))
      (br_if $digit (i64.ne (local.get $v) (i64.const 0))))
    (call $put8 (i32.const 0))
    (call $put_bytes (local.get $p) (i32.sub (i32.const 200) (local.get $p))))

  ;; $put_error writes an error entry.
  (func $put_error (param $ptr i32) (param $len i32)
    (call $put8 (i32.const 1))
    (call $put_bytes (local.get $ptr) (local.get $len)))

  ;; $acc_at reads the accumulator at $r: its count, or -1 when it is not
  ;; 8 bytes. It sets $next to the offset after it, and traps on 666.
  (global $next (mut i32) (i32.const 0))
  (func $acc_at (param $r i32) (result i64)
    (local $len i32) (local $v i64)
    (local.set $len (i32.load (local.get $r)))
    (global.set $next (i32.add (i32.add (local.get $r) (i32.const 4)) (local.get $len)))
    (if (i32.ne (local.get $len) (i32.const 8))
      (then (return (i64.const -1))))
    (local.set $v (i64.load (i32.add (local.get $r) (i32.const 4))))
    (if (i64.eq (local.get $v) (i64.const 666))
      (then unreachable))
    (local.get $v))

  (func (export "weir_agg_add") (param $p i32) (param $len i32) (result i64)
    (local $groups i32) (local $g i32) (local $r i32) (local $n i32) (local $i i32)
    (local $count i64) (local $errpos i32) (local $nerr i32) (local $c i32)
    (local.set $groups (i32.load (local.get $p)))
    (local.set $r (i32.add (local.get $p) (i32.const 4)))
    (call $out_begin (i32.add (local.get $p) (local.get $len)))
    (block $gdone
      (loop $gnext
        (br_if $gdone (i32.ge_u (local.get $g) (local.get $groups)))
        ;; the group's accumulator (8 bytes assumed) and record count
        (local.set $count (i64.load (i32.add (local.get $r) (i32.const 4))))
        (local.set $r (i32.add (i32.add (local.get $r) (i32.const 4)) (i32.load (local.get $r))))
        (local.set $n (i32.load (local.get $r)))
        (local.set $r (i32.add (local.get $r) (i32.const 4)))
        ;; the error count, written when known
        (local.set $errpos (global.get $o))
        (call $put32 (i32.const 0))
        (local.set $nerr (i32.const 0))
        (local.set $i (i32.const 0))
        (block $rdone
          (loop $rnext
            (br_if $rdone (i32.ge_u (local.get $i) (local.get $n)))
            (local.set $r (call $read_record (local.get $r)))
            (local.set $c (call $first_byte))
            (if (i32.eq (local.get $c) (i32.const 33)) ;; '!'
              (then unreachable))
            (if (i32.eq (local.get $c) (i32.const 120)) ;; 'x'
              (then
                (call $put32 (local.get $i))
                (call $put_bytes (i32.const 80) (i32.const 10))
                (local.set $nerr (i32.add (local.get $nerr) (i32.const 1))))
              (else
                (if (i32.eq (local.get $c) (i32.const 63)) ;; '?'
                  (then
                    (call $put32 (i32.const 1000))
                    (call $put_bytes (i32.const 80) (i32.const 0))
                    (local.set $nerr (i32.add (local.get $nerr) (i32.const 1))))
                  (else
                    (local.set $count (i64.add (local.get $count) (i64.const 1)))))))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $rnext)))
        (i32.store align=1 (local.get $errpos) (local.get $nerr))
        (call $put_acc (local.get $count))
        (local.set $g (i32.add (local.get $g) (i32.const 1)))
        (br $gnext)))
    (global.set $count (local.get $groups))
    (call $out_finish))

  (func (export "weir_agg_merge") (param $p i32) (param $len i32) (result i64)
    (local $n i32) (local $i i32) (local $r i32) (local $a i64) (local $b i64)
    (local.set $n (i32.load (local.get $p)))
    (local.set $r (i32.add (local.get $p) (i32.const 4)))
    (call $out_begin (i32.add (local.get $p) (local.get $len)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $a (call $acc_at (local.get $r)))
        (local.set $b (call $acc_at (global.get $next)))
        (local.set $r (global.get $next))
        (if (i32.or (i64.lt_s (local.get $a) (i64.const 0)) (i64.lt_s (local.get $b) (i64.const 0)))
          (then (call $put_error (i32.const 112) (i32.const 15)))
          (else
            (call $put8 (i32.const 0))
            (call $put_acc (i64.add (local.get $a) (local.get $b)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (global.set $count (local.get $n))
    (call $out_finish))

  (func (export "weir_agg_result") (param $p i32) (param $len i32) (result i64)
    (local $n i32) (local $i i32) (local $r i32) (local $a i64)
    (local.set $n (i32.load (local.get $p)))
    (local.set $r (i32.add (local.get $p) (i32.const 4)))
    (call $out_begin (i32.add (local.get $p) (local.get $len)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $a (call $acc_at (local.get $r)))
        (local.set $r (global.get $next))
        (if (i64.lt_s (local.get $a) (i64.const 0))
          (then (call $put_error (i32.const 112) (i32.const 15)))
          (else
            (if (i64.eqz (local.get $a))
              (then (call $put_error (i32.const 96) (i32.const 5)))
              (else (call $put_decimal (local.get $a))))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (global.set $count (local.get $n))
    (call $out_finish)))
