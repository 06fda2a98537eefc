// Package kafka connects weir pipelines to Kafka with franz-go: a source
// that consumes in a group and commits only what the sinks acknowledged
// (and, for a pipeline with keyed state, shares the group by task: Tasks,
// with a balancer that places a dead member's tasks on their standby
// copies, balancer.go, and reads the other sources of its group through
// its client as Views, source_views.go),
// the changelog, a producing sink and dead-letter output, a repartition
// topic's sink and reading (repartition.go, its upstream tasks numbered
// over the input topics by Inputs) and, for an instance owning
// every task, the check and the run routing around it in process
// (repartition_route.go), transactions, an
// embedded broker (kfake) for pipelines that name no brokers, and the
// console tools behind weir produce and weir consume.
package kafka
