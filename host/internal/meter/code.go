package meter

import "fmt"

// frame is an entry of the control stack of a function body. Besides the
// kind of block, it keeps the straight-line counts that meet at its end:
// Instrument counts, before each instruction, the most instructions that
// any path from the last check may have run, and so must take the maximum
// over the paths that merge at an end.
type frame struct {
	kind    class // cBlock (also the function), cLoop, cIf, or cElse once the else arm began
	start   int   // count after the if: where the else arm, or a missing one, starts
	reached int   // most count among the branches to the end of the frame
}

// codeSection reads the bodies: in the first pass (scan), to plan each
// function's checks; in the second, to rewrite them as planned.
func (w *rewriter) codeSection(r *reader) {
	n := r.u32()
	if n != w.funcs && !r.failed() {
		r.fail(fmt.Sprintf("%d bodies for %d functions", n, w.funcs))
	}
	for i := uint32(0); i < n && !r.failed(); i++ {
		sizeAt := r.pos
		size := r.u32()
		width := r.pos - sizeAt
		body := &w.body // not a local, which would escape through resize
		*body = r.sub(size)
		if r.failed() {
			return
		}
		w.fn = i
		if w.editing {
			w.resize(sizeAt, width, body, w.function)
		} else {
			w.plans = append(w.plans, w.analyze(body))
		}
		if body.failed() {
			r.badAt = body.badAt
			r.why = fmt.Sprintf("function %d: %s", w.k+i, body.why)
		}
	}
	if !w.editing {
		w.keepEntryChecks()
	}
}

// function rewrites one function body: its locals, then its instructions
// with the checks its plan calls for.
func (w *rewriter) function(r *reader) {
	w.locals(r)
	p := plan{kind: planEntry}
	if int(w.fn) < len(w.plans) {
		p = w.plans[w.fn]
	}
	w.ctl = append(w.ctl[:0], frame{kind: cBlock})
	if p.kind == planEntry {
		w.insertCheck(r.pos)
	}
	w.instructions(r)
	wantBodyEnd(r)
}

// analyze reads one function body in the first pass and plans its checks.
func (w *rewriter) analyze(r *reader) plan {
	w.locals(r)
	w.facts = facts{}
	w.ctl = append(w.ctl[:0], frame{kind: cBlock})
	n := w.instructions(r)
	wantBodyEnd(r)
	return w.facts.plan(max(w.facts.exit, n), w.opts.MaxStraight)
}

// maxLocals bounds the locals of a function, as other engines do (50,000
// in wasmparser and V8): wazero allocates a body's declared locals before
// it reads them, so a few bytes could otherwise make it allocate 4 GiB.
const maxLocals = 50000

func (w *rewriter) locals(r *reader) {
	total := 0
	for n := r.u32(); n > 0 && !r.failed(); n-- {
		total += int(r.u32())
		r.valType()
		if total > maxLocals {
			r.fail(fmt.Sprintf("more than %d locals in one function", maxLocals))
		}
	}
}

func wantBodyEnd(r *reader) {
	if !r.failed() && r.pos != r.end {
		r.fail("bytes after the end of the function")
	}
}

// insertCheck writes a check at at, in the second pass.
func (w *rewriter) insertCheck(at int) {
	if w.editing {
		w.flush(at)
		w.out = append(w.out, w.check...)
	}
}

// instructions reads the instructions of a body up to the end of the
// function, inserting checks in the second pass, and returns the count at
// the function's end. n is the straight-line count: the most instructions
// run since the last check on any path to the next instruction; a call of
// a leaf counts the leaf's instructions too.
func (w *rewriter) instructions(r *reader) int {
	n := 0
	for len(w.ctl) > 0 && !r.failed() {
		at := r.pos
		c := opClass[r.byte()]
		cost := 1
		if c == cCall {
			cost = w.callCost(r)
		}
		if n+cost > w.opts.MaxStraight && w.editing {
			w.insertCheck(at)
			n = 0
		}
		n += cost
		switch c { // the most common classes first, without a call
		case cPlain:
		case cU32:
			r.u32()
		default:
			n = w.instruction(r, c, at, n)
		}
	}
	return n
}

