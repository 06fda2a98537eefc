;; counter is a stateful map that counts records per record key, in the
;; state entry "count" (a u64, little-endian). Each record's new value is
;; the 8-byte count. Depending on the first byte of the value:
;;   '!'  increments, then traps (the increment must be discarded);
;;   'E'  increments, then rejects the record with "rejected";
;;   'R'  deletes the count and answers 0;
;;   'S'  answers three i32 statuses: state_get with a bad record index,
;;        state_get with a key outside memory, state_put with a key over the
;;        size limit;
;;   anything else: increments and answers the new count.
;; weir_init calls state_get and keeps the status in the global init_status.
(module
  (import "weir_v1" "state_get" (func $get (param i32 i32 i32 i32 i32) (result i32)))
  (import "weir_v1" "state_put" (func $put (param i32 i32 i32 i32 i32) (result i32)))
  (import "weir_v1" "state_delete" (func $del (param i32 i32 i32) (result i32)))
  ;; #include lib/frame.wati

  (global $init_status (export "init_status") (mut i32) (i32.const 1))

  (data (i32.const 128) "count")    ;; 5
  (data (i32.const 144) "rejected") ;; 8
  ;; 256: the 8-byte count; 272: three statuses

  (func (export "weir_abi_v1"))

  (func (export "weir_init") (param i32 i32) (result i64)
    (global.set $init_status
      (call $get (i32.const 0) (i32.const 128) (i32.const 5) (i32.const 256) (i32.const 8)))
    (i64.const 0))

  ;; $increment adds one to the count of record $i and leaves it at 256.
  (func $increment (param $i i32)
    (local $st i32)
    (local.set $st (call $get (local.get $i) (i32.const 128) (i32.const 5) (i32.const 256) (i32.const 8)))
    (if (i32.eq (local.get $st) (i32.const -1)) ;; not found
      (then (i64.store (i32.const 256) (i64.const 0)))
      (else (if (i32.ne (local.get $st) (i32.const 8)) (then unreachable))))
    (i64.store (i32.const 256) (i64.add (i64.load (i32.const 256)) (i64.const 1)))
    (if (i32.ne
          (call $put (local.get $i) (i32.const 128) (i32.const 5) (i32.const 256) (i32.const 8))
          (i32.const 0))
      (then unreachable)))

  (func (export "weir_map") (param $p i32) (param $len i32) (result i64)
    (local $n i32) (local $i i32) (local $r i32) (local $c i32)
    (local.set $n (i32.load (local.get $p)))
    (local.set $r (i32.add (local.get $p) (i32.const 4)))
    (call $out_begin (i32.add (local.get $p) (local.get $len)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $r (call $read_record (local.get $r)))
        (local.set $c (call $first_byte))
        (block $answered
          (if (i32.eq (local.get $c) (i32.const 82)) ;; 'R'
            (then
              (if (i32.ne (call $del (local.get $i) (i32.const 128) (i32.const 5)) (i32.const 0))
                (then unreachable))
              (i64.store (i32.const 256) (i64.const 0))
              (call $out_record (local.get $i) (i32.const 256) (i32.const 8))
              (br $answered)))
          (if (i32.eq (local.get $c) (i32.const 83)) ;; 'S'
            (then
              (i32.store (i32.const 272)
                (call $get (i32.const 999) (i32.const 128) (i32.const 5) (i32.const 256) (i32.const 8)))
              (i32.store (i32.const 276)
                (call $get (local.get $i) (i32.const -16) (i32.const 64) (i32.const 256) (i32.const 8)))
              (i32.store (i32.const 280)
                (call $put (local.get $i) (i32.const 0) (i32.const 65537) (i32.const 256) (i32.const 8)))
              (call $out_record (local.get $i) (i32.const 272) (i32.const 12))
              (br $answered)))
          (call $increment (local.get $i))
          (if (i32.eq (local.get $c) (i32.const 33)) ;; '!'
            (then unreachable))
          (if (i32.eq (local.get $c) (i32.const 69)) ;; 'E'
            (then
              (call $out_error (local.get $i) (i32.const 144) (i32.const 8))
              (br $answered)))
          (call $out_record (local.get $i) (i32.const 256) (i32.const 8)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (call $out_finish)))
