package plugintool_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/weir-stream/weir/host/plugintool"
)

func TestParseTestYAML(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name, file, wantErr string
		want                []plugintool.Case // Key, Value, Want, AsJSON, Timestamp, Line and Name compared
		config              string
	}{
		{
			name: "values as JSON and as bytes",
			file: "op: map\nconfig: {field: x}\ncases:\n  - name: json\n    key: k\n    timestamp: 1000\n    value: {x: a, n: 1}\n    want: [{n: 1.0, x: A}, raw]\n  - value: 'not json'\n    dead: 'bad: x'\n",
			want: []plugintool.Case{
				{Name: `"json"`, Line: 4, Key: str("k"), Timestamp: 1000, Value: `{"n":1,"x":"a"}`, Want: []string{`{"n":1,"x":"A"}`, "raw"}, AsJSON: []bool{true, false}},
				{Name: "case 2", Line: 9, Value: "not json", Want: []string{"error: bad: x"}},
			},
			config: `{"field":"x"}`,
		},
		{
			name: "any message, a trap, nothing",
			file: "op: filter\ncases:\n  - {value: a, dead: true}\n  - {value: b, trap: true}\n  - {value: c, want: []}\n",
			want: []plugintool.Case{
				{Name: "case 1", Line: 3, Value: "a", Want: []string{"error:"}},
				{Name: "case 2", Line: 4, Value: "b", Want: []string{"trap"}},
				{Name: "case 3", Line: 5, Value: "c", Want: []string{}},
			},
		},
		{name: "empty", file: "", wantErr: "empty test file"},
		{name: "unknown op", file: "op: reduce\ncases: []\n", wantErr: `line 1: op "reduce"`},
		{name: "unknown top key", file: "op: map\ncase: []\n", wantErr: `line 2: the file: unknown key "case"`},
		{name: "unknown case key", file: "op: map\ncases:\n  - value: a\n    wnat: []\n", wantErr: `line 4: a case: unknown key "wnat"`},
		{name: "no outcome", file: "op: map\ncases:\n  - value: a\n", wantErr: "line 3: case 1: want exactly one of want:, dead: and trap:"},
		{name: "two outcomes", file: "op: map\ncases:\n  - {value: a, want: [], trap: true}\n", wantErr: "line 3: case 1: want exactly one"},
		{name: "dead false", file: "op: map\ncases:\n  - {value: a, dead: false}\n", wantErr: "line 3: case 1: dead: want the message"},
		{name: "want not a list", file: "op: map\ncases:\n  - {value: a, want: A}\n", wantErr: "line 3: case 1: want: want a list"},
		{name: "result on a map", file: "op: map\nresult: 1\ncases: []\n", wantErr: "aggregate tests only"},
		{name: "aggregate without result", file: "op: aggregate\ncases: []\n", wantErr: "needs result:"},
		{name: "window backwards", file: "op: aggregate\nresult: 1\ngroup: {window: [2, 1]}\ncases: []\n", wantErr: "start <= end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := plugintool.ParseTestYAML(strings.NewReader(tt.file))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(f.Cases, tt.want) {
				t.Fatalf("cases\n got %+v\nwant %+v", f.Cases, tt.want)
			}
			if string(f.Config) != tt.config {
				t.Fatalf("config %s, want %s", f.Config, tt.config)
			}
		})
	}
}

func TestParseTestYAMLAggregate(t *testing.T) {
	f, err := plugintool.ParseTestYAML(strings.NewReader("op: aggregate\ngroup: {key: s1, window: [0, 10]}\ncases:\n  - {value: {n: 1}, want: []}\nresult: {avg: 1, count: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Result == nil || *f.Result != `{"avg":1,"count":1}` || !f.ResultAsJSON || f.ResultLine != 5 {
		t.Fatalf("result %v (JSON %v, line %d)", f.Result, f.ResultAsJSON, f.ResultLine)
	}
	if f.Key == nil || *f.Key != "s1" || !reflect.DeepEqual(f.Window, []int64{0, 10}) {
		t.Fatalf("group %v %v", f.Key, f.Window)
	}
}

func FuzzParseTestYAML(f *testing.F) {
	f.Add("op: map\ncases:\n  - {value: {a: 1}, want: [{a: 2}]}\n")
	f.Add("op: aggregate\nresult: x\ncases: []\n")
	f.Fuzz(func(t *testing.T, s string) {
		tf, err := plugintool.ParseTestYAML(strings.NewReader(s))
		if err == nil && (tf == nil || (tf.Op == "aggregate" && tf.Result == nil)) {
			t.Fatalf("accepted an incomplete file: %+v", tf)
		}
	})
}
