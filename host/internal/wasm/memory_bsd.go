//go:build darwin || freebsd || netbsd || openbsd

package wasm

const mapNoReserve = 0
