// Package abi is the single definition of weir's plugin ABI, version 1.
//
// It is a leaf package: it imports only the standard library, and both the
// host (package host and its internals) and the Go guest SDK
// (guest-sdk/go) import it. Every export name, import name, status code and
// framing rule lives here once; nothing else in the tree spells them as
// string literals. ABI.md beside this file specifies the same contract for
// guest languages other than Go.
//
// The package has five parts:
//
//   - names.go: the versioned export and import names, the operations
//     (Op) and the OpSet a module reports through ExportOps, and status
//     codes.
//   - batch.go and output.go: the byte framing of a batch (host to guest)
//     and of a call's output (guest to host), with an encoder and a
//     non-allocating decoder for each. Decoders never panic on malformed
//     input; they return an error naming the offset where the frame broke.
//   - aggregate.go: the frames of the aggregate operation (add, merge and
//     result calls, the result call with each group's context, and their
//     outputs), with encoders and non-allocating, non-panicking decoders
//     in the same style.
//   - typed.go, typed_decl.go, typed_batch.go, typed_output.go and
//     typed_aggregate.go: the typed-field convention (ABI.md §14), in
//     which a module declares the JSON fields it reads, the host passes
//     them column by column, and the guest answers with patches; the
//     declaration, the typed batch, the typed output and the typed add
//     frames, each with an encoder and a checking decoder.
//   - state.go: the state slot convention, how the guest SDKs name the
//     state slots of their value, map and list states (AppendStateKey,
//     ParseStateKey), so that state outlives a rewrite of a plugin in
//     another language.
//
// The C, Rust and AssemblyScript SDKs get this package's names and
// constants from files generated from it ("go generate ./abi", see
// generate.go); TestGeneratedFilesUpToDate fails while one is stale.
//
// All types here are plain values without internal synchronisation. A
// reader or writer must be used by one goroutine at a time.
package abi
