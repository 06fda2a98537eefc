// Package tablejoin is the table_join operator: it enriches each record
// with the value a Kafka table (kafka.Table, a topic read as each key's
// latest value) holds for the record's key, as Kafka Streams joins a
// KStream with a GlobalKTable. The join is in processing time: a record
// meets the table as it stands when the record is processed.
package tablejoin
