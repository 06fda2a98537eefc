;; abort is built like an AssemblyScript module: it imports env.abort and
;; calls it, with AssemblyScript strings (UTF-16, byte length at ptr-4), for
;; a value starting with '!'. Other records are kept.
(module
  (import "env" "abort" (func $abort (param i32 i32 i32 i32)))
  ;; #include lib/frame.wati

  (data (i32.const 60) "\12\00\00\00b\00a\00d\00 \00i\00n\00p\00u\00t\00")  ;; "bad input" at 64
  (data (i32.const 124) "\10\00\00\00i\00n\00d\00e\00x\00.\00t\00s\00")     ;; "index.ts" at 128

  (func (export "weir_abi_v1"))
  (func (export "weir_init") (param i32 i32) (result i64) (i64.const 0))

  (func (export "weir_map") (param $p i32) (param $len i32) (result i64)
    (local $n i32) (local $i i32) (local $r i32)
    (local.set $n (i32.load (local.get $p)))
    (local.set $r (i32.add (local.get $p) (i32.const 4)))
    (call $out_begin (i32.add (local.get $p) (local.get $len)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $r (call $read_record (local.get $r)))
        (if (i32.eq (call $first_byte) (i32.const 33)) ;; '!'
          (then (call $abort (i32.const 64) (i32.const 128) (i32.const 12) (i32.const 5))))
        (call $out_keep (local.get $i))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (call $out_finish)))
