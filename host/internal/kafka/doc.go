// Package kafka connects weir pipelines to Kafka with franz-go: a source
// that consumes in a group and commits only what the sinks acknowledged
// (and, for a pipeline with keyed state, shares the group by task: Tasks,
// with a balancer that places a dead member's tasks on their standby
// copies, balancer.go),
// the changelog, a producing sink and dead-letter output, a repartition
// topic's sink and reading (repartition.go) and, for an instance owning
// every task, the check and the run routing around it in process
// (repartition_route.go), transactions, an
// embedded broker (kfake) for pipelines that name no brokers, and the
// console tools behind weir produce and weir consume.
package kafka
