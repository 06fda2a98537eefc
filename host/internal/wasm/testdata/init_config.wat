;; init_config checks the lifecycle: weir_init fails unless _initialize ran
;; first, and rejects a config that starts with 'x' with the message
;; "rejected config: <config>". Otherwise it keeps the config, and its map
;; replaces every record's value with it.
(module
  ;; #include lib/frame.wati

  (global $initialized (mut i32) (i32.const 0))
  (global $cfg_len (mut i32) (i32.const 0))

  (data (i32.const 16) "_initialize did not run") ;; 23 bytes
  (data (i32.const 48) "rejected config: ")       ;; 17 bytes, config follows at 65

  (func (export "_initialize")
    (global.set $initialized (i32.const 1)))

  (func (export "weir_abi_v1"))

  ;; The config is copied to 4096 so later batches do not overwrite it.
  (func (export "weir_init") (param $p i32) (param $n i32) (result i64)
    (if (i32.eqz (global.get $initialized))
      (then (return (call $pack (i32.const 16) (i32.const 23)))))
    (if (i32.gt_u (local.get $n) (i32.const 4096))
      (then unreachable))
    (memory.copy (i32.const 4096) (local.get $p) (local.get $n))
    (global.set $cfg_len (local.get $n))
    (if (i32.and
          (i32.gt_u (local.get $n) (i32.const 0))
          (i32.eq (i32.load8_u (local.get $p)) (i32.const 120))) ;; 'x'
      (then
        (memory.copy (i32.const 65) (i32.const 4096) (local.get $n))
        (return (call $pack (i32.const 48) (i32.add (i32.const 17) (local.get $n))))))
    (i64.const 0))

  (func (export "weir_map") (param $p i32) (param $len i32) (result i64)
    (local $n i32) (local $i i32)
    (local.set $n (i32.load (local.get $p)))
    (call $out_begin (i32.add (local.get $p) (local.get $len)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (call $out_record (local.get $i) (i32.const 4096) (global.get $cfg_len))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (call $out_finish)))
