// Package task splits a pipeline's keyed state into tasks, as Kafka
// Streams does: a record key belongs to the task numbered by the
// partition Kafka's default partitioner gives that key (murmur2, as the
// Java client's Utils.toPositive(Utils.murmur2(key)) % n). So a topic
// produced by key with the default partitioner holds each key on the
// partition of the same number as its task, and the changelog of a task
// is that partition of the changelog topic.
//
// The functions here are pure and safe for concurrent use.
package task
