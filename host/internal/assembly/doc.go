// Package assembly turns a validated pipeline config into running parts.
// It holds the operator table (table.go), the one place that maps an
// operator type to the package implementing it, loads each operator
// through its row (LoadOperators), and assembles each run (Build): the
// Kafka client or embedded broker, the standby wait of a pipeline with
// keyed state that runs one active instance, the sources, the
// checkpoints, each operator's step, the sinks and the dead-letter output.
// The Kafka sources of one consumer group are read through the first's
// client, the others as its Views (sources.go). A pipeline whose
// instances share its consumer group by task (tasks.go)
// keeps its Kafka source across the runs the group's moves of tasks start
// (Carry); one whose keyed state follows a key_by also gets its
// repartition topic, and, unless its instance owns every task and routes
// the key_by in process, the engine's Repartition (repartition.go). It is given its dependencies explicitly (Deps) and never sees
// the host's Pipeline.
package assembly
