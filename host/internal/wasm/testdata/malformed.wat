;; malformed answers like identity unless a record's value starts with:
;;   '?'  the frame declares one more entry than it holds (truncated);
;;   '^'  the last entry names an input index past the batch (order error);
;;   '%'  the returned pointer lies outside memory.
(module
  ;; #include lib/frame.wati

  (func (export "weir_abi_v1"))
  (func (export "weir_init") (param i32 i32) (result i64) (i64.const 0))

  (func (export "weir_map") (param $p i32) (param $len i32) (result i64)
    (local $n i32) (local $i i32) (local $r i32) (local $c i32)
    (local $short i32) (local $past i32) (local $wild i32)
    (local.set $n (i32.load (local.get $p)))
    (local.set $r (i32.add (local.get $p) (i32.const 4)))
    (call $out_begin (i32.add (local.get $p) (local.get $len)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $r (call $read_record (local.get $r)))
        (local.set $c (call $first_byte))
        (if (i32.eq (local.get $c) (i32.const 63)) (then (local.set $short (i32.const 1)))) ;; '?'
        (if (i32.eq (local.get $c) (i32.const 94)) (then (local.set $past (i32.const 1))))  ;; '^'
        (if (i32.eq (local.get $c) (i32.const 37)) (then (local.set $wild (i32.const 1))))  ;; '%'
        (call $out_keep (local.get $i))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (if (local.get $past)
      (then
        ;; rewrite the last entry's index to n
        (i32.store offset=1 align=1 (i32.sub (global.get $o) (i32.const 5)) (local.get $n))))
    (if (local.get $short)
      (then (global.set $count (i32.add (global.get $count) (i32.const 1)))))
    (if (local.get $wild)
      (then (return (call $pack (i32.const -16) (i32.const 64)))))
    (call $out_finish)))
