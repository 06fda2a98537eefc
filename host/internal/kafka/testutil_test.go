package kafka

import (
	"testing"
	"time"
)

// pollUntil calls cond every few milliseconds until it returns true, failing
// the test if that takes longer than timeout. what describes the condition in
// the failure message.
func pollUntil(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
