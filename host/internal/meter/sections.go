package meter

import "bytes"

func (w *rewriter) tableSection(r *reader) {
	for n := r.u32(); n > 0 && !r.failed(); n-- {
		w.table(r)
	}
}

// table reads a table type, and the initialiser that the function
// references proposal allows after a 0x40 0x00 prefix (wazero reads it).
func (w *rewriter) table(r *reader) {
	init := r.pos < r.end && r.b[r.pos] == 0x40
	if init {
		r.pos++
		if r.byte() != 0x00 {
			r.fail("bad table prefix")
		}
	}
	r.valType()
	r.limits()
	if init {
		w.constExpr(r)
	}
}

func (w *rewriter) exportSection(r *reader) {
	for n := r.u32(); n > 0 && !r.failed(); n-- {
		r.name()
		if r.byte() == 0x00 { // function
			w.funcIndex(r)
		} else {
			r.u32()
		}
	}
}

// elementSection renumbers the function indices of every encoding of
// element segments: bit 0 of the flags means passive or declarative, bit 1
// an explicit table index (active) or declarative, bit 2 expressions.
func (w *rewriter) elementSection(r *reader) {
	for n := r.u32(); n > 0 && !r.failed(); n-- {
		flags := r.u32()
		if flags > 7 {
			r.fail("bad element segment flags")
			return
		}
		if flags&3 == 2 {
			r.u32() // table index
		}
		if flags&1 == 0 {
			w.constExpr(r) // offset
		}
		exprs := flags&4 != 0
		if flags&3 != 0 {
			if exprs {
				r.valType() // reference type
			} else {
				r.byte() // element kind
			}
		}
		for m := r.u32(); m > 0 && !r.failed(); m-- {
			if exprs {
				w.constExpr(r)
			} else {
				w.funcIndex(r)
			}
		}
	}
}

// constExpr reads a constant expression up to its end, renumbering the
// operands of ref.func.
func (w *rewriter) constExpr(r *reader) {
	for !r.failed() {
		op := r.byte()
		if op == 0x0b {
			return
		}
		if c := opClass[op]; c >= cBlock || !w.operand(r, c) {
			r.fail("not a constant instruction")
		}
	}
}

// custom drops the sections that describe code offsets, which change,
// renumbers the name section, and keeps the others.
func (w *rewriter) custom(start, sizeAt, width int, r *reader) {
	contentAt := r.pos
	name := r.name()
	switch {
	case r.failed():
	case bytes.HasPrefix(name, []byte(".debug_")) || string(name) == "sourceMappingURL":
		w.replace(start, r.end)
	case string(name) == "name":
		w.flush(start)
		keep := len(w.out)
		r.pos = contentAt
		w.resize(sizeAt, width, r, w.names)
		if r.failed() || r.pos != r.end {
			// A malformed name section is ignored, as the spec says
			// engines do: drop it rather than fail.
			w.out = w.out[:keep]
			*r = newReader(r.b, r.end, r.end)
			w.mark = r.end
		}
	}
	r.pos = r.end
}

// Name subsections keyed by function index.
const (
	nameFunctions = 1
	nameLocals    = 2
	nameLabels    = 3
)

// names renumbers the name subsections keyed by function index, and keeps
// the others: the indices of types, tables, memories, globals, element and
// data segments do not move.
func (w *rewriter) names(r *reader) {
	r.name() // "name"
	for r.pos < r.end && !r.failed() {
		id, sub, sizeAt, width := sectionHeader(r)
		if r.failed() {
			return
		}
		switch id {
		case nameFunctions:
			w.resize(sizeAt, width, &sub, w.nameMap)
		case nameLocals, nameLabels:
			w.resize(sizeAt, width, &sub, w.indirectNameMap)
		default:
			sub.pos = sub.end
		}
		if sub.pos != sub.end {
			sub.fail("subsection longer than its content")
		}
		r.adopt(&sub)
	}
}

func (w *rewriter) nameMap(r *reader) {
	for n := r.u32(); n > 0 && !r.failed(); n-- {
		w.funcIndex(r)
		r.name()
	}
}

func (w *rewriter) indirectNameMap(r *reader) {
	for n := r.u32(); n > 0 && !r.failed(); n-- {
		w.funcIndex(r)
		for m := r.u32(); m > 0 && !r.failed(); m-- {
			r.u32()
			r.name()
		}
	}
}
