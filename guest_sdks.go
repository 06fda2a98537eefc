package weir

import "embed"

// SDKFiles are the guest SDKs' sources and the ABI package's, at their
// paths in this repository: the Go SDK with packages abi and abi/wjson it
// imports, the Rust crate, the C header and source, and the
// AssemblyScript package. Test files come along and are skipped by the
// code that lays the SDKs out. It is read-only and safe for concurrent
// use.
//
//go:embed abi/*.go abi/ABI.md abi/wjson/*.go
//go:embed guest-sdk/go/*.go guest-sdk/go/pyfmt/*.go
//go:embed guest-sdk/rust/Cargo.toml guest-sdk/rust/README.md guest-sdk/rust/src
//go:embed guest-sdk/c/weir.h guest-sdk/c/weir.c guest-sdk/c/README.md
//go:embed guest-sdk/assemblyscript/package.json guest-sdk/assemblyscript/asconfig.plugin.json
//go:embed guest-sdk/assemblyscript/exports.ts guest-sdk/assemblyscript/lib guest-sdk/assemblyscript/README.md
var SDKFiles embed.FS
