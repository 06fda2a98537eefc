package engine

import "fmt"

// writeOutputs is the sink loop, run on Run's goroutine: it writes each
// piece the last segment hands on to every sink and its dead letters to the
// dead-letter output, and flushes whenever nothing else is queued, until
// the last segment's workers have all ended. After a failure it only
// drains its input.
func (r *runner) writeOutputs() {
	for pc := range r.sinkCh {
		if r.hard.Err() != nil {
			continue
		}
		if err := r.write(pc); err != nil {
			r.fail(err)
			continue
		}
		if len(r.sinkCh) == 0 {
			r.flush()
		}
	}
	if r.hard.Err() == nil {
		r.flush()
	}
}

// flush makes what the synchronous outputs were given durable, which
// completes the pieces written since the last flush.
func (r *runner) flush() {
	if err := r.p.flush(); err != nil {
		r.fail(err)
		return
	}
	for _, pc := range r.unflushed {
		pc.root.ack.Done(nil)
	}
	clear(r.unflushed)
	r.unflushed = r.unflushed[:0]
}

// write hands pc to its outputs: a repartition's sink, or every sink.
func (r *runner) write(pc *piece) error {
	if pc.repart > 0 {
		return r.writeRepartition(pc)
	}
	if err := r.p.writePiece(pc, r.st); err != nil {
		return err
	}
	r.unflushed = append(r.unflushed, pc)
	return nil
}

// writePiece gives pc's records to every sink and its dead letters to the
// dead-letter output.
func (p *Pipeline) writePiece(pc *piece, st *runStats) error {
	ack := &pc.root.ack
	for i, s := range p.Sinks {
		before := len(pc.dead)
		var err error
		pc.dead, err = s.Write(pc.records, pc.dead, ack)
		if err != nil {
			return err
		}
		rejected := len(pc.dead) - before
		st.sinks[i].add(len(pc.records), len(pc.records)-rejected, rejected)
		if st.tap != nil && st.tap.Sampling() {
			st.tap.SinkWrote(i, pc.records)
		}
	}
	return p.writeDead(pc, st)
}

// writeDead gives pc's dead letters to the dead-letter output.
func (p *Pipeline) writeDead(pc *piece, st *runStats) error {
	ack := &pc.root.ack
	if p.DeadLetter == nil {
		if len(pc.dead) > 0 {
			return fmt.Errorf("%d records failed and there is no dead-letter output: %s", len(pc.dead), pc.dead[0].Reason)
		}
		return nil
	}
	for i := range pc.dead {
		if err := p.DeadLetter.Write(&pc.dead[i], ack); err != nil {
			return err
		}
		st.deadLetters.Add(1)
		if st.tap != nil {
			st.tap.DeadLettered(&pc.dead[i])
		}
	}
	return nil
}

func (p *Pipeline) flush() error {
	for _, s := range p.Sinks {
		if err := s.Flush(); err != nil {
			return err
		}
	}
	for _, rp := range p.Repartitions {
		if err := rp.Sink.Flush(); err != nil {
			return err
		}
	}
	if p.DeadLetter != nil {
		return p.DeadLetter.Flush()
	}
	return nil
}
