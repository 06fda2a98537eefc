package plugintool

import (
	"context"

	"github.com/weir-stream/weir/host/internal/pluginbuild"
)

// SDKDirName is the folder of a plugin project that holds its copy of the
// SDK.
const SDKDirName = pluginbuild.SDKDirName

// SDKGoDirective is the go line of the go.mod files of Go plugin projects.
const SDKGoDirective = pluginbuild.SDKGoDirective

// SDKVersion names the SDKs embedded in this binary: a hash of their
// files, the same for every binary built from the same sources.
func SDKVersion() string { return pluginbuild.SDKVersion() }

// WriteSDK writes the embedded SDK of lang ("go", "rust", "c" or
// "assemblyscript") into dir, laid out as a plugin project's weir-sdk
// folder holds it.
func WriteSDK(lang, dir string) error { return pluginbuild.WriteSDK(pluginbuild.Lang(lang), dir) }

// Toolchain is the compiler one language's plugins are built with, and
// why it was chosen. It is a plain value.
type Toolchain = pluginbuild.Toolchain

// Toolchains finds the toolchain of every plugin language, in the order
// pluginbuild documents, with the reason one is missing (nil when found),
// in the order go, rust, c, assemblyscript. dir is a plugin folder, for
// the AssemblyScript compiler it may hold; empty for none.
func Toolchains(ctx context.Context, dir string) ([]Toolchain, []error) {
	langs := pluginbuild.Langs()
	tcs := make([]Toolchain, len(langs))
	errs := make([]error, len(langs))
	for i, l := range langs {
		tcs[i], errs[i] = pluginbuild.FindToolchain(ctx, l, dir)
		tcs[i].Lang = l
	}
	return tcs, errs
}

// SDKRelease is the version one embedded SDK declares for itself. It is a
// plain value.
type SDKRelease = pluginbuild.SDKRelease

// SDKReleases lists the embedded SDKs, in the order go, rust, c,
// assemblyscript, with the versions their package files declare ("" for
// the Go and C SDKs, which go with the binary's version).
func SDKReleases() []SDKRelease { return pluginbuild.SDKReleases() }
