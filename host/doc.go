// Package host runs weir pipelines: it loads a pipeline file, validates it,
// builds and compiles its plugins, and runs it.
//
// The public surface is small on purpose: Load returns a *Pipeline that is
// fully validated (config, plugin ABI, plugin init) before anything reads
// input; Run runs it and Close releases it. While it runs, Stats, Plugins,
// Reload, ReloadPlugins, Promote and QueryState are safe to call from any
// goroutine; Run and Close must not overlap, and a Pipeline runs once.
//
// Beside it, public sub-packages hold the tools around a pipeline: admin
// (the HTTP admin API), broker (the embedded Kafka broker, produce and
// consume), plugintool (build, inspect, run and test plugins) and
// statetool (inspect, export and import a stopped pipeline's state).
// Everything else lives in internal packages and may change without
// notice: config (the schema), assembly (the operator table, and turning
// a config into a run), one package per operator kind (pluginop, window,
// join, tablejoin, dbio, keyby), engine, checkpoint, wasm, kafka.
//
// Errors from Load wrap ErrConfig when the pipeline file is invalid and
// ErrPlugin when a plugin cannot be built, compiled, validated or
// initialised; the command line maps them to exit codes.
package host
