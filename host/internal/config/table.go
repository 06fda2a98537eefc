package config

// TableJoin holds a table_join operator's settings: a join of each record
// with a Kafka topic read as a table (each key's latest value), as Kafka
// Streams joins a KStream with a GlobalKTable.
type TableJoin struct {
	// Topic is the table's topic, on the pipeline's Kafka cluster.
	Topic string
	// Field is the dotted JSON path of the record field whose value is the
	// table key, as written; "" = the record's key.
	Field string
	Path  []string // Field split at the dots; nil without Field
	// Into is the record field that receives the table's value.
	Into string
	Join string // JoinInner (default) or JoinLeft
}

var tableJoinFields = []string{"name", "type", "topic", "field", "into", "join"}

// tableJoin decodes a table_join operator's fields.
func (d *decoder) tableJoin(o *object, op *Operator) {
	t := &op.TableJoin
	t.Join = JoinInner
	if topic, st := d.topic(o, "topic", true); st == good {
		t.Topic = topic
	}
	if f, segs, st := o.fieldPath("field"); st == good {
		t.Field, t.Path = f, segs
	}
	if v, st := o.nonEmpty("into"); st == absent {
		o.missing("into")
	} else if st == good {
		t.Into = v
	}
	if v, st := o.enum("join", joinKinds...); st == good {
		t.Join = v
	}
}
