;; logger keeps every record and reports each value: a value starting with
;; 'o' is written to stdout as a line, 'w' is logged at warn level, anything
;; else at info level. weir_init logs "logger ready".
(module
  (import "weir_v1" "log" (func $log (param i32 i32 i32)))
  (import "wasi_snapshot_preview1" "fd_write"
    (func $fd_write (param i32 i32 i32 i32) (result i32)))
  ;; #include lib/frame.wati

  (data (i32.const 32) "logger ready") ;; 12
  (data (i32.const 48) "\n")

  (func (export "weir_abi_v1"))

  (func (export "weir_init") (param i32 i32) (result i64)
    (call $log (i32.const 1) (i32.const 32) (i32.const 12))
    (i64.const 0))

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
        (if (i32.eq (local.get $c) (i32.const 111)) ;; 'o'
          (then
            (i32.store (i32.const 0) (global.get $vptr))
            (i32.store (i32.const 4) (global.get $vlen))
            (i32.store (i32.const 8) (i32.const 48))
            (i32.store (i32.const 12) (i32.const 1))
            (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 2) (i32.const 24))))
          (else
            (call $log
              (select (i32.const 2) (i32.const 1) (i32.eq (local.get $c) (i32.const 119))) ;; 'w'
              (global.get $vptr) (global.get $vlen))))
        (call $out_keep (local.get $i))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (call $out_finish)))
