package meter

import (
	"fmt"
	"math"
)

// rewrite makes the output in one pass over the sections: most are copied
// verbatim, those that hold function indices are edited in place, and the
// type, import and global sections get their new entry, or are made.
func (w *rewriter) rewrite() ([]byte, error) {
	w.editing = true
	w.out = make([]byte, 0, len(w.in)+len(w.in)/8+64)
	w.check = checkSequence(w.globals, w.k)
	r := newReader(w.in, len(header), len(w.in))
	for r.pos < r.end {
		start := r.pos
		id, body, sizeAt, width := sectionHeader(&r)
		if id != secCustom {
			w.addMissing(start, sectionRank(id))
		}
		w.section(id, start, sizeAt, width, &body)
		if body.failed() {
			return nil, body.err(id, start)
		}
	}
	w.addMissing(len(w.in), math.MaxInt)
	w.flush(len(w.in))
	return w.out, nil
}

// section rewrites one section, whose header starts at start.
func (w *rewriter) section(id byte, start, sizeAt, width int, r *reader) {
	switch id {
	case secCustom:
		w.custom(start, sizeAt, width, r)
	case secType:
		if w.reuseType {
			r.pos = r.end // copied verbatim
		} else {
			w.resize(sizeAt, width, r, w.typeSection)
		}
	case secImport:
		w.resize(sizeAt, width, r, w.importSection)
	case secTable:
		w.resize(sizeAt, width, r, w.tableSection)
	case secGlobal:
		w.resize(sizeAt, width, r, w.globalSection)
	case secExport:
		w.resize(sizeAt, width, r, w.exportSection)
	case secStart:
		w.resize(sizeAt, width, r, w.funcIndex)
	case secElement:
		w.resize(sizeAt, width, r, w.elementSection)
	case secCode:
		w.resize(sizeAt, width, r, w.codeSection)
	default: // function, memory, data count and data: copied verbatim
		r.pos = r.end
	}
	wantEnd(r)
}

// resize rewrites with edit the content of r, whose size is encoded at
// sizeAt in width bytes, and writes its new size.
func (w *rewriter) resize(sizeAt, width int, r *reader, edit func(*reader)) {
	w.replace(sizeAt, r.pos)
	at := w.openSize(width)
	edit(r)
	if !r.failed() {
		w.flush(r.end)
	}
	w.closeSize(at, width)
}

// count rewrites the count of a vector that gets one more entry.
func (w *rewriter) count(r *reader) uint32 {
	at := r.pos
	n := r.u32()
	w.replace(at, r.pos)
	w.u32(n + 1)
	return n
}

func (w *rewriter) typeSection(r *reader) {
	w.count(r)
	w.flush(r.end)
	r.pos = r.end
	w.out = append(w.out, yieldSignature...)
}

func (w *rewriter) importSection(r *reader) {
	w.count(r)
	w.flush(r.end)
	r.pos = r.end
	w.out = w.appendYieldImport(w.out)
}

func (w *rewriter) globalSection(r *reader) {
	n := w.count(r)
	for i := uint32(0); i < n && !r.failed(); i++ {
		r.valType()
		r.byte() // mutability
		w.constExpr(r)
	}
	w.flush(r.pos)
	w.out = w.appendFuelGlobal(w.out)
}

// addMissing writes, before the section at start, those of the type,
// import and global sections that bin lacks and that go before rank.
func (w *rewriter) addMissing(start, before int) {
	for _, id := range [...]byte{secType, secImport, secGlobal} {
		if w.has[id] || w.added[id] || sectionRank(id) >= before {
			continue
		}
		w.flush(start)
		w.added[id] = true
		w.out = append(w.out, id)
		at := w.openSize(1)
		w.out = append(w.out, 1) // one entry
		switch id {
		case secType:
			w.out = append(w.out, yieldSignature...)
		case secImport:
			w.out = w.appendYieldImport(w.out)
		case secGlobal:
			w.out = w.appendFuelGlobal(w.out)
		}
		w.closeSize(at, 1)
	}
}

func (w *rewriter) appendYieldImport(b []byte) []byte {
	b = append(b, byte(len(ImportModule)))
	b = append(b, ImportModule...)
	b = append(b, byte(len(ImportName)))
	b = append(b, ImportName...)
	b = append(b, 0x00) // function
	return appendU32(b, w.yieldType)
}

func (w *rewriter) appendFuelGlobal(b []byte) []byte {
	b = append(b, 0x7f, 0x01, 0x41) // mutable i32, i32.const
	b = appendS32(b, w.opts.Fuel)
	return append(b, 0x0b)
}

// checkSequence encodes
//
//	global.get $fuel; i32.const 1; i32.sub; global.set $fuel
//	global.get $fuel; i32.const 0; i32.gt_s; if; else; call $yield; global.set $fuel; end
//
// wazero's compiler keeps the value it stores for the second global.get.
// The call is in the else arm for its register allocator: where arms
// meet, it starts from the state of the first arm, the then arm, so the
// path that does not yield keeps its registers and the yield path
// reloads them, where a call in the then arm would make the path that
// does not yield reload from the stack whatever the call evicted.
func checkSequence(fuel, yield uint32) []byte {
	b := appendU32([]byte{0x23}, fuel)
	b = append(b, 0x41, 0x01, 0x6b, 0x24)
	b = appendU32(b, fuel)
	b = appendU32(append(b, 0x23), fuel)
	b = append(b, 0x41, 0x00, 0x4a, 0x04, 0x40, 0x05, 0x10)
	b = appendU32(b, yield)
	b = appendU32(append(b, 0x24), fuel)
	return append(b, 0x0b)
}

// funcIndex reads a function index and, while rewriting, renumbers it:
// yield takes index k, so the indices from k on move up by one. While
// scanning, it records the function as referenced.
func (w *rewriter) funcIndex(r *reader) {
	at := r.pos
	x := r.u32()
	if x < w.k || r.failed() {
		return
	}
	if !w.editing {
		w.refer(x - w.k)
		return
	}
	if x == math.MaxUint32 {
		r.fail("function index out of range")
		return
	}
	w.replace(at, r.pos)
	w.u32(x + 1)
}

func (r *reader) err(id byte, start int) error {
	return fmt.Errorf("meter: section id %d at offset %#x: %s at offset %#x", id, start, r.why, r.badAt)
}
