package record

import (
	"math"
	"testing"
)

func TestAddTime(t *testing.T) {
	tests := []struct {
		name       string
		t, d, want int64
	}{
		{"plain", 1000, 250, 1250},
		{"negative step", 1000, -2000, -1000},
		{"saturates up", math.MaxInt64 - 5, 10, math.MaxInt64},
		{"saturates down", math.MinInt64 + 5, -10, math.MinInt64},
		{"max stays", math.MaxInt64, 0, math.MaxInt64},
	}
	for _, tt := range tests {
		if got := AddTime(tt.t, tt.d); got != tt.want {
			t.Errorf("%s: AddTime(%d, %d) = %d, want %d", tt.name, tt.t, tt.d, got, tt.want)
		}
	}
}

func TestFloorDiv(t *testing.T) {
	for _, tt := range []struct{ a, b, want int64 }{{7, 2, 3}, {-7, 2, -4}, {-8, 2, -4}, {0, 5, 0}, {math.MinInt64, 1000, math.MinInt64/1000 - 1}} {
		if got := FloorDiv(tt.a, tt.b); got != tt.want {
			t.Errorf("FloorDiv(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
