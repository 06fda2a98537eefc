package state

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
)

func TestKeyDoesNotCollide(t *testing.T) {
	// Pairs of (operator, record key, user key) that naive concatenation
	// would map to the same bytes.
	parts := [][3]string{
		{"ab", "c", "d"},
		{"a", "bc", "d"},
		{"a", "b", "cd"},
		{"", "abc", "d"},
		{"abc", "", "d"},
	}
	seen := map[string][3]string{}
	for _, p := range parts {
		k := string(Key(nil, p[0], []byte(p[1]), []byte(p[2])))
		if prev, ok := seen[k]; ok {
			t.Fatalf("Key(%q) == Key(%q)", p, prev)
		}
		seen[k] = p
	}
}

func TestMemory(t *testing.T) {
	s := NewMemory()
	v := []byte("v1")
	if err := s.Apply([]Mutation{{Key: []byte("a"), Value: v}, {Key: []byte("b"), Value: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	v[0] = 'X' // Apply copied the value
	tests := []struct {
		name  string
		key   string
		want  string
		found bool
	}{
		{name: "present", key: "a", want: "v1", found: true},
		{name: "other", key: "b", want: "x", found: true},
		{name: "absent", key: "c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found, err := s.Get([]byte(tt.key))
			if err != nil || found != tt.found || !bytes.Equal(got, []byte(tt.want)) && tt.found {
				t.Fatalf("Get(%q) = %q, %v, %v", tt.key, got, found, err)
			}
		})
	}
	s.Apply([]Mutation{{Key: []byte("a"), Delete: true}})
	if _, found, _ := s.Get([]byte("a")); found || s.Len() != 1 {
		t.Fatalf("after delete: found %v, len %d", found, s.Len())
	}
}

// TestMemoryConcurrent hammers one store from several goroutines; run it
// with -race.
func TestMemoryConcurrent(t *testing.T) {
	s := NewMemory()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				k := []byte(fmt.Sprintf("%d-%d", g, i%10))
				s.Apply([]Mutation{{Key: k, Value: []byte{byte(i)}}})
				if _, found, _ := s.Get(k); !found {
					t.Errorf("key %s lost", k)
					return
				}
			}
		}()
	}
	wg.Wait()
	if s.Len() != 40 {
		t.Fatalf("len %d, want 40", s.Len())
	}
}
