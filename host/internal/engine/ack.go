package engine

import (
	"sync"
	"sync/atomic"
)

// Ack counts the outstanding work on one batch. The engine holds one count
// while it writes the batch; a sink or dead-letter output that finishes a
// batch's records asynchronously (a Kafka producer) calls Add before Write
// returns and Done once for each Add, when its records are durable. When the
// count reaches zero the batch is complete: its source is told (a Kafka
// source may then commit the offsets) and the batch returns to the pool.
//
// Add must be called before Write returns; Done may be called from any
// goroutine. A non-nil error in Done fails the pipeline; the batch is never
// completed, so its offsets are not committed.
type Ack struct {
	n    atomic.Int64
	done func(error)
	once sync.Once
	err  error
}

// NewAck returns an Ack as the engine prepares one for a batch: holding one
// count, the engine's own, and calling done when the count reaches zero or
// at the first error. It is for tests of sinks outside this package.
func NewAck(done func(error)) *Ack {
	a := new(Ack)
	a.reset(done)
	return a
}

// Pending returns the outstanding count.
func (a *Ack) Pending() int64 { return a.n.Load() }

// Add registers n more pieces of outstanding work.
func (a *Ack) Add(n int) { a.n.Add(int64(n)) }

// Done finishes one piece of outstanding work, with its error.
func (a *Ack) Done(err error) {
	if err != nil {
		a.once.Do(func() { a.err = err })
		a.done(err)
		return
	}
	if a.n.Add(-1) == 0 {
		a.done(nil)
	}
}

func (a *Ack) reset(done func(error)) {
	a.n.Store(1)
	a.done = done
	a.once = sync.Once{}
	a.err = nil
}

// Position is the highest offset of one source partition that a batch
// holds: plain data, passed by value.
type Position struct {
	Topic     string
	Partition int32
	Offset    int64
}

// Acker is implemented by sources that need to know when everything derived
// from a batch has been acknowledged by every sink and by the dead-letter
// output. Ack is called once per completed batch with the batch's positions,
// in no particular order across batches and from any goroutine; a source
// that commits offsets must commit only contiguous completed ranges. The
// positions slice belongs to the batch, which is reused once Ack returns:
// a source that keeps positions must copy them.
type Acker interface {
	Ack(positions []Position)
}
