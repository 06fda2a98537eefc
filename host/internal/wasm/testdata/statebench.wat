;; statebench is a map that makes exactly one kind of state access per
;; record, for the state benchmarks (state_bench_test.go). Its config picks
;; the access, by the byte at offset 7, so it must be one of
;;   {"op":"get"}   state_get of slot "v"; answers the value read, or an
;;                  empty value when the slot is absent;
;;   {"op":"put"}   state_put of the record's value into slot "v"; answers
;;                  the record's value;
;;   {"op":"rmw"}   state_get of slot "v", then state_put of the record's
;;                  value into it; answers the value read (empty if absent);
;;   {"op":"none"}  no state call; answers the record's value (the baseline:
;;                  the same output as put, without the host call).
;; Any other config fails weir_init. Values read must fit in 256 bytes; a
;; larger value, or any other failing status, traps.
(module
  (import "weir_v1" "state_get" (func $get (param i32 i32 i32 i32 i32) (result i32)))
  (import "weir_v1" "state_put" (func $put (param i32 i32 i32 i32 i32) (result i32)))
  ;; #include lib/frame.wati

  (global $mode (mut i32) (i32.const 0))

  (data (i32.const 128) "v")              ;; the state slot, 1 byte
  (data (i32.const 144) "unknown config") ;; 14
  ;; 1024: the 256-byte buffer state_get reads into

  (func (export "weir_abi_v1"))

  (func (export "weir_init") (param $p i32) (param $len i32) (result i64)
    (local $c i32)
    (if (i32.ge_u (local.get $len) (i32.const 8))
      (then (local.set $c (i32.load8_u offset=7 (local.get $p)))))
    (if (i32.or
          (i32.or (i32.eq (local.get $c) (i32.const 103))   ;; 'g'
                  (i32.eq (local.get $c) (i32.const 112)))  ;; 'p'
          (i32.or (i32.eq (local.get $c) (i32.const 114))   ;; 'r'
                  (i32.eq (local.get $c) (i32.const 110)))) ;; 'n'
      (then
        (global.set $mode (local.get $c))
        (return (i64.const 0))))
    (call $pack (i32.const 144) (i32.const 14)))

  ;; $read reads slot "v" of record $i into the buffer at 1024 and returns
  ;; the value's length, 0 when absent.
  (func $read (param $i i32) (result i32)
    (local $st i32)
    (local.set $st (call $get (local.get $i) (i32.const 128) (i32.const 1) (i32.const 1024) (i32.const 256)))
    (if (i32.eq (local.get $st) (i32.const -1)) ;; not found
      (then (return (i32.const 0))))
    (if (i32.gt_u (local.get $st) (i32.const 256)) ;; an error, or too big
      (then unreachable))
    (local.get $st))

  ;; $write writes the current record's value into slot "v" of record $i.
  (func $write (param $i i32)
    (if (i32.ne
          (call $put (local.get $i) (i32.const 128) (i32.const 1) (global.get $vptr) (global.get $vlen))
          (i32.const 0))
      (then unreachable)))

  (func (export "weir_map") (param $p i32) (param $len i32) (result i64)
    (local $n i32) (local $i i32) (local $r i32) (local $mode i32) (local $got i32)
    (local.set $mode (global.get $mode))
    (local.set $n (i32.load (local.get $p)))
    (local.set $r (i32.add (local.get $p) (i32.const 4)))
    (call $out_begin (i32.add (local.get $p) (local.get $len)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $r (call $read_record (local.get $r)))
        (block $answered
          (if (i32.eq (local.get $mode) (i32.const 103)) ;; 'g'
            (then
              (call $out_record (local.get $i) (i32.const 1024) (call $read (local.get $i)))
              (br $answered)))
          (if (i32.eq (local.get $mode) (i32.const 114)) ;; 'r'
            (then
              (local.set $got (call $read (local.get $i)))
              (call $write (local.get $i))
              (call $out_record (local.get $i) (i32.const 1024) (local.get $got))
              (br $answered)))
          (if (i32.eq (local.get $mode) (i32.const 112)) ;; 'p'
            (then (call $write (local.get $i))))
          ;; 'p' and 'n'
          (call $out_record (local.get $i) (global.get $vptr) (global.get $vlen)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (call $out_finish)))
