;; hostile behaves as a buggy or malicious plugin would, on the records whose
;; value starts with one of these bytes, and keeps every other record:
;;   '@'  loops for ever;
;;   'z'  sleeps an hour in WASI poll_oneoff;
;;   '!'  traps;
;;   'M'  grows its memory a page at a time, touching all of each page,
;;        until the host refuses, then traps (as a guest out of memory does);
;;   'S'  writes a 16 MiB state value 200 times to one slot;
;;   'K'  writes a 16 MiB state value under 200 different keys;
;;   'V'  writes one state value of 16 MiB + 1 byte;
;;   'F'  (flat_map) emits ten million copies of the record.
;; weir_init reads its config, a JSON string:
;;   "loop"                 loops for ever;
;;   "window FROM UNTIL"    loops for ever when the wall clock, in epoch
;;                          milliseconds, is in [FROM, UNTIL) as it starts;
;;   anything else          accepts.
(module
  (import "weir_v1" "state_put" (func $put (param i32 i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "clock_time_get" (func $clock (param i32 i64 i32) (result i32)))
  ;; #include lib/frame.wati

  ;; 1024: a poll_oneoff clock subscription; 2048: its event; 4096: nevents.
  ;; 4104: the clock's reading. 4112: state keys "k" + one byte.
  ;; The 16 MiB values live at [32 MiB, 48 MiB + 1).
  (global $big i32 (i32.const 33554432))
  (global $bigLen i32 (i32.const 16777216))

  (func (export "weir_abi_v1"))

  (func (export "weir_init") (param $p i32) (param $len i32) (result i64)
    (local $from i64) (local $until i64) (local $now i64)
    (if (i32.lt_u (local.get $len) (i32.const 3)) (then (return (i64.const 0))))
    (if (i32.eq (i32.load8_u offset=1 (local.get $p)) (i32.const 108)) ;; "l(oop)"
      (then (loop $forever (br $forever))))
    (if (i32.ne (i32.load8_u offset=1 (local.get $p)) (i32.const 119)) ;; "w(indow)"
      (then (return (i64.const 0))))
    (local.set $from (call $number (local.get $p) (local.get $len) (i32.const 1)))
    (local.set $until (call $number (local.get $p) (local.get $len) (i32.const 2)))
    (drop (call $clock (i32.const 0) (i64.const 1) (i32.const 4104)))
    (local.set $now (i64.div_u (i64.load (i32.const 4104)) (i64.const 1000000)))
    (if (i32.and (i64.ge_u (local.get $now) (local.get $from)) (i64.lt_u (local.get $now) (local.get $until)))
      (then (loop $forever (br $forever))))
    (i64.const 0))

  ;; $number parses the $nth run of decimal digits in [$p, $p+$len).
  (func $number (param $p i32) (param $len i32) (param $nth i32) (result i64)
    (local $end i32) (local $c i32) (local $v i64) (local $in i32)
    (local.set $end (i32.add (local.get $p) (local.get $len)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $c (i32.sub (i32.load8_u (local.get $p)) (i32.const 48)))
        (if (i32.lt_u (local.get $c) (i32.const 10))
          (then
            (if (i32.eqz (local.get $in))
              (then
                (local.set $in (i32.const 1))
                (local.set $nth (i32.sub (local.get $nth) (i32.const 1)))
                (local.set $v (i64.const 0))))
            (local.set $v (i64.add (i64.mul (local.get $v) (i64.const 10)) (i64.extend_i32_u (local.get $c)))))
          (else
            (if (i32.and (local.get $in) (i32.eqz (local.get $nth))) (then (br $done)))
            (local.set $in (i32.const 0))))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $next)))
    (local.get $v))

  ;; $sleep asks poll_oneoff for an hour on the monotonic clock.
  (func $sleep
    (i64.store (i32.const 1024) (i64.const 0))               ;; userdata
    (i32.store8 offset=8 (i32.const 1024) (i32.const 0))     ;; tag: clock
    (i32.store offset=16 (i32.const 1024) (i32.const 1))     ;; monotonic
    (i64.store offset=24 (i32.const 1024) (i64.const 3600000000000))
    (i64.store offset=32 (i32.const 1024) (i64.const 0))     ;; precision
    (i32.store16 offset=40 (i32.const 1024) (i32.const 0))   ;; relative
    (drop (call $poll (i32.const 1024) (i32.const 2048) (i32.const 1) (i32.const 4096))))

  ;; $bomb grows memory a page at a time, writing to every 4 KiB of each
  ;; new page (so that the host must back all of it), until a grow fails;
  ;; then it traps.
  (func $bomb
    (local $page i32) (local $at i32)
    (loop $more
      (local.set $page (memory.grow (i32.const 1)))
      (if (i32.eq (local.get $page) (i32.const -1)) (then unreachable))
      (local.set $at (i32.shl (local.get $page) (i32.const 16)))
      (loop $touch
        (i32.store8 (local.get $at) (i32.const 1))
        (local.set $at (i32.add (local.get $at) (i32.const 4096)))
        (br_if $touch (i32.and (local.get $at) (i32.const 65535))))
      (br $more)))

  ;; $puts writes the 16 MiB value (plus $extra bytes) $n times for record
  ;; $i, under the key "k" + a byte that changes each time when $vary is
  ;; set. It returns the first status that is not OK, or 0.
  (func $puts (param $i i32) (param $n i32) (param $vary i32) (param $extra i32) (result i32)
    (local $st i32) (local $j i32)
    (call $ensure (i32.add (i32.add (global.get $big) (global.get $bigLen)) (local.get $extra)))
    (i32.store8 (i32.const 4112) (i32.const 107)) ;; 'k'
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
        (i32.store8 (i32.const 4113) (i32.mul (local.get $j) (local.get $vary)))
        (local.set $st (call $put (local.get $i) (i32.const 4112) (i32.const 2)
          (global.get $big) (i32.add (global.get $bigLen) (local.get $extra))))
        (br_if $done (local.get $st))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $next)))
    (local.get $st))

  ;; $act does what the first byte of the current record asks, then keeps
  ;; it; 'F' is left to weir_flat_map.
  (func $act (param $i i32) (param $c i32)
    (if (i32.eq (local.get $c) (i32.const 64)) (then (loop $forever (br $forever)))) ;; '@'
    (if (i32.eq (local.get $c) (i32.const 122)) (then (call $sleep)))                ;; 'z'
    (if (i32.eq (local.get $c) (i32.const 33)) (then unreachable))                   ;; '!'
    (if (i32.eq (local.get $c) (i32.const 77)) (then (call $bomb)))                  ;; 'M'
    (if (i32.eq (local.get $c) (i32.const 83))                                       ;; 'S'
      (then (drop (call $puts (local.get $i) (i32.const 200) (i32.const 0) (i32.const 0)))))
    (if (i32.eq (local.get $c) (i32.const 75))                                       ;; 'K'
      (then (drop (call $puts (local.get $i) (i32.const 200) (i32.const 1) (i32.const 0)))))
    (if (i32.eq (local.get $c) (i32.const 86))                                       ;; 'V'
      (then (drop (call $puts (local.get $i) (i32.const 1) (i32.const 0) (i32.const 1))))))

  (func (export "weir_map") (param $p i32) (param $len i32) (result i64)
    (local $n i32) (local $i i32) (local $r i32)
    (local.set $n (i32.load (local.get $p)))
    (local.set $r (i32.add (local.get $p) (i32.const 4)))
    (call $out_begin (i32.add (local.get $p) (local.get $len)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $r (call $read_record (local.get $r)))
        (call $act (local.get $i) (call $first_byte))
        (call $out_keep (local.get $i))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (call $out_finish))

  (func (export "weir_flat_map") (param $p i32) (param $len i32) (result i64)
    (local $n i32) (local $i i32) (local $r i32) (local $k i32)
    (local.set $n (i32.load (local.get $p)))
    (local.set $r (i32.add (local.get $p) (i32.const 4)))
    (call $out_begin (i32.add (local.get $p) (local.get $len)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $r (call $read_record (local.get $r)))
        (call $act (local.get $i) (call $first_byte))
        (if (i32.eq (call $first_byte) (i32.const 70)) ;; 'F'
          (then
            (local.set $k (i32.const 10000000))
            (call $ensure (i32.add (global.get $o) (i32.mul (local.get $k) (i32.const 5))))
            (loop $copies
              (call $out_keep (local.get $i))
              (local.set $k (i32.sub (local.get $k) (i32.const 1)))
              (br_if $copies (local.get $k))))
          (else (call $out_keep (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (call $out_finish)))