// instruction reads the rest of the instruction at at, of class c, whose
// opcode made the count n, and returns the count after it.
func (w *rewriter) instruction(r *reader, c class, at, n int) int {
	switch c {
	case cBlock, cIf:
		r.blockType()
		w.ctl = append(w.ctl, frame{kind: c, start: n})
	case cLoop:
		r.blockType()
		w.ctl = append(w.ctl, frame{kind: c})
		w.facts.loops = true
		w.insertCheck(r.pos)
		return 0
	case cElse:
		return w.elseArm(r, n)
	case cEnd:
		return w.end(n)
	case cBr:
		w.branch(r, n)
		return 0 // what follows is dead until the end of the block
	case cBrIf:
		w.branch(r, n)
	case cBrTable:
		for m := uint64(r.u32()); m > 0 && !r.failed(); m-- {
			w.branch(r, n)
		}
		w.branch(r, n)
		return 0
	case cStop:
		w.facts.exit = max(w.facts.exit, n)
		return 0
	case cCall, cCallIndirect:
		w.facts.calls = true
		w.operand(r, c)
	default:
		if !w.operand(r, c) && !r.failed() {
			r.pos = at
			r.fail("opcode " + opcodeName(r) + " is not in CoreFeaturesV2")
		}
	}
	return n
}

// callCost reads, without consuming it, the callee of the call at r, and
// returns the count of the call: 1, or for a leaf, its plan's cost.
func (w *rewriter) callCost(r *reader) int {
	s := *r
	x := s.u32()
	if !w.editing || s.failed() || x < w.k || uint64(x-w.k) >= uint64(len(w.plans)) {
		return 1
	}
	if p := w.plans[x-w.k]; p.kind == planLeaf {
		return p.cost
	}
	return 1
}

// branch reads a label and records the count at the end of its block.
// Branches to a loop go to its header, which has a check.
func (w *rewriter) branch(r *reader, n int) {
	l := r.u32()
	if uint64(l) >= uint64(len(w.ctl)) {
		if !r.failed() {
			r.fail("branch to an unknown label")
		}
		return
	}
	if f := &w.ctl[len(w.ctl)-1-int(l)]; f.kind != cLoop && n > f.reached {
		f.reached = n
	}
}

func (w *rewriter) elseArm(r *reader, n int) int {
	f := &w.ctl[len(w.ctl)-1]
	if f.kind != cIf {
		r.fail("else outside an if")
		return 0
	}
	f.kind = cElse
	f.reached = max(f.reached, n)
	return f.start
}

// end pops a frame and returns the count after it: the most of the paths
// that meet there.
func (w *rewriter) end(n int) int {
	f := w.ctl[len(w.ctl)-1]
	w.ctl = w.ctl[:len(w.ctl)-1]
	n = max(n, f.reached)
	if f.kind == cIf { // no else: a false condition goes straight here
		n = max(n, f.start)
	}
	return n
}

// operand reads the immediates of an instruction of class c that does not
// change control flow, and reports whether c is such a class.
func (w *rewriter) operand(r *reader, c class) bool {
	switch c {
	case cPlain:
	case cU32:
		r.u32()
	case cU32x2, cCallIndirect:
		r.u32()
		r.u32()
	case cS32:
		r.sleb(5)
	case cS64:
		r.sleb(10)
	case cBytes4:
		r.skip(4)
	case cBytes8:
		r.skip(8)
	case cBytes16:
		r.skip(16)
	case cLane:
		r.skip(1)
	case cMemLane:
		r.u32()
		r.u32()
		r.skip(1)
	case cRefNull:
		r.refNullType()
	case cSelectT:
		for m := r.u32(); m > 0 && !r.failed(); m-- {
			r.valType()
		}
	case cFunc:
		w.funcIndex(r)
	case cCall:
		w.callee(r)
	case cPrefixFC:
		return w.operand(r, subClass(r, fcClass[:]))
	case cPrefixFD:
		return w.operand(r, subClass(r, fdClass[:]))
	default:
		return false
	}
	return true
}

// subClass reads the sub-opcode of a prefixed instruction.
func subClass(r *reader, classes []class) class {
	if op := r.u32(); uint64(op) < uint64(len(classes)) && !r.failed() {
		return classes[op]
	}
	return cBad
}

// opcodeName formats the opcode at r, with its sub-opcode if prefixed.
func opcodeName(r *reader) string {
	s := *r
	op := s.byte()
	if op == 0xfc || op == 0xfd {
		if sub := s.u32(); !s.failed() {
			return fmt.Sprintf("%#x %d", op, sub)
		}
	}
	return fmt.Sprintf("%#x", op)
}
