// Package pluginconfig reads the init config of the Go conformance plugins.
// It has no state and is safe for concurrent use.
package pluginconfig
