package wasm

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/weir-stream/weir/state"
)

// State time-to-live.
//
// With PluginConfig.StateTTL, every state value the guest writes is stored
// behind an 8-byte big-endian stamp: the time it was written, in epoch
// milliseconds — the wall clock at the start of the batch call in
// processing time, the writing record's timestamp in event time. A value
// is expired, and reads as absent, once the reference time is StateTTL or
// more past its stamp: in processing time the wall clock at the start of
// the reading call; in event time the later of the reading record's
// timestamp and the operator's watermark. Writes refresh the stamp, reads
// do not (Flink's StateTtlConfig with OnCreateAndWrite and
// NeverReturnExpired). Expired values are deleted by SweepExpired, which
// the operator runs on its own goroutine between calls. The stamp is the
// host's: the guest reads and writes its values as they are.
//
// The stamp changes the stored format, so an operator's StateTTL may not
// be turned on or off over existing state: a value without its stamp fails
// the call with ErrState.
const ttlStampLen = 8

// ttlConfig is a Plugin's TTL settings, with the clock.
type ttlConfig struct {
	ttl   int64 // ms; 0 means no TTL
	event bool
	now   func() time.Time
}

// stamp returns the stamp of a write by record rec of the current batch.
func (w *Worker) ttlStamp(rec int) int64 {
	if w.p.ttl.event {
		return w.batch[rec].Timestamp
	}
	return w.callNow
}

// ttlExpired reports whether a value stamped at t is expired for a read by
// record rec of the current batch.
func (w *Worker) ttlExpired(t int64, rec int) bool {
	ref := w.callNow
	if w.p.ttl.event {
		ref = max(w.batch[rec].Timestamp, w.watermark)
	}
	return ref != math.MinInt64 && ref-t >= w.p.ttl.ttl
}

// ttlWrap returns value behind its stamp, in w's scratch buffer.
func (w *Worker) ttlWrap(value []byte, rec int) []byte {
	w.ttlBuf = binary.BigEndian.AppendUint64(w.ttlBuf[:0], uint64(w.ttlStamp(rec)))
	w.ttlBuf = append(w.ttlBuf, value...)
	return w.ttlBuf
}

// ttlUnwrap returns a stored value's stamp and the guest's value.
func ttlUnwrap(stored []byte) (int64, []byte, error) {
	if len(stored) < ttlStampLen {
		return 0, nil, fmt.Errorf("a state value of %d bytes has no TTL stamp (was the state written before state_ttl was set?)", len(stored))
	}
	return int64(binary.BigEndian.Uint64(stored)), stored[ttlStampLen:], nil
}

// SetWatermark tells the worker the operator's watermark, which expires
// state in event time. Call it from the worker's goroutine.
func (w *Worker) SetWatermark(wm int64) { w.watermark = max(w.watermark, wm) }

// Watermark returns the watermark SetWatermark last raised.
func (w *Worker) Watermark() int64 { return w.watermark }

// SweepExpired deletes the operator's expired state of the record keys
// owns accepts (nil: all), as of now (processing time) or the watermark
// (event time), and returns how many entries it deleted. It does nothing
// without a TTL. Call it from the worker's goroutine, between batches: the
// keys it owns are written by no one else, so nothing it deletes can have
// been rewritten meanwhile.
func (w *Worker) SweepExpired(owns func(recordKey []byte) bool) (int, error) {
	if w.p.ttl.ttl == 0 {
		return 0, nil
	}
	sc, ok := w.p.store.(state.Scanner)
	if !ok {
		return 0, nil
	}
	ref := w.p.ttl.now().UnixMilli()
	if w.p.ttl.event {
		ref = w.watermark
	}
	if ref == math.MinInt64 {
		return 0, nil
	}
	prefix := state.OperatorPrefix(nil, w.p.cfg.Operator)
	var muts []state.Mutation
	deleted := 0
	flush := func() error {
		err := w.p.store.Apply(muts)
		deleted += len(muts)
		muts = muts[:0]
		return err
	}
	err := sc.Scan(prefix, func(key, value []byte) error {
		rk, ok := state.RecordKey(key[len(prefix):])
		if !ok || (owns != nil && !owns(rk)) {
			return nil
		}
		t, _, err := ttlUnwrap(value)
		if err != nil || ref-t < w.p.ttl.ttl {
			return nil // a value without a stamp fails the call that reads it
		}
		muts = append(muts, state.Mutation{Key: append([]byte(nil), key...), Delete: true})
		if len(muts) == 1024 {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return deleted, w.p.cfg.errorf(ErrState, err, "sweeping expired state")
	}
	return deleted, nil
}
