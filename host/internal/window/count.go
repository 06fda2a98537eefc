package window

import (
	"github.com/weir-stream/weir/host/internal/record"
)

// addCount adds rec to its key's count window, and emits the window when
// rec is its last record. The window's span is the event times of its
// records: [earliest, latest+1).
func (o *Operator) addCount(rec *record.Record, out *record.Output) error {
	if reason := o.read(rec); reason != "" {
		o.dead(rec, reason, out)
		return nil
	}
	ks := o.lookup(rec.Key)
	if ks == nil && o.bounded {
		var err error
		if ks, err = o.load(rec.Key); err != nil {
			return err
		}
	}
	if ks == nil {
		ks = o.create(rec.Key)
	}
	if len(ks.units) == 0 {
		ks.units = append(ks.units, unit{acc: o.newAcc()})
	}
	u := &ks.units[0]
	if reason := o.add(&u.acc, rec); reason != "" {
		o.dead(rec, reason, out)
		if u.n == 0 && !u.stored && !ks.dirty {
			o.freeAcc(&u.acc)
			ks.units = ks.units[:0]
			o.drop(ks)
		}
		return nil
	}
	t := rec.Timestamp
	if u.n == 0 {
		u.start, u.end = t, record.AddTime(t, 1)
	} else {
		u.start, u.end = min(u.start, t), max(u.end, record.AddTime(t, 1))
	}
	u.n++
	o.changed(ks, u)
	if u.n < o.cfg.Count {
		return nil
	}
	if err := o.emit(ks, u.start, u.end, &u.acc, out); err != nil {
		return err
	}
	o.resetAcc(&u.acc)
	u.n = 0
	return nil
}
