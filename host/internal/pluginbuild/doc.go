// Package pluginbuild turns a plugin reference from a pipeline into Wasm
// bytes: a .wasm file is read as it is, and a directory of plugin source is
// built in the language Detect finds there. Go SDK source is compiled with
// the local Go toolchain for GOOS=wasip1, -buildmode=c-shared; each other
// language registers its builder in its own file. Each language's
// toolchain is found in one documented order, overridable by a WEIR_*
// variable (Toolchain, FindToolchain).
//
// The guest SDKs come embedded in the binary (package weir at the module
// root): WriteSDK lays one out as a plugin project's weir-sdk folder holds
// it, and a folder of source that brings no SDK builds against a copy
// extracted into the cache directory once per SDK version (ExtractedSDK);
// a Go folder without a go.mod that resolves the SDK, or a Rust folder
// with a src/lib.rs and no Cargo.toml, is built from a copy under the
// cache whose generated go.mod or Cargo.toml does.
//
// Built modules are cached on disk by a content hash of everything the build
// reads: the source files of every non-standard-library package the plugin
// depends on (as `go list -deps` reports them), the go.mod and go.sum of the
// plugin's module, and the Go version. An unchanged plugin is therefore never
// rebuilt, and a change to the SDK it imports rebuilds it.
//
// Functions here are safe for concurrent use; concurrent builds of the same
// plugin race benignly (each writes a temporary file and renames it).
package pluginbuild
