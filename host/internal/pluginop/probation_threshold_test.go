package pluginop

import "testing"

// TestRollbackThreshold pins the failure share above which a version on
// probation is rolled back, for the previous version's share.
func TestRollbackThreshold(t *testing.T) {
	for _, tc := range []struct {
		name     string
		baseline float64
		want     float64
	}{
		{"a clean previous version: more than half", 0, 0.5},
		{"a quarter rejected before: still half", 0.25, 0.5},
		{"30% before: a quarter more", 0.3, 0.55},
		{"60% before: half way to every record", 0.6, 0.8},
		{"90% before: failing on everything is still too much", 0.9, 0.95},
		{"everything failed before: nothing is worse", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rollbackThreshold(tc.baseline); got < tc.want-1e-9 || got > tc.want+1e-9 {
				t.Errorf("rollbackThreshold(%v) = %v, want %v", tc.baseline, got, tc.want)
			}
		})
	}
}
