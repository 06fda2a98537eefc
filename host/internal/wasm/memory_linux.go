package wasm

import "syscall"

// mapNoReserve keeps a reservation out of the kernel's commit accounting:
// only touched pages count.
const mapNoReserve = syscall.MAP_NORESERVE
