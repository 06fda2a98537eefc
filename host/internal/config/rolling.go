package config

import (
	"fmt"
	"time"
)

// Orders of rolling operators.
const (
	RollingRange = "range" // windows bounded by time before the current row (default)
	RollingRows  = "rows"  // windows bounded by a count of rows
)

// Rolling holds a rolling (OVER) operator's settings.
type Rolling struct {
	Order      string // RollingRange (default) or RollingRows
	Windows    []RollingWindowSpec
	Aggregates []AggregateSpec // func is one of sum, count, avg, min, max
}

// RollingWindowSpec is one trailing window of a rolling operator.
type RollingWindowSpec struct {
	Meta
	Name  string        // suffix of the window's output fields: <as>_<name>
	Range time.Duration // order range: > 0, whole milliseconds
	Rows  int64         // order rows: the current row and the rows-1 before it
}

var (
	rollingFields       = []string{"name", "type", "order", "windows", "aggregates"}
	rollingOrders       = []string{RollingRange, RollingRows}
	rollingWindowFields = []string{"name", "range", "rows"}
	rollingAggFuncs     = []string{"sum", "count", "avg", "min", "max"}
	rollingAggFields    = []string{"func", "field", "as"}
)

// rolling decodes a rolling operator's fields.
func (d *decoder) rolling(o *object, op *Operator) {
	r := &op.Rolling
	r.Order = RollingRange
	ord, ost := o.enum("order", rollingOrders...)
	if ost == good {
		r.Order = ord
	}
	wins, st := o.list("windows")
	if st == absent || (st == good && len(wins) == 0) {
		o.missingf("a rolling operator needs at least one entry in %q", "windows")
	}
	names := map[string]bool{}
	for i, n := range wins {
		w := RollingWindowSpec{}
		wo := d.object(n, op.Pos, fmt.Sprintf("%s[%d]", o.path("windows"), i), "", &w.Meta, false)
		if wo == nil {
			continue
		}
		if s, nst := wo.nonEmpty("name"); nst == absent {
			wo.missing("name")
		} else if nst == good {
			if names[s] {
				wo.fail("name", wo.get("name", kString), "window name %q is already used", s)
			}
			names[s], w.Name = true, s
		}
		rangeGiven, rowsGiven := wo.get("range", kNode) != nil, wo.get("rows", kNode) != nil
		switch {
		case rangeGiven && rowsGiven:
			wo.fail("rows", wo.get("rows", kNode), "a window takes either range or rows, not both")
		case r.Order == RollingRange && rowsGiven:
			wo.fail("rows", wo.get("rows", kNode), "applies only with order: rows (this operator's order is range)")
		case r.Order == RollingRows && rangeGiven:
			wo.fail("range", wo.get("range", kNode), "applies only with order: range (this operator's order is rows)")
		case r.Order == RollingRange && !rangeGiven:
			wo.missingf("a window of order range needs %q", "range")
		case r.Order == RollingRows && !rowsGiven:
			wo.missingf("a window of order rows needs %q", "rows")
		}
		if v, dst := wo.duration("range"); dst == good {
			switch {
			case v <= 0:
				wo.fail("range", wo.get("range", kString), "must be positive")
			case v%time.Millisecond != 0:
				wo.fail("range", wo.get("range", kString), "%v is not a whole number of milliseconds", v)
			}
			w.Range = v
		}
		if v, rst := wo.int("rows", 1, 1<<30); rst == good {
			w.Rows = v
		}
		wo.finish(rollingWindowFields, rollingWindowFields, "")
		r.Windows = append(r.Windows, w)
	}
	items, ast := o.list("aggregates")
	if ast == absent || (ast == good && len(items) == 0) {
		o.missingf("a rolling operator needs at least one entry in %q", "aggregates")
	}
	seen := map[string]bool{}
	for i, n := range items {
		a, ao := d.aggregate(n, op, fmt.Sprintf("%s[%d]", o.path("aggregates"), i), rollingAggFuncs)
		if ao == nil {
			continue
		}
		if s, sst := ao.nonEmpty("as"); sst == absent {
			ao.missing("as")
		} else if sst == good {
			for _, w := range r.Windows {
				if w.Name == "" {
					continue
				}
				if f := s + "_" + w.Name; seen[f] {
					ao.fail("as", ao.get("as", kString), "output field %q is already used by another aggregate", f)
					break
				}
			}
			for _, w := range r.Windows {
				seen[s+"_"+w.Name] = true
			}
			a.As = s
		}
		ao.finish(rollingAggFields, rollingAggFields, "")
		r.Aggregates = append(r.Aggregates, a)
	}
}
