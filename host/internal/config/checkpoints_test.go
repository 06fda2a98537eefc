package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseCheckpoints(t *testing.T) {
	tests := []struct {
		name     string
		doc      string
		enabled  bool
		interval time.Duration
		delivery string
		standbys int
	}{
		{name: "absent", doc: "", interval: DefaultCheckpointInterval, delivery: AtLeastOnce},
		{name: "empty block", doc: "checkpoints: {}\n", enabled: true, interval: DefaultCheckpointInterval, delivery: AtLeastOnce},
		{name: "interval", doc: "checkpoints: {interval: 250ms}\n", enabled: true, interval: 250 * time.Millisecond, delivery: AtLeastOnce},
		{name: "exactly once", doc: "checkpoints: {delivery: exactly_once}\n", enabled: true, interval: DefaultCheckpointInterval, delivery: ExactlyOnce},
		{name: "standby replicas", doc: "checkpoints: {standby_replicas: 2}\n", enabled: true, interval: DefaultCheckpointInterval, delivery: AtLeastOnce, standbys: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setupDir(t)
			doc := "name: p\nstate: {backend: badger, dir: st}\nsources: [{name: in, type: kafka, topics: [a]}]\nsinks: [{name: out, type: kafka, topic: b}]\n" + tt.doc
			p, err := Parse("pipeline.yaml", []byte(doc), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			c := p.Checkpoints
			if c.Enabled != tt.enabled || c.Interval != tt.interval || c.Delivery != tt.delivery || c.StandbyReplicas != tt.standbys {
				t.Fatalf("checkpoints = %+v", c)
			}
		})
	}
}

