// Package weir holds, embedded in any program that imports it, the source
// of the guest SDKs and of the ABI they implement, as this checkout has
// them: the files a plugin is built against. The weir command writes them
// into new plugin projects and extracts them for plugin folders that bring
// only their own source, so that an installed binary needs no checkout.
//
// The package has no code of its own beyond the embedded file system; the
// plugin tools (host/plugintool) lay the files out per language.
package weir
