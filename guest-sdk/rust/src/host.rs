//! The host functions of module `weir_v1` (ABI section 6; declared in the
//! generated `crate::abi::imports`), and a native stand-in for unit tests
//! off wasm.

#[cfg(target_arch = "wasm32")]
mod imp {
    use crate::abi::imports::{host_log, host_state_delete, host_state_get, host_state_put};

    pub(crate) fn log(level: i32, msg: &[u8]) {
        unsafe { host_log(level, msg.as_ptr(), msg.len()) }
    }

    pub(crate) fn state_get(index: u32, key: &[u8], dst: &mut [u8]) -> i32 {
        unsafe { host_state_get(index, key.as_ptr(), key.len(), dst.as_mut_ptr(), dst.len()) }
    }

    pub(crate) fn state_put(index: u32, key: &[u8], value: &[u8]) -> i32 {
        unsafe { host_state_put(index, key.as_ptr(), key.len(), value.as_ptr(), value.len()) }
    }

    pub(crate) fn state_delete(index: u32, key: &[u8]) -> i32 {
        unsafe { host_state_delete(index, key.as_ptr(), key.len()) }
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    //! Off wasm there is no host: log lines go to standard error and state
    //! to a per-thread map, shared by every record (the host would scope it
    //! by record key). See crate::testing.
    use std::cell::RefCell;
    use std::collections::HashMap;

    thread_local! {
        pub(crate) static STORE: RefCell<HashMap<Vec<u8>, Vec<u8>>> = RefCell::new(HashMap::new());
        pub(crate) static LOGS: RefCell<Vec<(i32, String)>> = RefCell::new(Vec::new());
    }

    pub(crate) fn log(level: i32, msg: &[u8]) {
        let line = String::from_utf8_lossy(msg).into_owned();
        LOGS.with(|l| l.borrow_mut().push((level, line)));
    }

    pub(crate) fn state_get(_index: u32, key: &[u8], dst: &mut [u8]) -> i32 {
        STORE.with(|s| match s.borrow().get(key) {
            None => crate::abi::STATUS_NOT_FOUND,
            Some(v) => {
                let n = v.len().min(dst.len());
                dst[..n].copy_from_slice(&v[..n]);
                v.len() as i32
            }
        })
    }

    pub(crate) fn state_put(_index: u32, key: &[u8], value: &[u8]) -> i32 {
        STORE.with(|s| s.borrow_mut().insert(key.to_vec(), value.to_vec()));
        crate::abi::STATUS_OK
    }

    pub(crate) fn state_delete(_index: u32, key: &[u8]) -> i32 {
        STORE.with(|s| s.borrow_mut().remove(key));
        crate::abi::STATUS_OK
    }
}

pub(crate) use imp::*;
