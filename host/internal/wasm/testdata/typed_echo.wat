;; typed_echo is a typed module (ABI §14) for the host's tests. Its config
;; is one mode byte followed by a declaration frame (§14.2), which
;; weir_fields returns as is, so a test declares what it likes. It
;; implements map and flat_map, by mode:
;;
;;   e  echo: each record is answered by one patch, flags new, key and
;;      timestamp, setting the record's key to its key column value and
;;      its timestamp to the timestamp column's plus 1, and, for each
;;      declared field k, the member named by the byte 'a'+k to the field:
;;      its value when present, null when null, the strings "missing" and
;;      "mismatch" otherwise. It also stores the timestamp, 8 bytes, in the
;;      state slot "t" of each record, by its typed batch index;
;;   p  patch: each record is answered by a patch of its own value setting
;;      "a.b" to the int 1 (which cannot apply to {"a":5});
;;   r  raw: each record is answered by a patch setting "a" to the raw
;;      value `nope`, which is not JSON (a guest bug);
;;   k  every record is kept (for benchmarks);
;;   x  the output frame answers no record (for a map, a guest bug);
;;   t  weir_fields traps.
(module
  (import "weir_v1" "state_put" (func $put (param i32 i32 i32 i32 i32) (result i32)))
  ;; #include lib/frame.wati

  (global $mode (mut i32) (i32.const 0))
  (global $cfg_len (mut i32) (i32.const 0))

  (data (i32.const 1024) "missing")
  (data (i32.const 1040) "mismatch")
  (data (i32.const 1056) "nope")
  (data (i32.const 1064) "a.b")
  (data (i32.const 1072) "the config is empty or over 32 KiB")
  (data (i32.const 1112) "t")

  (func (export "weir_abi_v1"))

  ;; The config is kept at 8192.
  (func (export "weir_init") (param $p i32) (param $len i32) (result i64)
    (if (i32.or (i32.eqz (local.get $len)) (i32.gt_u (local.get $len) (i32.const 32768)))
      (then (return (call $pack (i32.const 1072) (i32.const 34)))))
    (memory.copy (i32.const 8192) (local.get $p) (local.get $len))
    (global.set $mode (i32.load8_u (local.get $p)))
    (global.set $cfg_len (local.get $len))
    (i64.const 0))

  (func (export "weir_fields") (result i64)
    (if (i32.eq (global.get $mode) (i32.const 0x74)) (then unreachable))
    (call $pack (i32.const 8193) (i32.sub (global.get $cfg_len) (i32.const 1))))

  ;; $col returns the address of column k's table entry in the frame at $p.
  (func $col (param $p i32) (param $k i32) (result i32)
    (i32.add (local.get $p) (i32.add (i32.const 8) (i32.shl (local.get $k) (i32.const 4)))))

  ;; $status returns record r's status in column entry $c of the frame $p.
  (func $status (param $p i32) (param $c i32) (param $r i32) (result i32)
    (i32.load8_u (i32.add (i32.add (local.get $p) (i32.load offset=4 (local.get $c))) (local.get $r))))

  ;; $var_bytes writes record r's value of the variable-length column entry
  ;; $c as a u32 length and bytes.
  (func $var_bytes (param $p i32) (param $c i32) (param $r i32)
    (local $offs i32) (local $lo i32)
    (local.set $offs (i32.add (i32.add (local.get $p) (i32.load offset=8 (local.get $c)))
                              (i32.shl (local.get $r) (i32.const 2))))
    (local.set $lo (i32.load (local.get $offs)))
    (call $out_bytes
      (i32.add (i32.add (local.get $p) (i32.load offset=12 (local.get $c))) (local.get $lo))
      (i32.sub (i32.load offset=4 (local.get $offs)) (local.get $lo))))

  ;; $set_field writes the set operation of field k of record r.
  (func $set_field (param $p i32) (param $k i32) (param $r i32)
    (local $c i32) (local $s i32) (local $t i32) (local $v i32)
    (local.set $c (call $col (local.get $p) (i32.add (local.get $k) (i32.const 2))))
    (local.set $s (call $status (local.get $p) (local.get $c) (local.get $r)))
    (local.set $t (i32.load (local.get $c)))
    (local.set $v (i32.add (local.get $p) (i32.load offset=8 (local.get $c))))
    ;; op set, path of one byte 'a'+k
    (i32.store8 (global.get $o) (i32.const 1))
    (i32.store offset=1 align=1 (global.get $o) (i32.const 1))
    (i32.store8 offset=5 (global.get $o) (i32.add (i32.const 0x61) (local.get $k)))
    (global.set $o (i32.add (global.get $o) (i32.const 6)))
    (block $written
      (if (i32.eq (local.get $s) (i32.const 1))
        (then
          (i32.store8 (global.get $o) (i32.const 0))
          (global.set $o (i32.add (global.get $o) (i32.const 1)))
          (br $written)))
      (if (i32.ge_u (local.get $s) (i32.const 2))
        (then
          (i32.store8 (global.get $o) (i32.const 4))
          (global.set $o (i32.add (global.get $o) (i32.const 1)))
          (if (i32.eq (local.get $s) (i32.const 2))
            (then (call $out_bytes (i32.const 1024) (i32.const 7)))
            (else (call $out_bytes (i32.const 1040) (i32.const 8))))
          (br $written)))
      (i32.store8 (global.get $o) (local.get $t))
      (global.set $o (i32.add (global.get $o) (i32.const 1)))
      (if (i32.le_u (local.get $t) (i32.const 2)) ;; int, float
        (then
          (i64.store align=1 (global.get $o)
            (i64.load (i32.add (local.get $v) (i32.shl (local.get $r) (i32.const 3)))))
          (global.set $o (i32.add (global.get $o) (i32.const 8)))
          (br $written)))
      (if (i32.eq (local.get $t) (i32.const 3)) ;; bool
        (then
          (i32.store8 (global.get $o) (i32.load8_u (i32.add (local.get $v) (local.get $r))))
          (global.set $o (i32.add (global.get $o) (i32.const 1)))
          (br $written)))
      (call $var_bytes (local.get $p) (local.get $c) (local.get $r))))

  ;; $echo writes the echo mode's patch for record r and stores its
  ;; timestamp in state.
  (func $echo (param $p i32) (param $r i32)
    (local $f i32) (local $k i32) (local $ts i32) (local $kc i32)
    (local.set $f (i32.load offset=4 (local.get $p)))
    (call $out_entry (i32.const 3) (local.get $r) (i32.const 0))
    (i32.store8 (global.get $o) (i32.const 7)) ;; new, key, timestamp
    (global.set $o (i32.add (global.get $o) (i32.const 1)))
    (local.set $kc (call $col (local.get $p) (i32.const 1)))
    (if (i32.eqz (call $status (local.get $p) (local.get $kc) (local.get $r)))
      (then (call $var_bytes (local.get $p) (local.get $kc) (local.get $r)))
      (else
        (i32.store align=1 (global.get $o) (i32.const -1))
        (global.set $o (i32.add (global.get $o) (i32.const 4)))))
    (local.set $ts (i32.add (i32.add (local.get $p) (i32.load offset=8 (call $col (local.get $p) (i32.const 0))))
                            (i32.shl (local.get $r) (i32.const 3))))
    (i64.store align=1 (global.get $o) (i64.add (i64.load (local.get $ts)) (i64.const 1)))
    (i32.store offset=8 align=1 (global.get $o) (local.get $f))
    (global.set $o (i32.add (global.get $o) (i32.const 12)))
    (block $done
      (loop $field
        (br_if $done (i32.ge_u (local.get $k) (local.get $f)))
        (call $set_field (local.get $p) (local.get $k) (local.get $r))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $field)))
    (if (i32.lt_s (call $put (local.get $r) (i32.const 1112) (i32.const 1) (local.get $ts) (i32.const 8)) (i32.const 0))
      (then unreachable)))

  ;; $one_op_patch writes a patch of record r's own value with one set of
  ;; path (ptr, len) whose type and value bytes follow: type $t, then the
  ;; value as a u32 length and bytes when $t is 5, else the i64 $i.
  (func $one_op_patch (param $r i32) (param $path i32) (param $plen i32) (param $t i32) (param $i i64)
    (call $out_entry (i32.const 3) (local.get $r) (i32.const 0))
    (i32.store8 (global.get $o) (i32.const 0))
    (i32.store offset=1 align=1 (global.get $o) (i32.const 1))
    (i32.store8 offset=5 (global.get $o) (i32.const 1))
    (global.set $o (i32.add (global.get $o) (i32.const 6)))
    (call $out_bytes (local.get $path) (local.get $plen))
    (i32.store8 (global.get $o) (local.get $t))
    (global.set $o (i32.add (global.get $o) (i32.const 1)))
    (if (i32.eq (local.get $t) (i32.const 5))
      (then (call $out_bytes (i32.const 1056) (i32.const 4)))
      (else
        (i64.store align=1 (global.get $o) (local.get $i))
        (global.set $o (i32.add (global.get $o) (i32.const 8))))))

  ;; The output of a batch of n records at $p, $len bytes, fits in
  ;; $len + n × (40 + 24 × fields) bytes: the values and keys copied are
  ;; the frame's.
  (func $typed (param $p i32) (param $len i32) (result i64)
    (local $n i32) (local $r i32)
    (local.set $n (i32.load (local.get $p)))
    (call $out_begin (i32.add (local.get $p) (local.get $len)))
    (call $ensure (i32.add (i32.add (global.get $o) (local.get $len))
      (i32.mul (local.get $n)
        (i32.add (i32.const 40) (i32.mul (i32.const 24) (i32.load offset=4 (local.get $p)))))))
    (block $done
      (loop $record
        (br_if $done (i32.ge_u (local.get $r) (local.get $n)))
        (block $next
          (if (i32.eq (global.get $mode) (i32.const 0x65)) ;; e
            (then (call $echo (local.get $p) (local.get $r)) (br $next)))
          (if (i32.eq (global.get $mode) (i32.const 0x70)) ;; p
            (then (call $one_op_patch (local.get $r) (i32.const 1064) (i32.const 3) (i32.const 1) (i64.const 1)) (br $next)))
          (if (i32.eq (global.get $mode) (i32.const 0x6b)) ;; k
            (then (call $out_keep (local.get $r)) (br $next)))
          (if (i32.eq (global.get $mode) (i32.const 0x72)) ;; r
            (then (call $one_op_patch (local.get $r) (i32.const 1064) (i32.const 1) (i32.const 5) (i64.const 0)) (br $next))))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $record)))
    (call $out_finish))

  (export "weir_typed_map" (func $typed))
  (export "weir_typed_flat_map" (func $typed)))
