package engine

import (
	"sync"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
)

// batch is what a source fills: records, the arena that owns their bytes,
// and the dead letters of records it could not decode. On its way through
// the chain it is cut into pieces, one per worker that handles some of its
// records; the pieces' outputs point into the batch and into each other, so
// they all live until the batch completes and return to the pool with it.
//
// One goroutine fills a batch; after that its pieces move between
// goroutines, ownership passing with each channel send. mu guards pieces,
// which workers append to concurrently.
type batch struct {
	source  int       // index of the source that filled it
	marker  int       // markerNone, or the news a record-less batch carries (checkpoint.go)
	taken   time.Time // when the dispatcher took it, for Observer
	records []record.Record
	arena   record.Arena
	// headers is the slab the records' headers are copied into, kept with
	// the batch through the pool so that copying them allocates nothing.
	headers []record.Header
	dead    []record.DeadLetter
	// positions holds, per source partition, the highest offset in the
	// batch, for sources that commit (see Acker).
	positions []Position
	// announce lists partitions the source began to read (see Out.Announce
	// and Out.AnnounceFrom).
	announce []partAnnounce
	// promises lists the event times partitions of repartition topics
	// reached (see Out.PartitionTime).
	promises []partPromise
	// ack counts what is outstanding on the batch: the dispatcher's hold,
	// one per live piece, and the sinks' asynchronous work. The batch
	// completes when it reaches zero.
	ack Ack

	mu     sync.Mutex
	pieces []*piece
}

// piece is part of a batch on its way through one segment of the chain:
// the records one worker handles, each step's output, and the dead letters
// collected so far.
type piece struct {
	root *batch
	// wm is the watermark promised after this piece's records, and from
	// the upstream worker (or 0, the dispatcher) that promised it. A
	// watermark-only piece carries no records and belongs to no batch.
	wm     int64
	from   int
	wmOnly bool
	// repart is, for a piece bound for the sink loop, the repartition
	// whose sink it goes to, plus one; 0 for the pipeline's sinks.
	repart int
	// snap, on a watermark-only piece of a pipeline with repartitions,
	// is the sources' partition watermarks as the dispatcher had them
	// when it sent the piece (nil for none).
	snap    *inputTimes
	records []record.Record
	buf     []record.Record // owned storage for records
	dead    []record.DeadLetter
	outs    []record.Output // one per step of the chain, used by the steps it went through
}

var piecePool = sync.Pool{New: func() any { return new(piece) }}

// emitPool holds the batches that carry what operators emit on a
// watermark. They are not from the bounded pool: a worker must never wait
// for a batch that may sit in its own input queue.
var emitPool = sync.Pool{New: func() any { return new(batch) }}

// watermarkPiece returns a piece that only promises watermark wm.
func watermarkPiece(wm int64, from int) *piece {
	pc := piecePool.Get().(*piece)
	pc.wm, pc.from, pc.wmOnly = wm, from, true
	return pc
}

// newPiece makes a piece of b holding recs (copied into the piece's own
// storage when recs is nil and records are appended later).
func (b *batch) newPiece(recs []record.Record) *piece {
	pc := piecePool.Get().(*piece)
	pc.root = b
	pc.records = recs
	b.ack.Add(1)
	b.mu.Lock()
	b.pieces = append(b.pieces, pc)
	b.mu.Unlock()
	return pc
}

// split cuts recs into per-worker pieces by route; a worker without records
// gets nil.
func (b *batch) split(recs []record.Record, workers int, route func(*record.Record) int) []*piece {
	parts := make([]*piece, workers)
	for i := range recs {
		w := route(&recs[i])
		pc := parts[w]
		if pc == nil {
			pc = b.newPiece(nil)
			pc.records = pc.buf[:0]
			parts[w] = pc
		}
		pc.records = append(pc.records, recs[i])
	}
	for _, pc := range parts {
		if pc != nil {
			pc.buf = pc.records
		}
	}
	return parts
}

// out returns the output buffer of step j of the chain. Steps have a slot
// each, so a piece that moves on to the next segment keeps the outputs its
// records point into.
func (pc *piece) out(j int) *record.Output {
	for len(pc.outs) <= j {
		pc.outs = append(pc.outs, record.Output{})
	}
	return &pc.outs[j]
}

func (pc *piece) reset() {
	pc.root = nil
	pc.wm, pc.from, pc.wmOnly, pc.repart, pc.snap = 0, 0, false, 0, nil
	clear(pc.buf)
	pc.buf = pc.buf[:0]
	pc.records = nil
	clear(pc.dead)
	pc.dead = pc.dead[:0]
	for i := range pc.outs {
		pc.outs[i].Reset()
	}
}

func (b *batch) reset() {
	b.marker = markerNone
	clear(b.records)
	b.records = b.records[:0]
	b.arena.Reset()
	clear(b.headers)
	b.headers = b.headers[:0]
	clear(b.dead)
	b.dead = b.dead[:0]
	b.positions = b.positions[:0]
	b.announce = b.announce[:0]
	b.promises = b.promises[:0]
	for _, pc := range b.pieces {
		pc.reset()
		piecePool.Put(pc)
	}
	clear(b.pieces)
	b.pieces = b.pieces[:0]
}

// headerSlab is the least capacity of a batch's header slab.
const headerSlab = 256

// copyHeaders returns a copy of hs, values included, owned by the batch.
// A full slab is replaced rather than grown in place, since the headers of
// records already added point into it; Reset keeps the last, largest one.
func (b *batch) copyHeaders(hs []record.Header) []record.Header {
	if cap(b.headers)-len(b.headers) < len(hs) {
		b.headers = make([]record.Header, 0, max(headerSlab, 2*cap(b.headers), len(hs)))
	}
	start := len(b.headers)
	for _, h := range hs {
		b.headers = append(b.headers, record.Header{Key: h.Key, Value: b.arena.Copy(h.Value)})
	}
	return b.headers[start:len(b.headers):len(b.headers)]
}

// pool is a bounded free list of batches.
type pool struct {
	free chan *batch
}

func newPool(size, batchSize int) *pool {
	p := &pool{free: make(chan *batch, size)}
	for range size {
		p.free <- &batch{records: make([]record.Record, 0, batchSize)}
	}
	return p
}

func (p *pool) put(b *batch) {
	b.reset()
	p.free <- b
}
