package record

import (
	"bytes"
	"testing"
)

func TestArena(t *testing.T) {
	var a Arena
	if a.Copy(nil) != nil {
		t.Fatal("Copy(nil) is not nil")
	}
	if e := a.Copy([]byte{}); e == nil || len(e) != 0 {
		t.Fatal("Copy(empty) is not a non-nil empty slice")
	}
	big := bytes.Repeat([]byte("x"), arenaChunk+10)
	var kept [][]byte
	for i := range 3000 {
		src := []byte{byte(i), byte(i >> 8), 'v'}
		c := a.Copy(src)
		src[0] = 0xff // the copy is independent of the source
		kept = append(kept, c)
	}
	kept = append(kept, a.Copy(big))
	// Appending to a copy must not overwrite its neighbour.
	_ = append(kept[0], 'z')
	for i := range 3000 {
		if want := []byte{byte(i), byte(i >> 8), 'v'}; !bytes.Equal(kept[i], want) {
			t.Fatalf("copy %d = %v, want %v", i, kept[i], want)
		}
	}
	if !bytes.Equal(kept[3000], big) {
		t.Fatal("large copy differs")
	}
	a.Reset()
	if c := a.Copy([]byte("after")); string(c) != "after" {
		t.Fatalf("copy after Reset = %q", c)
	}
}

func TestOriginString(t *testing.T) {
	tests := []struct {
		name string
		o    Origin
		want string
	}{
		{name: "file", o: Origin{Source: "in", Partition: -1, Offset: 3, Line: 4}, want: "in offset 3 line 4"},
		{name: "kafka", o: Origin{Source: "k", Partition: 2, Offset: 99}, want: "k[2] offset 99"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.o.String(); got != tt.want {
				t.Fatalf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}
