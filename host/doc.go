// Package host runs weir pipelines: it loads a pipeline file, validates it,
// builds and compiles its plugins, and runs it.
//
// The public surface is small on purpose: Load returns a *Pipeline that is
// fully validated (config, plugin ABI, plugin init) before anything reads
// input, and Pipeline.Run runs it. Everything else (the config schema, the
// Wasm runtime, the engine, sources and sinks) lives in internal packages and
// may change without notice.
//
// Errors from Load wrap ErrConfig when the pipeline file is invalid and
// ErrPlugin when a plugin cannot be built, compiled, validated or
// initialised; the command line maps them to exit codes.
package host
