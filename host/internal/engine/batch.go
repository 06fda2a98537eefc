package engine

import (
	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/host/internal/wasm"
)

// batch is the unit that moves through a pipeline: the records a source read,
// the outputs of each operator, and the dead letters produced on the way.
// One goroutine owns a batch at a time; ownership passes with the channel
// send. Batches are recycled through a bounded pool, which is what bounds the
// pipeline's memory: a source cannot read ahead of the pool.
type batch struct {
	source  int // index of the source that filled it
	records []record.Record
	arena   record.Arena
	dead    []record.DeadLetter
	// stages holds one output per operator; the records of the last stage
	// that ran are the batch's result.
	stages []wasm.Output
	result []record.Record
	// positions holds, per source partition, the highest offset in the
	// batch, for sources that commit (see Acker).
	positions []Position
	// ack counts the work outstanding on the batch once it reaches the
	// sinks; the batch completes when it reaches zero.
	ack Ack
}

func (b *batch) reset() {
	clear(b.records)
	b.records = b.records[:0]
	b.arena.Reset()
	clear(b.dead)
	b.dead = b.dead[:0]
	for i := range b.stages {
		b.stages[i].Reset()
	}
	b.result = nil
	b.positions = b.positions[:0]
}

// pool is a bounded free list of batches.
type pool struct {
	free chan *batch
}

func newPool(size, stages, batchSize int) *pool {
	p := &pool{free: make(chan *batch, size)}
	for range size {
		p.free <- &batch{
			records: make([]record.Record, 0, batchSize),
			stages:  make([]wasm.Output, stages),
		}
	}
	return p
}

func (p *pool) put(b *batch) {
	b.reset()
	p.free <- b
}
