package config

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// Delivery guarantees.
const (
	// AtLeastOnce: nothing is lost; after a failure, outputs since the
	// last checkpoint may be written again (default).
	AtLeastOnce = "at_least_once"
	// ExactlyOnce: each checkpoint's Kafka outputs and input offsets
	// commit in one Kafka transaction; read_committed consumers see each
	// result once.
	ExactlyOnce = "exactly_once"
)

// DefaultCheckpointInterval is checkpoints.interval when absent.
const DefaultCheckpointInterval = 5 * time.Second

// Checkpoints configures consistent checkpoints of state and source
// positions, kept with the state in State.Dir.
type Checkpoints struct {
	Meta
	// Enabled is set when the block is given, or delivery is exactly_once.
	Enabled bool
	// Interval is the time from the end of one checkpoint to the start of
	// the next.
	Interval time.Duration
	// Delivery is AtLeastOnce or ExactlyOnce.
	Delivery string
	// ChangelogTopic receives the state changes of runs with a Kafka
	// source; default "<name>-changelog".
	ChangelogTopic string
	// TransactionalID names exactly-once runs' Kafka transactions; default
	// "weir-<name>". Restarts of the pipeline must keep it, so that they
	// fence their predecessor; other pipelines must not share it.
	TransactionalID string
	// DefaultTransactionalID is set when TransactionalID is the default,
	// not given: the host then makes it per instance for a pipeline whose
	// instances may run side by side (one without keyed state).
	DefaultTransactionalID bool
	// StandbyReplicas is, for a pipeline whose instances share its
	// consumer group by task, how many other instances keep a warm copy
	// of each task's state, applying its changelog partition as it grows,
	// so that one given the task replays only the tail (Kafka Streams'
	// num.standby.replicas); default 0.
	StandbyReplicas int
}

// MaxStandbyReplicas bounds checkpoints.standby_replicas.
const MaxStandbyReplicas = 16

var checkpointFields = []string{"interval", "delivery", "changelog_topic", "transactional_id", "standby_replicas"}

// checkpoints decodes the optional top-level checkpoints block.
func (d *decoder) checkpoints(parent *object) Checkpoints {
	c := Checkpoints{Interval: DefaultCheckpointInterval, Delivery: AtLeastOnce}
	o, given := d.subBlock(parent, "checkpoints", &c.Meta)
	if o == nil {
		return c
	}
	c.Enabled = given
	if v, st := o.duration("interval"); st == good {
		if v <= 0 {
			o.fail("interval", o.get("interval", kScalar), "must be positive")
		}
		c.Interval = v
	}
	if v, st := o.enum("delivery", AtLeastOnce, ExactlyOnce); st == good {
		c.Delivery = v
	}
	if v, st := o.nonEmpty("changelog_topic"); st == good {
		c.ChangelogTopic = v
	}
	if v, st := o.nonEmpty("transactional_id"); st == good {
		c.TransactionalID = v
	}
	if v, st := o.int("standby_replicas", 0, MaxStandbyReplicas); st == good {
		c.StandbyReplicas = int(v)
	}
	o.finish(checkpointFields, checkpointFields, "the checkpoints block")
	return c
}

// crossCheckCheckpoints checks what checkpoints need of the rest of the
// pipeline: somewhere durable to keep them, sources that can resume, and,
// for exactly-once delivery, Kafka at both ends.
func (d *decoder) crossCheckCheckpoints(p *Pipeline) {
	c := &p.Checkpoints
	if c.ChangelogTopic == "" {
		c.ChangelogTopic = p.Name + "-changelog"
	}
	if c.TransactionalID == "" {
		c.TransactionalID = "weir-" + p.Name
		c.DefaultTransactionalID = true
	}
	if !c.Enabled {
		return
	}
	if p.State.Backend != StateBadger {
		d.errAt(c.Pos, "checkpoints", "checkpoints are kept with the state: set state.backend to badger and state.dir")
	}
	for i := range p.Sources {
		if s := &p.Sources[i]; s.Type == SourceStdin {
			d.errAt(s.Pos, s.Where, "standard input cannot resume from a checkpoint: read a file or Kafka, or remove the checkpoints block")
		}
	}
	if c.Delivery != ExactlyOnce {
		return
	}
	d.crossCheckExactlyOnce(p)
}

// crossCheckExactlyOnce checks that every output of an exactly-once
// pipeline can take back what it wrote after the last checkpoint: Kafka
// outputs through the Kafka transaction, which is the Kafka sources'
// one consumer group's, so a pipeline that reads or writes Kafka reads
// only from that group; files by being cut back to the length the checkpoint recorded, which
// works with any source that resumes from the checkpoint.
func (d *decoder) crossCheckExactlyOnce(p *Pipeline) {
	c := &p.Checkpoints
	kafkaSources, writesKafka := 0, p.DeadLetter.Type == DeadLetterKafka
	groups := map[string]bool{}
	for i := range p.Sources {
		if s := &p.Sources[i]; s.Type == SourceKafka {
			kafkaSources++
			groups[s.Group] = true
		}
	}
	for i := range p.Sinks {
		writesKafka = writesKafka || p.Sinks[i].Type == SinkKafka
	}
	if kafkaSources > 0 || writesKafka {
		for i := range p.Sources {
			if s := &p.Sources[i]; s.Type != SourceKafka {
				d.errAt(s.Pos, s.Where, "exactly_once delivery needs Kafka sources when it reads or writes Kafka: a %s source cannot take part in the Kafka transaction", s.Type)
			}
		}
	}
	if len(groups) > 1 {
		d.errAt(c.At("delivery"), "checkpoints.delivery", "exactly_once delivery reads Kafka in one consumer group (the group's client commits its offsets in the transaction); this pipeline's Kafka sources are in %d: %s",
			len(groups), strings.Join(slices.Sorted(maps.Keys(groups)), ", "))
	}
	for i := range p.Sinks {
		if s := &p.Sinks[i]; s.Type != SinkKafka && s.Type != SinkFile && s.Type != SinkDiscard {
			d.errAt(s.Pos, s.Where, "exactly_once delivery needs Kafka sinks, files or discard: a %s sink cannot take back what it wrote after a failure", s.Type)
		}
	}
}
