package weirtest

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// Seed returns the seed of a test's randomness, which it logs: the
// time's, or $WEIR_TEST_SEED's when set, to replay a failed run's data and
// random choices (which instance is killed, and when). What the machine
// decides (the instances' timing against their work) a seed does not
// fix, so a replay need not fail again.
func Seed(t testing.TB) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("WEIR_TEST_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("WEIR_TEST_SEED=%q: %v", s, err)
		}
		seed = n
	}
	t.Logf("seed %d", seed)
	return seed
}
