//go:build !race

package fields

import "testing"

// The race detector's instrumentation allocates, so allocation counts are
// checked without it.

func TestExtractNoAllocs(t *testing.T) {
	x := NewExtractor(mustDecl(t, bidFields...))
	recs := bidRecords(64)
	if _, err := x.Extract(recs); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(20, func() {
		if b, err := x.Extract(recs); err != nil || len(b.Kept) != len(recs) {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per batch", allocs)
	}
}
