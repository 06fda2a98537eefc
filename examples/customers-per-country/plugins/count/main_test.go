package main

import (
	"testing"

	weir "github.com/weir-stream/weir/guest-sdk/go"
)

func TestCount(t *testing.T) {
	a := acc{}
	for _, doc := range []string{`{"id":3, "country":"TR"}`, `{"id":4, "country":"TR"}`} {
		var err error
		if a, err = add(a, &weir.Record{Value: []byte(doc)}); err != nil {
			t.Fatal(err)
		}
	}
	if a != (acc{country: "TR", count: 2}) {
		t.Errorf("accumulator %+v", a)
	}
	for doc, want := range map[string]string{
		`{"id":1}`:           "missing field country",
		`{"country":["TR"]}`: "field country is not a string",
	} {
		if _, err := add(a, &weir.Record{Value: []byte(doc)}); err == nil || err.Error() != want {
			t.Errorf("add(%s) error %v, want %q", doc, err, want)
		}
	}
	b, err := codec.Decode(codec.Append(nil, a))
	if err != nil || b != a {
		t.Errorf("codec round trip: %+v, %v", b, err)
	}
	if _, err := codec.Decode([]byte{1, 0, 0, 0}); err == nil {
		t.Error("decoded a truncated accumulator")
	}
	if m := merge(acc{}, acc{"GB", 2}); m != (acc{"GB", 2}) {
		t.Errorf("merge into a fresh accumulator = %+v", m)
	}
	if m := merge(acc{"TR", 6}, acc{"TR", 7}); m != (acc{"TR", 13}) {
		t.Errorf("merge = %+v", m)
	}
	if got, err := result(nil, acc{"TR", 13}); err != nil || string(got) != `{"country":"TR","count":13}` {
		t.Errorf("result = %s, %v", got, err)
	}
}

func TestAddDoesNotAllocate(t *testing.T) {
	r := &weir.Record{Value: []byte(`{"id":3, "first":"Yasemin", "last":"KOC", "country":"TR"}`)}
	a, _ := add(acc{}, r)
	if n := testing.AllocsPerRun(100, func() { a, _ = add(a, r) }); n != 0 {
		t.Errorf("add allocates %v times per record", n)
	}
}
