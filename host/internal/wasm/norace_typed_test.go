//go:build !race

package wasm

import (
	"context"
	"testing"

	"github.com/weir-stream/weir/host/internal/record"
)

// The race detector's instrumentation makes package fields allocate, so
// this test runs without it.

// TestZeroAllocTyped checks that, once its buffers have grown, a typed
// batch call allocates nothing: extraction, the frame, decoding and
// patching included.
func TestZeroAllocTyped(t *testing.T) {
	rt := newRuntime(t, nil)
	in := bids(64)
	for _, c := range benchConventions(t) {
		t.Run(c.name, func(t *testing.T) {
			_, w := mustLoad(t, rt, c.cfg)
			out := new(record.Output)
			allocs := testing.AllocsPerRun(200, func() {
				out.Reset()
				if err := w.Process(context.Background(), in, out); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("Process allocates %.1f times per batch, want 0", allocs)
			}
		})
	}
}
