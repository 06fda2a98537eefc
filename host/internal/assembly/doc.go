// Package assembly turns a validated pipeline config into running parts.
// It holds the operator table (table.go), the one place that maps an
// operator type to the package implementing it, loads each operator
// through its row (LoadOperators), and assembles each run (Build): the
// Kafka client or embedded broker, the standby wait of a pipeline with
// keyed state, the sources, the checkpoints, each operator's step, the
// sinks and the dead-letter output. It is given its dependencies
// explicitly (Deps) and never sees the host's Pipeline.
package assembly
