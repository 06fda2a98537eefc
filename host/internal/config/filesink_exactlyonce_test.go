package config

import (
	"strings"
	"testing"
)

// TestExactlyOnceFileOutputs checks which outputs exactly_once delivery
// takes: files (cut back to the checkpoint on restart) from any source that
// resumes, Kafka outputs only from one Kafka source and nothing else.
func TestExactlyOnceFileOutputs(t *testing.T) {
	const (
		fileIn  = "sources: [{name: in, type: file, path: readings.json}]\n"
		genIn   = "sources: [{name: in, type: generator, count: 10, fields: [{name: n, kind: sequence}]}]\n"
		kafkaIn = "sources: [{name: in, type: kafka, topics: [a]}]\n"
		fileOut = "sinks: [{name: out, type: file, path: out.jsonl}]\n"
		deadOut = "dead_letter: {type: file, path: dead.jsonl}\n"
	)
	tests := []struct {
		name, doc, wantErr string
	}{
		{name: "file to file", doc: fileIn + fileOut + deadOut},
		{name: "generator to file and discard", doc: genIn + "sinks: [{name: out, type: file, path: out.jsonl}, {name: d, type: discard}]\n"},
		{name: "kafka to file", doc: kafkaIn + fileOut + deadOut},
		{name: "kafka to kafka and file", doc: kafkaIn + "sinks: [{name: out, type: kafka, topic: b}, {name: f, type: file, path: out.jsonl}]\n"},
		{name: "file to kafka", doc: fileIn + "sinks: [{name: out, type: kafka, topic: b}]\n",
			wantErr: `sources[0] "in": exactly_once delivery needs Kafka sources when it reads or writes Kafka`},
		{name: "file to a kafka dead-letter topic", doc: fileIn + fileOut + "dead_letter: {type: kafka, topic: dlq}\n",
			wantErr: `sources[0] "in": exactly_once delivery needs Kafka sources when it reads or writes Kafka`},
		{name: "kafka and file sources", doc: "sources: [{name: in, type: kafka, topics: [a]}, {name: f, type: file, path: readings.json}]\n" + fileOut,
			wantErr: `sources[1] "f": exactly_once delivery needs Kafka sources`},
		{name: "file to stdout", doc: fileIn + "sinks: [{name: out, type: stdout}]\n",
			wantErr: `sinks[0] "out": exactly_once delivery needs Kafka sinks, files or discard: a stdout sink cannot take back`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setupDir(t)
			doc := "name: p\nstate: {backend: badger, dir: st}\ncheckpoints: {delivery: exactly_once}\n" + tt.doc
			_, err := Parse("pipeline.yaml", []byte(doc), nil, nil)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v\nwant it to contain %q", err, tt.wantErr)
			}
		})
	}
}
