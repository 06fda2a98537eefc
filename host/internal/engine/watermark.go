package engine

import (
	"context"

	"github.com/weir-stream/weir/host/internal/record"
)

// NoWatermark is the watermark before any is known: no event time has been
// promised complete.
const NoWatermark int64 = -1 << 63

// Watermarker is implemented by operators that act on event time (windows).
// After a worker has handed an operator every record it has before
// watermark wm — a promise that no record with an event time at or below wm
// follows, except late ones — it calls OnWatermark, where the operator may
// emit results (close windows) into out. Watermarks only increase. It is
// called by the operator's worker goroutine, like Process.
type Watermarker interface {
	OnWatermark(ctx context.Context, wm int64, out *record.Output) error
}
