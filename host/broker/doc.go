// Package broker holds weir's Kafka tools: an embedded, in-process Kafka
// broker (Broker, Start, Run) that pipelines naming no brokers can share,
// and the console producer and consumer (Produce, Consume) that reach any
// cluster a Client describes.
//
// The broker is franz-go's kfake, speaking the real Kafka wire protocol:
// any Kafka client can connect to it. It is meant for tutorials, tests and
// single-process runs, not as a production cluster.
//
// Options, ProduceOptions, ConsumeOptions and Client are plain values, read
// during the call they are given to. A Broker is safe for concurrent use;
// see its lifetime there.
package broker
