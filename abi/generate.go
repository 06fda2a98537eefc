package abi

// The C, Rust and AssemblyScript guest SDKs cannot import this package, so
// its names and constants reach them through generated files, written from
// it by abi/internal/abigen (ABI.md §13): the block of
// guest-sdk/c/weir.h between its "Code generated" and "End of generated
// code" lines, guest-sdk/rust/src/abi.rs and
// guest-sdk/assemblyscript/lib/weir/abi.ts. The same command writes
// abi/testdata/json-vectors.json, the JSON test vectors all four SDKs'
// tests read (from package abi/wjson's results), and its copy for the C
// tests, guest-sdk/c/test/json_vectors.h. Run it from the repository root
// after changing this package or wjson:
//
//	go generate ./abi
//
// TestGeneratedFilesUpToDate fails while a generated file is stale.

//go:generate go run ./internal/cmd/abigen -root ..
