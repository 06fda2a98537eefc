package config

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// joinDoc is a pipeline with a join operator whose fields are fields.
func joinDoc(fields string) string {
	return `name: p
sources: [{name: a, type: file, path: readings.json}, {name: b, type: file, path: other.json}]
operators:
  - {name: k, type: key_by, field: id}
  - {name: j, type: join, left: a, right: b` + fields + `}
sinks: [{name: out, type: stdout}]
`
}

func TestParseJoin(t *testing.T) {
	for _, tt := range []struct {
		fields string
		want   Join
	}{
		{"", Join{Left: "a", Right: "b", Kind: JoinInner}},
		{", join: inner, window: 10s", Join{Left: "a", Right: "b", Kind: JoinInner, Window: 10 * time.Second}},
		{", join: left, between: {lower: 0s, upper: 30s}", Join{Left: "a", Right: "b", Kind: JoinLeft, Between: true, Upper: 30 * time.Second}},
		{", join: right, window: 1m", Join{Left: "a", Right: "b", Kind: JoinRight, Window: time.Minute}},
		{", join: full, ttl: 1h", Join{Left: "a", Right: "b", Kind: JoinFull, TTL: time.Hour}},
		{", join: full", Join{Left: "a", Right: "b", Kind: JoinFull}},
	} {
		t.Run(tt.fields, func(t *testing.T) {
			setupDir(t)
			p, err := Parse("pipeline.yaml", []byte(joinDoc(tt.fields)), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Operators[1].Join; got != tt.want {
				t.Errorf("join = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseJoinErrors(t *testing.T) {
	for _, tt := range []struct{ name, fields, want string }{
		{"unknown kind", ", join: outer", `operators[1] "j".join: invalid value "outer" (want one of inner, left, right, full)`},
		{"a near miss", ", join: Left", `invalid value "Left" (want one of inner, left, right, full; did you mean "left"?)`},
		{"not a string", ", join: [left]", `operators[1] "j".join:`},
		{"ttl with an outer interval join", ", join: left, ttl: 1h, between: {lower: 0s, upper: 1s}", "bounds a regular join"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			setupDir(t)
			_, err := Parse("pipeline.yaml", []byte(joinDoc(tt.fields)), nil, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "pipeline.yaml:5:") {
				t.Fatalf("err = %v\nwant it to contain %q at pipeline.yaml:5", err, tt.want)
			}
		})
	}
	// A lookup keeps its own kinds: right and full are the join operator's.
	setupDir(t)
	doc := strings.Replace(joinDoc(", join: right"), "{name: j, type: join, left: a, right: b, join: right}",
		`{name: l, type: lookup, database: {driver: mysql, dsn: x}, field: id, query: "SELECT a FROM t WHERE id = ?", join: right}`, 1)
	if _, err := Parse("pipeline.yaml", []byte(doc), nil, nil); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("want one of %s, %s)", JoinInner, JoinLeft)) {
		t.Errorf("a right lookup join: %v", err)
	}
}
