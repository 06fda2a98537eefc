// Package plugintool works on one weir plugin outside any pipeline: it
// builds a plugin's source (Build), describes a .wasm module or a source
// folder without running it (Inspect, InspectPlugin), runs records through
// a plugin (Run), runs a plugin test file's cases (ParseTestYAML,
// ParseTestFile, Test), compares two versions of a plugin on the same
// records (Compare), and lays out the SDKs embedded in the binary for a
// new project (WriteSDK) and reports the toolchains (Toolchains). It
// serves weir plugin build, inspect, new and test, weir version, the
// cross-language conformance suite, and plugin authors' own tests.
//
// Its functions are safe for concurrent use: each Run or Test call loads
// the plugin into a runtime of its own, closed before it returns, and
// builds share the cache under cacheDir safely. Every type here is a
// plain value. Errors about the plugin itself (it cannot be built,
// compiled, validated or initialised) wrap host.ErrPlugin.
package plugintool
