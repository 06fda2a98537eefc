package config

import (
	"slices"
	"strings"
	"testing"
)

func TestParseTableJoin(t *testing.T) {
	for _, tt := range []struct {
		name, op string
		want     TableJoin
	}{
		{name: "on a field, left", op: `{name: c, type: table_join, topic: customers, field: order.customer, into: customer, join: left}`,
			want: TableJoin{Topic: "customers", Field: "order.customer", Path: []string{"order", "customer"}, Into: "customer", Join: JoinLeft}},
		{name: "on the record key, inner by default", op: `{name: c, type: table_join, topic: customers, into: customer}`,
			want: TableJoin{Topic: "customers", Into: "customer", Join: JoinInner}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			setupDir(t)
			doc := "name: p\nsources: [{name: in, type: stdin}]\noperators:\n  - " + tt.op + "\nsinks: [{name: out, type: stdout}]\n"
			p, err := Parse("pipeline.yaml", []byte(doc), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := p.Operators[0].TableJoin
			if got.Topic != tt.want.Topic || got.Field != tt.want.Field || !slices.Equal(got.Path, tt.want.Path) ||
				got.Into != tt.want.Into || got.Join != tt.want.Join {
				t.Errorf("table_join = %+v, want %+v", got, tt.want)
			}
			if !p.UsesKafka() {
				t.Error("a table_join uses Kafka, but UsesKafka is false")
			}
		})
	}
}

func TestParseTableJoinErrors(t *testing.T) {
	for _, tt := range []struct{ name, op, want string }{
		{name: "no topic", op: `{name: c, type: table_join, into: x}`, want: `operators[0] "c": missing required field "topic"`},
		{name: "bad topic", op: `{name: c, type: table_join, topic: "a b", into: x}`, want: `operators[0] "c".topic: invalid topic name "a b"`},
		{name: "no into", op: `{name: c, type: table_join, topic: t}`, want: `operators[0] "c": missing required field "into"`},
		{name: "empty into", op: `{name: c, type: table_join, topic: t, into: ""}`, want: `operators[0] "c".into:`},
		{name: "bad field", op: `{name: c, type: table_join, topic: t, into: x, field: "a..b"}`, want: `invalid field path "a..b"`},
		{name: "bad join", op: `{name: c, type: table_join, topic: t, into: x, join: outer}`, want: `invalid value "outer" (want one of inner, left)`},
		{name: "lookup field on a table_join", op: `{name: c, type: table_join, topic: t, into: x, query: q}`, want: `field "query" does not apply to table_join operators`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			setupDir(t)
			doc := "name: p\nsources: [{name: in, type: stdin}]\noperators:\n  - " + tt.op + "\nsinks: [{name: out, type: stdout}]\n"
			_, err := Parse("pipeline.yaml", []byte(doc), nil, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "pipeline.yaml:4:") {
				t.Fatalf("err = %v\nwant it to contain %q at pipeline.yaml:4", err, tt.want)
			}
		})
	}
}
