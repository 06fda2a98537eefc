// Package operator is the contract between a pipeline and its operator
// kinds: what a kind is given to load an operator (Env), what a loaded
// operator gives each run (Operator.Step), and how a plugin module is
// loaded for it (Plugins).
//
// Each kind lives in its own package (pluginop for map, flat_map and
// filter; window; rolling; join; tablejoin; dbio for lookup; engine for
// key_by) and is registered in one table, in package assembly. A kind sees
// only what Env and Run hand it: never the host's Pipeline. Adding a kind is
// one package implementing Operator plus one row in that table.
package operator
