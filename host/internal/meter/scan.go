package meter

import (
	"bytes"
	"fmt"
)

// sectionHeader decodes a section header at r and returns the id, the content,
// and the offset and width of the size.
func sectionHeader(r *reader) (id byte, body reader, sizeAt, width int) {
	id = r.byte()
	sizeAt = r.pos
	n := r.u32()
	width = r.pos - sizeAt
	return id, r.sub(n), sizeAt, width
}

// scan reads the section headers, checks their order, and reads what fixes
// the new indices (the types, the imports, and the number of functions
// and globals) and what plans the checks: which functions are named other
// than by direct calls, and what each body does.
func (w *rewriter) scan() error {
	r := newReader(w.in, len(header), len(w.in))
	last := 0
	for r.pos < r.end {
		start := r.pos
		id, body, _, _ := sectionHeader(&r)
		if r.failed() {
			return r.err(id, start)
		}
		if id == secCustom {
			continue
		}
		rk := sectionRank(id)
		switch {
		case id == secTag:
			return fmt.Errorf("meter: section id %d at offset %#x: tags need exception handling, not in CoreFeaturesV2", id, start)
		case rk == 0:
			return fmt.Errorf("meter: section id %d at offset %#x: unknown section", id, start)
		case rk <= last:
			return fmt.Errorf("meter: section id %d at offset %#x: out of order", id, start)
		}
		last = rk
		w.has[id] = true
		if err := w.scanSection(id, &body); err != nil {
			return err
		}
		if body.failed() {
			return body.err(id, start)
		}
	}
	if !w.reuseType {
		w.yieldType = w.types
	}
	return nil
}

func (w *rewriter) scanSection(id byte, r *reader) error {
	switch id {
	case secType:
		w.scanTypes(r)
		wantEnd(r)
	case secImport:
		err := w.scanImports(r)
		wantEnd(r)
		return err
	case secFunction:
		w.functionSection(r)
	case secTable:
		w.tableSection(r)
	case secGlobal:
		w.scanGlobals(r)
	case secExport:
		w.exportSection(r)
	case secStart:
		w.funcIndex(r)
	case secElement:
		w.elementSection(r)
	case secCode:
		w.codeSection(r)
	case secData:
		// Copied verbatim, but wazero allocates the segments it declares.
		if n := r.u32(); uint64(n) > uint64(r.end-r.pos) && !r.failed() {
			r.fail("truncated")
		}
		r.pos = r.end
	}
	return nil
}

// functionSection reads the number of functions. An entry takes a byte
// at least, and wazero allocates the vector before reading it: a count
// beyond the section's bytes is refused.
func (w *rewriter) functionSection(r *reader) {
	w.funcs = r.u32()
	if uint64(w.funcs) > uint64(r.end-r.pos) {
		r.fail("truncated")
		return
	}
	w.referenced = make([]bool, w.funcs)
	r.pos = r.end
}

func (w *rewriter) scanGlobals(r *reader) {
	n := r.u32()
	w.globals += n
	for i := uint32(0); i < n && !r.failed(); i++ {
		r.valType()
		r.byte() // mutability
		w.constExpr(r)
	}
}

// wantEnd fails unless r is at the end of its window: the rewrite appends
// to the sections scan reads whole.
func wantEnd(r *reader) {
	if !r.failed() && r.pos != r.end {
		r.fail("section longer than its content")
	}
}

// yieldSignature is the encoding of the type () -> (i32).
var yieldSignature = []byte{0x60, 0x00, 0x01, 0x7f}

// scanTypes counts the types, and finds one that yield can use. Types in
// recursion groups (0x4e) count but are not reused.
func (w *rewriter) scanTypes(r *reader) {
	n := r.u32()
	for i := uint32(0); i < n && !r.failed(); i++ {
		if r.pos < r.end && r.b[r.pos] == 0x4e {
			r.pos++
			for m := r.u32(); m > 0 && !r.failed(); m-- {
				funcType(r)
				w.types++
			}
			continue
		}
		at := r.pos
		funcType(r)
		if !w.reuseType && bytes.Equal(r.b[at:r.pos], yieldSignature) {
			w.reuseType, w.yieldType = true, w.types
		}
		w.types++
	}
}

func funcType(r *reader) {
	if r.byte() != 0x60 {
		r.fail("not a function type")
		return
	}
	for params := 0; params < 2; params++ {
		for m := r.u32(); m > 0 && !r.failed(); m-- {
			r.valType()
		}
	}
}

// scanImports counts the imported functions and globals.
func (w *rewriter) scanImports(r *reader) error {
	n := r.u32()
	for i := uint32(0); i < n && !r.failed(); i++ {
		at := r.pos
		if string(r.name()) == ImportModule {
			return fmt.Errorf("meter: import at offset %#x: the module already imports from %s", at, ImportModule)
		}
		r.name()
		switch r.byte() {
		case 0x00:
			r.u32()
			w.k++
		case 0x01:
			w.table(r)
		case 0x02:
			r.limits()
		case 0x03:
			r.valType()
			r.byte()
			w.globals++
		default:
			r.fail("not a CoreFeaturesV2 import kind")
		}
	}
	return nil
}
