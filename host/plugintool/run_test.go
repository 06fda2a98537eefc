package plugintool_test

import (
	"strings"
	"testing"

	"github.com/weir-stream/weir/host/plugintool"
)

func TestParseTestFile(t *testing.T) {
	tests := []struct {
		name, file, wantErr string
		cases               int
	}{
		{name: "map", file: `{"op":"map","config":{"field":"x"}}` + "\n" + `{"value":"a","want":["A"]}` + "\n\n" + `{"key":"k","value":"b","want":[]}`, cases: 2},
		{name: "aggregate", file: `{"op":"aggregate"}` + "\n" + `{"value":"1","want":[]}` + "\n" + `{"result":"1"}`, cases: 1},
		{name: "empty", file: "", wantErr: "empty test file"},
		{name: "bad header", file: `{"op":"map","cfg":{}}`, wantErr: `line 1: the header`},
		{name: "unknown op", file: `{"op":"reduce"}`, wantErr: `line 1: unknown op "reduce"`},
		{name: "bad case", file: `{"op":"map"}` + "\n" + `{"value":1}`, wantErr: "line 2: a case"},
		{name: "not json", file: `{"op":"map"}` + "\n" + `nope`, wantErr: "line 2:"},
		{name: "result on a map", file: `{"op":"map"}` + "\n" + `{"result":"x"}`, wantErr: "line 2: a result line is for aggregate tests only"},
		{name: "after the result", file: `{"op":"aggregate"}` + "\n" + `{"result":"x"}` + "\n" + `{"value":"1","want":[]}`, wantErr: "line 3: nothing may follow"},
		{name: "aggregate without result", file: `{"op":"aggregate"}`, wantErr: "needs a last line"},
		{name: "aggregate of a group", file: `{"op":"aggregate","key":"k","window":[1000,2000]}` + "\n" + `{"result":"1"}`},
		{name: "group of a map", file: `{"op":"map","key":"k"}`, wantErr: `line 1: "key" and "window" are for aggregate tests only`},
		{name: "window backwards", file: `{"op":"aggregate","window":[2,1]}` + "\n" + `{"result":"1"}`, wantErr: "line 1: window [2, 1] starts after its end"},
		{name: "window of one bound", file: `{"op":"aggregate","window":[1]}` + "\n" + `{"result":"1"}`, wantErr: "line 1: window: want [start, end], not 1 numbers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := plugintool.ParseTestFile(strings.NewReader(tt.file))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Cases) != tt.cases {
				t.Fatalf("%d cases, want %d", len(f.Cases), tt.cases)
			}
		})
	}
}

func FuzzParseTestFile(f *testing.F) {
	f.Add(`{"op":"map","config":{}}` + "\n" + `{"key":"k","value":"v","want":["x","error:"]}`)
	f.Add(`{"op":"aggregate"}` + "\n" + `{"result":"r"}`)
	f.Fuzz(func(t *testing.T, s string) {
		tf, err := plugintool.ParseTestFile(strings.NewReader(s))
		if err == nil && (tf == nil || (tf.Op == "aggregate" && tf.Result == nil)) {
			t.Fatalf("accepted an incomplete file: %+v", tf)
		}
	})
}