func TestParseCheckpointErrors(t *testing.T) {
	const kafkaIO = "sources: [{name: in, type: kafka, topics: [a]}]\nsinks: [{name: out, type: kafka, topic: b}]\n"
	const badger = "state: {backend: badger, dir: st}\n"
	tests := []struct {
		name, doc, want string
	}{
		{name: "memory state", doc: "checkpoints: {interval: 1s}\n" + kafkaIO,
			want: `pipeline.yaml:2:14: checkpoints: checkpoints are kept with the state: set state.backend to badger`},
		{name: "zero interval", doc: badger + "checkpoints: {interval: 0s}\n" + kafkaIO,
			want: `pipeline.yaml:3:25: checkpoints.interval: must be positive`},
		{name: "bad delivery", doc: badger + "checkpoints: {delivery: twice}\n" + kafkaIO,
			want: `pipeline.yaml:3:25: checkpoints.delivery: invalid value "twice"`},
		{name: "too many standby replicas", doc: badger + "checkpoints: {standby_replicas: 17}\n" + kafkaIO,
			want: `pipeline.yaml:3:33: checkpoints.standby_replicas:`},
		{name: "negative standby replicas", doc: badger + "checkpoints: {standby_replicas: -1}\n" + kafkaIO,
			want: `pipeline.yaml:3:33: checkpoints.standby_replicas:`},
		{name: "unknown field", doc: badger + "checkpoints: {every: 1s}\n" + kafkaIO,
			want: `pipeline.yaml:3:15: checkpoints: unknown field "every"`},
		{name: "stdin", doc: badger + "checkpoints: {}\nsources: [{name: in, type: stdin}]\nsinks: [{name: out, type: stdout}]\n",
			want: `pipeline.yaml:4:11: sources[0] "in": standard input cannot resume from a checkpoint`},
		{name: "exactly once to stdout", doc: badger + "checkpoints: {delivery: exactly_once}\nsources: [{name: in, type: kafka, topics: [a]}]\nsinks: [{name: out, type: stdout}]\n",
			want: `pipeline.yaml:5:9: sinks[0] "out": exactly_once delivery needs Kafka sinks`},
		{name: "exactly once from a file", doc: badger + "checkpoints: {delivery: exactly_once}\nsources: [{name: in, type: file, path: readings.json}]\nsinks: [{name: out, type: kafka, topic: b}]\n",
			want: `sources[0] "in": exactly_once delivery needs Kafka sources`},
		{name: "exactly once from two groups", doc: badger + "checkpoints: {delivery: exactly_once}\nsources: [{name: in, type: kafka, topics: [a]}, {name: in2, type: kafka, topics: [c], group: other}]\nsinks: [{name: out, type: kafka, topic: b}]\n",
			want: `checkpoints.delivery: exactly_once delivery reads Kafka in one consumer group (the group's client commits its offsets in the transaction); this pipeline's Kafka sources are in 2: other, p`},
		{name: "one group, two starts", doc: "sources: [{name: in, type: kafka, topics: [a]}, {name: in2, type: kafka, topics: [c], start: latest}]\nsinks: [{name: out, type: kafka, topic: b}]\n",
			want: `pipeline.yaml:2:94: sources[1] "in2".start: consumer group "p" is read through one client with sources[0] "in": give both the same start, or each its own group`},
		{name: "one group, a regex", doc: "sources: [{name: in, type: kafka, topics: [a]}, {name: in2, type: kafka, topic_regex: c}]\nsinks: [{name: out, type: kafka, topic: b}]\n",
			want: `sources[1] "in2".topic_regex: consumer group "p" is read through one client with sources[0] "in", so both must name their topics`},
		{name: "one group, two instance ids", doc: "sources: [{name: in, type: kafka, topics: [a], instance_id: x}, {name: in2, type: kafka, topics: [c], instance_id: y}]\nsinks: [{name: out, type: kafka, topic: b}]\n",
			want: `pipeline.yaml:2:116: sources[1] "in2".instance_id: consumer group "p" is read through one client, one member of the group, with sources[0] "in", which gives another instance_id: give one, or each source its own group`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setupDir(t)
			_, err := Parse("pipeline.yaml", []byte("name: p\n"+tt.doc), nil, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestParseStateTTL(t *testing.T) {
	tests := []struct {
		name, fields string
		ttl          time.Duration
		event        bool
		wantErr      string
	}{
		{name: "absent"},
		{name: "processing", fields: ", state_ttl: 1h", ttl: time.Hour},
		{name: "event", fields: ", state_ttl: 90s, state_ttl_time: event", ttl: 90 * time.Second, event: true},
		{name: "zero", fields: ", state_ttl: 0s", wantErr: "state_ttl: must be positive"},
		{name: "sub-millisecond", fields: ", state_ttl: 1500us", wantErr: "is not a whole number of milliseconds"},
		{name: "time without ttl", fields: ", state_ttl_time: event", wantErr: "state_ttl_time: applies only with state_ttl"},
		{name: "bad time", fields: ", state_ttl: 1s, state_ttl_time: wall", wantErr: `invalid value "wall"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setupDir(t)
			doc := "name: p\nsources: [{name: in, type: stdin}]\noperators:\n  - {name: m, type: map, plugin: plugins/double.wasm" + tt.fields + "}\nsinks: [{name: out, type: stdout}]\n"
			p, err := Parse("pipeline.yaml", []byte(doc), nil, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "pipeline.yaml:4:") {
					t.Fatalf("err = %v, want %q at line 4", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if op := p.Operators[0]; op.StateTTL != tt.ttl || op.StateTTLEventTime != tt.event {
				t.Fatalf("state_ttl %v event %v", op.StateTTL, op.StateTTLEventTime)
			}
		})
	}
}

func TestParseMemoryBounds(t *testing.T) {
	tests := []struct {
		name, engine, window string
		limit, keys          int64
		wantErr              string
	}{
		{name: "absent"},
		{name: "GiB", engine: "memory_limit: 1.5GiB", limit: 3 << 29},
		{name: "MB", engine: "memory_limit: 1400MB", limit: 1400e6},
		{name: "bytes", engine: "memory_limit: 1048576", limit: 1 << 20},
		{name: "keys", window: ", max_keys_in_memory: 100000", keys: 100000},
		{name: "bad size", engine: "memory_limit: lots", wantErr: `engine.memory_limit: invalid size "lots"`},
		{name: "zero", engine: "memory_limit: 0", wantErr: "engine.memory_limit: invalid size"},
		{name: "negative keys", window: ", max_keys_in_memory: -1", wantErr: "max_keys_in_memory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setupDir(t)
			doc := "name: p\nengine: {" + tt.engine + "}\nsources: [{name: in, type: stdin}]\noperators:\n  - {name: k, type: key_by, field: id}\n  - {name: w, type: window, kind: tumbling, size: 1s, aggregates: [{func: count, as: n}]" + tt.window + "}\nsinks: [{name: out, type: stdout}]\n"
			p, err := Parse("pipeline.yaml", []byte(doc), nil, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Engine.MemoryLimit != tt.limit || p.Operators[1].Window.MaxKeysInMemory != tt.keys {
				t.Fatalf("memory_limit %d, max_keys_in_memory %d", p.Engine.MemoryLimit, p.Operators[1].Window.MaxKeysInMemory)
			}
		})
	}
}
