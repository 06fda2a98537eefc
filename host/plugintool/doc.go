// Package plugintool works on one weir plugin outside any pipeline: it
// builds a plugin's source (Build), describes a .wasm module without
// running it (Inspect), runs records through a plugin (Run), and runs a
// plugin test file's cases (ParseTestFile, Test). It serves weir plugin
// build, inspect and test, the cross-language conformance suite, and
// plugin authors' own tests.
//
// Its functions are safe for concurrent use: each Run or Test call loads
// the plugin into a runtime of its own, closed before it returns, and
// builds share the cache under cacheDir safely. Every type here is a
// plain value. Errors about the plugin itself (it cannot be built,
// compiled, validated or initialised) wrap host.ErrPlugin.
package plugintool
