package engine

import (
	"context"
	"slices"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
)

// Source produces records. Run reads until the input ends, returning nil, or
// until ctx is done, returning ctx's error, or until it fails. A source is run
// by one goroutine.
type Source interface {
	Name() string
	Run(ctx context.Context, out *Out) error
}

// Out is how a source hands records to the pipeline. It fills batches from
// the pipeline's bounded pool and sends each when it is full or flushed, so a
// source blocks, rather than buffering, when the pipeline is behind. An Out is
// used by one goroutine.
type Out struct {
	ctx       context.Context
	pool      *pool
	ch        chan<- *batch
	source    int
	name      string
	batchSize int
	cur       *batch
	et        *EventTime  // where event time comes from, or nil
	reparts   []string    // repartition topics, whose records keep their timestamps
	count     int64       // records added
	dead      int64       // dead letters added
	live      *liveCounts // the run's counts of this source, published per batch
	// Checkpoints: bar coordinates barriers (nil without checkpoints);
	// pollCancel ends the current PollContext (guarded by bar.mu); handed
	// counts the records and dead letters the source handed out, and the
	// first skip of them are dropped, when a Replayable source resumes.
	bar        *barrier
	auto       bool // a barrier after every record (a Replayable source)
	pollCancel context.CancelFunc
	handed     int64
	skip       int64
}

// Add appends a record to the current batch, copying key, value and header
// values into the batch's arena. It sends the batch when it is full.
func (o *Out) Add(rec record.Record) error {
	o.handed++
	if o.handed <= o.skip {
		return nil // handed out before the checkpoint this run resumes from
	}
	if len(o.reparts) == 0 || !slices.Contains(o.reparts, rec.Origin.Topic) {
		if err := o.et.stamp(&rec); err != nil {
			return o.dead1(rec, err.Error())
		}
	}
	b, err := o.own(&rec)
	if err != nil {
		return err
	}
	if len(rec.Headers) > 0 {
		rec.Headers = b.copyHeaders(rec.Headers)
	}
	b.records = append(b.records, rec)
	b.track(rec.Origin)
	o.count++
	if len(b.records) >= o.batchSize {
		if err := o.Flush(); err != nil {
			return err
		}
	}
	return o.autoBarrier()
}

// autoBarrier is a barrier after every record of a Replayable source, where
// any record boundary is a safe point.
func (o *Out) autoBarrier() error {
	if o.auto && o.bar.requested.Load() {
		return o.Barrier()
	}
	return nil
}

// Dead sends a record the source could not decode to the dead-letter output.
func (o *Out) Dead(rec record.Record, reason string) error {
	o.handed++
	if o.handed <= o.skip {
		return nil
	}
	return o.dead1(rec, reason)
}

func (o *Out) dead1(rec record.Record, reason string) error {
	b, err := o.own(&rec)
	if err != nil {
		return err
	}
	b.dead = append(b.dead, record.DeadLetter{Record: rec, Stage: o.name, Reason: reason})
	b.track(rec.Origin)
	o.dead++
	if len(b.dead) >= o.batchSize {
		if err := o.Flush(); err != nil {
			return err
		}
	}
	return o.autoBarrier()
}

// own makes rec's key and value belong to the current batch, taking a batch
// from the pool if there is none, and names the source in its origin.
func (o *Out) own(rec *record.Record) (*batch, error) {
	if o.cur == nil {
		if err := o.take(); err != nil {
			return nil, err
		}
	}
	b := o.cur
	rec.Key = b.arena.Copy(rec.Key)
	rec.Value = b.arena.Copy(rec.Value)
	if rec.Origin.Source == "" {
		rec.Origin.Source = o.name
	}
	return b, nil
}

// track records a partitioned record's offset in the batch's positions.
// A batch holds few partitions, so a linear scan beats a map.
func (b *batch) track(o record.Origin) {
	if o.Partition < 0 {
		return
	}
	for i := range b.positions {
		p := &b.positions[i]
		if p.Partition == o.Partition && p.Topic == o.Topic {
			p.Offset = max(p.Offset, o.Offset)
			return
		}
	}
	b.positions = append(b.positions, Position{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset})
}

// Announce tells the pipeline that the source now reads a partition, before
// any of its records arrive. An event-time source should announce each
// partition it is assigned: until a partition has shown a record (or gone
// idle), it holds the watermark back, so that its first records are not
// late only because another partition was read first.
func (o *Out) Announce(topic string, partition int32) error {
	return o.AnnounceFrom(topic, partition, NoWatermark)
}

// AnnounceFrom is Announce for a partition whose watermark is known to
// be at least wm before its next record (NoWatermark: not known): as far
// as an earlier reader of it promised, where this run resumes a
// partition another instance read to its end. It holds the watermark at
// wm, not back, until the partition shows a record or goes idle.
func (o *Out) AnnounceFrom(topic string, partition int32, wm int64) error {
	if o.cur == nil {
		if err := o.take(); err != nil {
			return err
		}
	}
	o.cur.announce = append(o.cur.announce, partAnnounce{partKey{topic, partition}, wm})
	return nil
}

// PartitionTime tells the pipeline that a partition of a repartition
// topic (Repartition.Topic) has reached event time t: every instance
// writing to it has promised that no record at or before t follows
// (RepartitionSink.Watermark). The part of the chain after the
// repartition follows the least time over the partitions announced, and
// a partition's time never goes back.
//
// at is where the source read the promise: a Kafka source's watermark
// record, whose offset the batch covers as it covers its records'.
func (o *Out) PartitionTime(at record.Origin, t int64) error {
	if o.cur == nil {
		if err := o.take(); err != nil {
			return err
		}
	}
	o.cur.promises = append(o.cur.promises, partPromise{partKey{at.Topic, at.Partition}, t})
	o.cur.track(at)
	return nil
}

// Skip tells the pipeline that the source read a record at at that it
// hands on to nothing (a repeat it already handed out): the batch
// covers its position, so that its offset is committed with the rest.
func (o *Out) Skip(at record.Origin) error {
	if o.cur == nil {
		if err := o.take(); err != nil {
			return err
		}
	}
	o.cur.track(at)
	return nil
}

// Pending returns the number of records in the batch not yet sent.
func (o *Out) Pending() int {
	if o.cur == nil {
		return 0
	}
	return len(o.cur.records)
}

// publish makes the counts so far visible to Stats.
func (o *Out) publish() {
	if o.live != nil {
		o.live.out.Store(o.count)
		o.live.dead.Store(o.dead)
	}
}

// Flush sends the current batch, if it holds anything.
func (o *Out) Flush() error {
	b := o.cur
	if b == nil || (len(b.records) == 0 && len(b.dead) == 0 && len(b.announce) == 0 && len(b.promises) == 0 && len(b.positions) == 0) {
		return nil
	}
	o.cur = nil
	o.publish()
	select {
	case o.ch <- b:
		return nil
	default:
	}
	start := time.Now()
	select {
	case o.ch <- b:
		if o.live != nil {
			o.live.blocked.Add(int64(time.Since(start)))
		}
		return nil
	case <-o.ctx.Done():
		o.pool.put(b)
		return o.ctx.Err()
	}
}

func (o *Out) take() error {
	select {
	case b := <-o.pool.free:
		b.source = o.source
		o.cur = b
		return nil
	case <-o.ctx.Done():
		return o.ctx.Err()
	}
}
