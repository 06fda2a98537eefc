package config

import (
	"slices"
	"strings"
	"testing"
)

func TestParseNexmark(t *testing.T) {
	setupDir(t)
	doc := `name: q0
sources:
  - name: events
    type: nexmark
    count: 5000
    kinds: [bid, auction]
    first_event_rate: 2500.5
    base_time: 1000
    rate: 100
    seed: -7
    event_time: {field: dateTime}
sinks: [{name: out, type: discard}]
`
	p, err := Parse("pipeline.yaml", []byte(doc), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Sources[0]
	if s.Type != SourceNexmark || s.Count != 5000 || s.Rate != 100 || s.Seed != -7 ||
		!slices.Equal(s.Nexmark.Kinds, []string{"bid", "auction"}) || s.Nexmark.FirstEventRate != 2500.5 ||
		s.Nexmark.BaseTime != 1000 || s.EventTime == nil || s.EventTime.Field != "dateTime" {
		t.Errorf("source = %+v", s)
	}
}

func TestParseNexmarkDefaults(t *testing.T) {
	setupDir(t)
	p, err := Parse("pipeline.yaml", []byte("name: q\nsources: [{name: e, type: nexmark}]\nsinks: [{name: out, type: discard}]\n"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Sources[0]
	if s.Count != 0 || s.Rate != 0 || s.Seed != 0 || s.Nexmark.Kinds != nil ||
		s.Nexmark.FirstEventRate != DefaultNexmarkFirstEventRate || s.Nexmark.BaseTime != DefaultNexmarkBaseTime || s.EventTime != nil {
		t.Errorf("source = %+v", s)
	}
}

func TestParseNexmarkEnv(t *testing.T) {
	setupDir(t)
	env := map[string]string{"WEIR_SOURCES_E_COUNT": "42", "WEIR_SOURCES_E_FIRST_EVENT_RATE": "1e6"}
	p, err := Parse("pipeline.yaml", []byte("name: q\nsources: [{name: e, type: nexmark, count: 1}]\nsinks: [{name: out, type: discard}]\n"), func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)

	if err != nil {
		t.Fatal(err)
	}
	if s := p.Sources[0]; s.Count != 42 || s.Nexmark.FirstEventRate != 1e6 {
		t.Errorf("source = %+v", s)
	}
}

func TestParseNexmarkErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"negative count", `{name: e, type: nexmark, count: -1}`, `sources[0] "e".count`},
		{"negative rate", `{name: e, type: nexmark, rate: -5}`, `must not be negative`},
		{"zero first_event_rate", `{name: e, type: nexmark, first_event_rate: 0}`, `must be in (0, 1e9]`},
		{"huge first_event_rate", `{name: e, type: nexmark, first_event_rate: 2e9}`, `must be in (0, 1e9]`},
		{"zero base_time", `{name: e, type: nexmark, base_time: 0}`, `sources[0] "e".base_time`},
		{"empty kinds", `{name: e, type: nexmark, kinds: []}`, `at least one kind is required`},
		{"unknown kind", `{name: e, type: nexmark, kinds: [bids]}`, `invalid value "bids" (want one of person, auction, bid; did you mean "bid"?)`},
		{"duplicate kind", `{name: e, type: nexmark, kinds: [bid, bid]}`, `duplicate kind "bid"`},
		{"kinds not a list", `{name: e, type: nexmark, kinds: bid}`, `expected a list`},
		{"generator field", `{name: e, type: nexmark, fields: [{name: a, kind: random_bool}]}`, `"fields"`},
		{"nexmark field on a generator", `{name: e, type: generator, kinds: [bid], fields: [{name: a, kind: random_bool}]}`, `"kinds"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setupDir(t)
			doc := "name: p\nsources:\n  - " + tt.src + "\nsinks: [{name: out, type: discard}]\n"
			_, err := Parse("pipeline.yaml", []byte(doc), nil, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "pipeline.yaml:3:") {
				t.Fatalf("err = %v\nwant it to contain %q at line 3", err, tt.want)
			}
		})
	}
}
