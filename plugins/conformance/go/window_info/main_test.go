package main

import (
	"testing"

	weir "github.com/weir-stream/weir/guest-sdk/go"
)

func TestWindowInfo(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		c    weir.AggContext
		want string
	}{
		{3, weir.AggContext{Key: []byte("k"), Windowed: true, Start: 1000, End: 2000}, `{"key":"k","start":1000,"end":2000,"count":3}`},
		{0, weir.AggContext{Key: []byte(`q"é`), Windowed: true, Start: -5000, End: 0}, `{"key":"q\"é","start":-5000,"end":0,"count":0}`},
		{2, weir.AggContext{Key: []byte{}}, `{"key":"","start":null,"end":null,"count":2}`},
		{1, weir.AggContext{}, `{"key":null,"start":null,"end":null,"count":1}`},
	} {
		if got, err := result(nil, tc.n, tc.c); err != nil || string(got) != tc.want {
			t.Errorf("result(%d, %+v) = %s, %v; want %s", tc.n, tc.c, got, err, tc.want)
		}
	}
	if n, err := codec.Decode(codec.Append(nil, 42)); err != nil || n != 42 {
		t.Errorf("codec round trip: %d, %v", n, err)
	}
}
