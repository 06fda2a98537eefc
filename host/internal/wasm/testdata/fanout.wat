;; fanout is a flat_map whose answer depends on the first byte of the value:
;;   'E'  a record "partial", then an error "bad record" for the same input
;;        (the host must discard the record and dead-letter the input);
;;   'e'  only an error "bad record";
;;   '2'  two records: one with the input's value that inherits everything,
;;        and one that sets key "k2", timestamp 42, header h=v, value "second";
;;   'n'  one record with an absent key and an absent value;
;;   '-'  nothing (the input is dropped);
;;   anything else: keep.
(module
  ;; #include lib/frame.wati

  (data (i32.const 16) "partial")    ;; 7
  (data (i32.const 32) "bad record") ;; 10
  (data (i32.const 48) "k2")         ;; 2
  (data (i32.const 56) "h")
  (data (i32.const 60) "v")
  (data (i32.const 64) "second")     ;; 6

  (func (export "weir_abi_v1"))
  (func (export "weir_init") (param i32 i32) (result i64) (i64.const 0))

  ;; $out_full writes the record that sets every field.
  (func $out_full (param $i i32)
    ;; flags + key + timestamp + header count + header + value
    (call $out_entry (i32.const 1) (local.get $i) (i32.const 39))
    (i32.store8 (global.get $o) (i32.const 7))
    (global.set $o (i32.add (global.get $o) (i32.const 1)))
    (call $out_bytes (i32.const 48) (i32.const 2))
    (i64.store align=1 (global.get $o) (i64.const 42))
    (global.set $o (i32.add (global.get $o) (i32.const 8)))
    (i32.store align=1 (global.get $o) (i32.const 1))
    (global.set $o (i32.add (global.get $o) (i32.const 4)))
    (call $out_bytes (i32.const 56) (i32.const 1))
    (call $out_bytes (i32.const 60) (i32.const 1))
    (call $out_bytes (i32.const 64) (i32.const 6)))

  ;; $out_null writes a record with an absent key and an absent value.
  (func $out_null (param $i i32)
    (call $out_entry (i32.const 1) (local.get $i) (i32.const 9))
    (i32.store8 (global.get $o) (i32.const 1))
    (i32.store offset=1 align=1 (global.get $o) (i32.const -1))
    (i32.store offset=5 align=1 (global.get $o) (i32.const -1))
    (global.set $o (i32.add (global.get $o) (i32.const 9))))

  (func (export "weir_flat_map") (param $p i32) (param $len i32) (result i64)
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
          (if (i32.eq (local.get $c) (i32.const 69)) ;; 'E'
            (then
              (call $out_record (local.get $i) (i32.const 16) (i32.const 7))
              (call $out_error (local.get $i) (i32.const 32) (i32.const 10))
              (br $answered)))
          (if (i32.eq (local.get $c) (i32.const 101)) ;; 'e'
            (then
              (call $out_error (local.get $i) (i32.const 32) (i32.const 10))
              (br $answered)))
          (if (i32.eq (local.get $c) (i32.const 50)) ;; '2'
            (then
              (call $out_record (local.get $i) (global.get $vptr) (global.get $vlen))
              (call $out_full (local.get $i))
              (br $answered)))
          (if (i32.eq (local.get $c) (i32.const 110)) ;; 'n'
            (then
              (call $out_null (local.get $i))
              (br $answered)))
          (br_if $answered (i32.eq (local.get $c) (i32.const 45))) ;; '-'
          (call $out_keep (local.get $i)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (call $out_finish)))
