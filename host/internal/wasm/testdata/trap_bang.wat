;; trap_bang keeps every record, except:
;;   '!'  writes "poison record: <value>" to stderr, then traps (unreachable);
;;   '#'  grows memory by 100 pages, trapping when the limit forbids it;
;;   '$'  exits with WASI proc_exit(3).
;; weir_init rejects a config starting with 'x' (for recovery-failure tests).
(module
  (import "wasi_snapshot_preview1" "fd_write"
    (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit"
    (func $proc_exit (param i32)))
  ;; #include lib/frame.wati

  (data (i32.const 32) "poison record: ") ;; 15 bytes
  (data (i32.const 48) "\n")
  (data (i32.const 52) "rejected") ;; 8 bytes

  (func (export "weir_abi_v1"))

  (func (export "weir_init") (param $p i32) (param $n i32) (result i64)
    (if (i32.and
          (i32.gt_u (local.get $n) (i32.const 0))
          (i32.eq (i32.load8_u (local.get $p)) (i32.const 120))) ;; 'x'
      (then (return (call $pack (i32.const 52) (i32.const 8)))))
    (i64.const 0))

  ;; $poison writes the current value to stderr with a prefix, then traps.
  (func $poison
    ;; iovecs at 0: prefix, value, newline; nwritten at 24
    (i32.store (i32.const 0) (i32.const 32))
    (i32.store (i32.const 4) (i32.const 15))
    (i32.store (i32.const 8) (global.get $vptr))
    (i32.store (i32.const 12) (global.get $vlen))
    (i32.store (i32.const 16) (i32.const 48))
    (i32.store (i32.const 20) (i32.const 1))
    (drop (call $fd_write (i32.const 2) (i32.const 0) (i32.const 3) (i32.const 24)))
    unreachable)

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
        (if (i32.eq (local.get $c) (i32.const 33)) ;; '!'
          (then (call $poison)))
        (if (i32.eq (local.get $c) (i32.const 35)) ;; '#'
          (then
            (if (i32.eq (memory.grow (i32.const 100)) (i32.const -1))
              (then unreachable))))
        (if (i32.eq (local.get $c) (i32.const 36)) ;; '$'
          (then (call $proc_exit (i32.const 3))))
        (call $out_keep (local.get $i))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (call $out_finish)))
