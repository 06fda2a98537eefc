package keyby

import (
	"context"
	"strings"
	"testing"

	"github.com/weir-stream/weir/host/internal/record"
)

func TestKeyBy(t *testing.T) {
	values := []string{`{"id":"a\"b","n":1}`, `{"id":7}`, `{"x":{"y":"z"}}`, `{"id":{"deep":true}}`, `{"id":"caf\u00e9 ☕"}`, `not json`}
	tests := []struct {
		name     string
		path     []string
		bySource map[string][]string
		want     []string // keys of the records passed on, in order
		wantDead int
	}{
		{name: "top-level field", path: []string{"id"}, want: []string{`a"b`, `7`, `{"deep":true}`, "café ☕"}, wantDead: 2},
		{name: "nested field", path: []string{"x", "y"}, want: []string{"z"}, wantDead: 5},
		{name: "another path for one source", path: []string{"id"}, bySource: map[string][]string{"in": {"x", "y"}},
			want: []string{"z"}, wantDead: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := make([]record.Record, len(values))
			for i, v := range values {
				in[i] = record.Record{Value: []byte(v), Origin: record.Origin{Source: "in", Offset: int64(i)}}
			}
			var out record.Output
			if err := New("by", tt.path, tt.bySource).Process(context.Background(), in, &out); err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, r := range out.Records {
				keys = append(keys, string(r.Key))
			}
			if strings.Join(keys, "|") != strings.Join(tt.want, "|") {
				t.Errorf("keys = %q, want %q", keys, tt.want)
			}
			if len(out.Dead) != tt.wantDead {
				t.Fatalf("dead letters = %v, want %d", out.Dead, tt.wantDead)
			}
			for _, d := range out.Dead {
				if d.Stage != "by" || !strings.Contains(d.Reason, "key_by ") {
					t.Errorf("dead letter = %+v", d)
				}
			}
		})
	}
}
