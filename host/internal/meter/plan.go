package meter

// plan is how Instrument checks one function. scan decides it from a first
// pass over the code section, so that callers know their callees' plans
// when they are rewritten.
type plan struct {
	kind planKind
	cost int // planLeaf: the count of a call of it, the call included
}

type planKind uint8

const (
	// planEntry: a check at the function's entry.
	planEntry planKind = iota
	// planLeaf: no loop, no call or call_indirect, at most MaxStraight-1
	// instructions on any path, and reached only by direct calls of this
	// module. It has no check: a direct call of it counts, in its caller,
	// one for the call and the leaf's longest path.
	planLeaf
)

// facts is what the first pass learns about a function body.
type facts struct {
	calls bool // call or call_indirect
	loops bool
	exit  int // most count at a return or unreachable
}

// plan returns the plan of a body whose longest path to its end is exit.
func (f *facts) plan(exit, maxStraight int) plan {
	if !f.loops && !f.calls && exit < maxStraight {
		return plan{kind: planLeaf, cost: 1 + exit}
	}
	return plan{kind: planEntry}
}

// refer records, in the first pass, that defined function i is named
// other than by a direct call: in an element segment, a ref.func, an
// export or the start section. Such a function may be called where its
// cost is unknown (call_indirect, the host, another module), so it keeps
// its entry check.
func (w *rewriter) refer(i uint32) {
	if uint64(i) < uint64(len(w.referenced)) {
		w.referenced[i] = true
	}
}

// keepEntryChecks turns the leaves that are referenced into planEntry.
func (w *rewriter) keepEntryChecks() {
	for i := range w.plans {
		if w.plans[i].kind == planLeaf && i < len(w.referenced) && w.referenced[i] {
			w.plans[i] = plan{kind: planEntry}
		}
	}
}

// callee reads the function index of a call and, while rewriting,
// renumbers it. Unlike other function indices, it does not refer.
func (w *rewriter) callee(r *reader) {
	if w.editing {
		w.funcIndex(r)
	} else {
		r.u32()
	}
}
