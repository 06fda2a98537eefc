package main

import (
	"testing"
	"time"
)

func TestBounds(t *testing.T) {
	if err := configure([]byte(`{"size":"5s"}`)); err != nil {
		t.Fatal(err)
	}
	defer func() { sizeMs = 0 }()
	end := time.Date(2024, 8, 6, 16, 0, 5, 0, time.UTC).UnixMilli()
	for _, c := range []struct {
		value string
		ts    int64
		want  string
	}{
		{`{"country":"TR","count":13}`, end - 1,
			`{"country":"TR","window_start":"2024-08-06 16:00:00","window_end":"2024-08-06 16:00:05","count":13}`},
		{`{ "country" : "G\u0042", "count":2 }`, end + 4999, // values copied as they are
			`{"country":"G\u0042","window_start":"2024-08-06 16:00:05","window_end":"2024-08-06 16:00:10","count":2}`},
		{`{}`, end - 1, `{"window_start":"2024-08-06 16:00:00","window_end":"2024-08-06 16:00:05"}`},
	} {
		got, err := appendWithBounds(nil, []byte(c.value), c.ts)
		if err != nil || string(got) != c.want {
			t.Errorf("%s at %d: %s, %v; want %s", c.value, c.ts, got, err, c.want)
		}
	}
	for _, c := range []struct {
		value string
		ts    int64
		want  string
	}{
		{`{"country":"TR","count":13}`, end, "timestamp 1722960005000 is not the last millisecond of a 5s window"},
		{`[1]`, end - 1, "the result is not a JSON object"},
	} {
		if _, err := appendWithBounds(nil, []byte(c.value), c.ts); err == nil || err.Error() != c.want {
			t.Errorf("%s at %d: error %v, want %q", c.value, c.ts, err, c.want)
		}
	}
	// Milliseconds print as a fraction, as Flink SQL prints TIMESTAMP(3).
	if err := configure([]byte(`{"size":"1500ms"}`)); err != nil {
		t.Fatal(err)
	}
	got, err := appendWithBounds(nil, []byte(`{"k":1}`), 1500*3-1)
	if want := `{"k":1,"window_start":"1970-01-01 00:00:03","window_end":"1970-01-01 00:00:04.5"}`; err != nil || string(got) != want {
		t.Errorf("got %s, %v; want %s", got, err, want)
	}
}

func TestConfigure(t *testing.T) {
	defer func() { sizeMs = 0 }()
	for _, config := range []string{``, `{}`, `{"size":5}`, `{"size":"0s"}`, `{"size":"-5s"}`, `{"size":"1.5ms"}`, `{"size":"five"}`} {
		if err := configure([]byte(config)); err == nil {
			t.Errorf("config %s accepted", config)
		}
	}
}
