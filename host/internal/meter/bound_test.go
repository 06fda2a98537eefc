package meter_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/weir-stream/weir/host/internal/meter"
)

// TestPathBound instruments random modules of a few functions, with a
// small MaxStraight, and explores every path through the output: each
// function must begin with a check or have none (a leaf), functions that
// an export or the table names must begin with one, and no path may run
// more than MaxStraight instructions in a run: what a call frame runs
// from a check to its next check or its exit, the instructions of the
// leaves it calls included. The explorer shares no code with Instrument.
func TestPathBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	var total exploreStats
	for i := range 3000 {
		maxStraight := 1 + rng.IntN(8)
		m := newRandomModule(rng, maxStraight)
		bin := m.binary()
		out := instrument(t, bin, meter.Options{MaxStraight: maxStraight})
		stats, err := explore(t, out, m.entries(), maxStraight)
		if err != nil {
			t.Fatalf("module %d, MaxStraight %d: %v\ninput %x\noutput %x", i, maxStraight, err, bin, out)
		}
		total.add(stats)
		if i%25 == 0 { // wazero validates both, less often as it is slower
			for _, b := range [][]byte{bin, out} {
				if c, err := rt.CompileModule(ctx, b); err != nil {
					t.Fatalf("module %d: %v\n%x", i, err, b)
				} else {
					c.Close(ctx)
				}
			}
		}
	}
	t.Logf("%+v", total)
	if total.inlined == 0 {
		t.Errorf("no leaf calls explored: %+v", total)
	}
}

// randomModule is a module of functions of type () -> (), a table, and
// exports, which the generator fills.
type randomModule struct {
	bodies   [][]byte
	locals   [][]byte // the locals of each body; none if missing
	table    []int    // function of each slot
	exports  []int
	declared []int // functions a declarative element segment names
}

func newRandomModule(rng *rand.Rand, maxStraight int) *randomModule {
	n := 1 + rng.IntN(6)
	m := &randomModule{exports: []int{0}}
	for f := 1; f < n; f++ {
		switch rng.IntN(4) {
		case 0:
			m.table = append(m.table, f)
		case 1:
			m.exports = append(m.exports, f)
		}
	}
	for range n {
		g := &generator{rng: rng, funcs: n, slots: len(m.table), locals: rng.IntN(3)}
		m.locals = append(m.locals, []byte{0x01, byte(g.locals), 0x7f}) // i32 locals
		switch rng.IntN(3) {
		case 0: // a leaf, if nothing names it and it makes no call
			g.leaf = true
			g.block(0, 1+rng.IntN(maxStraight+2))
		case 1:
			g.loopFirst(40 + rng.IntN(100))
		default:
			g.block(0, 40+rng.IntN(200))
		}
		m.bodies = append(m.bodies, g.code)
	}
	return m
}

// entries are the functions that code out of sight of the explorer may
// call: exported, or in the table.
func (m *randomModule) entries() []int {
	return append(slices.Clone(m.exports), m.table...)
}

func (m *randomModule) binary() []byte {
	var funcs, exports, slots, bodies [][]byte
	for f, code := range m.bodies {
		funcs = append(funcs, u32(0))
		locals := []byte{0x00}
		if f < len(m.locals) && m.locals[f] != nil {
			locals = m.locals[f]
		}
		body := slices.Concat(locals, code, []byte{0x0b})
		bodies = append(bodies, append(u32(uint32(len(body))), body...))
		if slices.Contains(m.exports, f) {
			exports = append(exports, slices.Concat(str(fmt.Sprint("f", f)), []byte{0x00}, u32(uint32(f))))
		}
	}
	for _, f := range m.table {
		slots = append(slots, u32(uint32(f)))
	}
	sections := [][]byte{section(1, vec([]byte{0x60, 0x00, 0x00})), section(3, vec(funcs...))}
	if len(slots) > 0 {
		sections = append(sections, section(4, vec([]byte{0x70, 0x00, byte(len(slots))})))
	}
	sections = append(sections, section(7, vec(exports...)))
	var segments [][]byte
	if len(slots) > 0 {
		segments = append(segments, slices.Concat([]byte{0x00, 0x41, 0x00, 0x0b}, vec(slots...)))
	}
	if len(m.declared) > 0 {
		var names [][]byte
		for _, f := range m.declared {
			names = append(names, u32(uint32(f)))
		}
		segments = append(segments, slices.Concat([]byte{0x03, 0x00}, vec(names...)))
	}
	if len(segments) > 0 {
		sections = append(sections, section(9, vec(segments...)))
	}
	return module(append(sections, section(10, vec(bodies...)))...)
}

// generator writes random valid code of empty-typed blocks, loops and ifs,
// branches of every kind, calls, and stack-neutral straight-line
// instructions.
type generator struct {
	rng    *rand.Rand
	code   []byte
	depth  int  // enclosing labels, the function's included
	funcs  int  // functions of the module
	slots  int  // table slots
	locals int  // i32 locals of the function
	leaf   bool // no loop, and few calls
}

func (g *generator) block(depth, budget int) {
	g.depth = depth + 1
	for budget > 0 {
		budget--
		switch r := g.rng.IntN(100); {
		case r < 36:
			g.code = append(g.code, 0x01) // nop
		case r < 46:
			g.code = append(g.code, 0x41, byte(g.rng.IntN(64)), 0x1a) // i32.const; drop
		case r < 50 && g.locals > 0:
			g.code = append(g.code, 0x41, byte(g.rng.IntN(64)), 0x21, byte(g.rng.IntN(g.locals))) // local.set
		case r < 70 && depth < 6:
			inner := g.rng.IntN(budget + 1)
			budget -= inner
			g.structured(depth, inner)
		case r < 77:
			g.code = append(g.code, 0x41, byte(g.rng.IntN(2)), 0x0d, g.label()) // br_if
		case r < 82:
			g.code = append(g.code, 0x41, byte(g.rng.IntN(3)), 0x0e, 2, g.label(), g.label(), g.label()) // br_table
		case r < 86:
			g.code = append(g.code, 0x0c, g.label()) // br
		case r < 88:
			g.code = append(g.code, 0x0f) // return
		case r < 95:
			g.call()
		default:
			g.code = append(g.code, 0x01, 0x01, 0x01, 0x01, 0x01) // a straight run
		}
	}
}

func (g *generator) label() byte { return byte(g.rng.IntN(g.depth)) }

func (g *generator) call() {
	switch {
	case g.leaf && g.rng.IntN(4) > 0:
		g.code = append(g.code, 0x01)
	case g.slots > 0 && g.rng.IntN(3) == 0:
		g.code = append(g.code, 0x41, byte(g.rng.IntN(g.slots)), 0x11, 0x00, 0x00) // call_indirect
	default:
		g.code = append(g.code, 0x10, byte(g.rng.IntN(g.funcs)))
	}
}

func (g *generator) structured(depth, budget int) {
	kind := g.rng.IntN(3)
	if kind == 1 && g.leaf {
		kind = 0
	}
	switch kind {
	case 0:
		g.code = append(g.code, 0x02, 0x40)
	case 1:
		g.code = append(g.code, 0x03, 0x40)
	default:
		g.code = append(g.code, 0x41, byte(g.rng.IntN(2)), 0x04, 0x40)
		if g.rng.IntN(2) == 0 {
			then := g.rng.IntN(budget + 1)
			g.block(depth+1, then)
			g.code = append(g.code, 0x05)
			budget -= then
		}
	}
	g.block(depth+1, budget)
	g.code = append(g.code, 0x0b)
	g.depth = depth + 1
}

// loopFirst writes a body that reaches a loop in a straight line of a few
// instructions and blocks, as Go's functions do.
func (g *generator) loopFirst(budget int) {
	blocks := g.rng.IntN(3)
	for range blocks {
		g.straight(g.rng.IntN(3))
		g.code = append(g.code, 0x02, 0x40)
	}
	g.straight(g.rng.IntN(3))
	g.code = append(g.code, 0x03, 0x40)
	g.block(blocks+1, budget)
	g.code = append(g.code, 0x0b)
	for d := blocks; d > 0; d-- {
		g.block(d, g.rng.IntN(10))
		g.code = append(g.code, 0x0b)
	}
	g.block(0, g.rng.IntN(10))
}

// straight writes n instructions that do not branch, or now and then a
// call.
func (g *generator) straight(n int) {
	for range n {
		switch g.rng.IntN(8) {
		case 0:
			g.call()
		case 1, 2, 3:
			g.code = append(g.code, 0x01)
		default:
			g.code = append(g.code, 0x41, 0x07, 0x1a)
		}
	}
}

// The check of a module without imports or globals: yield is function 0,
// fuel is global 0.
var check = []byte{
	0x23, 0x00, 0x41, 0x01, 0x6b, 0x24, 0x00, // global.get 0; i32.const 1; i32.sub; global.set 0
	0x23, 0x00, 0x41, 0x00, 0x4a, 0x04, 0x40, 0x05, // global.get 0; i32.const 0; i32.gt_s; if; else
	0x10, 0x00, 0x24, 0x00, 0x0b, // call 0; global.set 0; end
}

// instr is an instruction of the explored code: a check counts as one.
type instr struct {
	op      byte
	check   bool
	callee  int   // call: the defined function, or -1 for call_indirect
	labels  []int // br, br_if, br_table: target instruction indices; -1 is the exit
	alt     int   // if: where a false condition goes; else: after the end
	isFinal bool  // the function's end
}

type exploreStats struct {
	functions, leaves, inlined int
}

func (s *exploreStats) add(o exploreStats) {
	s.functions += o.functions
	s.leaves += o.leaves
	s.inlined += o.inlined
}

// explorer walks the paths of the functions of a module.
type explorer struct {
	prog    [][]instr
	max     int
	leaf    []bool         // the function has no check
	summary map[[2]int]int // (leaf, count at entry): most count at its exit
	busy    map[int]bool   // leaves being summarised
	stats   exploreStats
}

// explore decodes the instrumented module out and checks every path of
// every function, entries being those other code may call.
func explore(t *testing.T, out []byte, entries []int, max int) (exploreStats, error) {
	e := &explorer{max: max, summary: map[[2]int]int{}, busy: map[int]bool{}}
	for _, body := range codeBodies(t, out) {
		prog, err := decode(body)
		if err != nil {
			return e.stats, err
		}
		e.prog = append(e.prog, prog)
	}
	for f, prog := range e.prog {
		checks := slices.ContainsFunc(prog, func(in instr) bool { return in.check })
		if checks && !prog[0].check {
			return e.stats, fmt.Errorf("function %d has checks, but not at its entry", f)
		}
		e.leaf = append(e.leaf, !checks)
	}
	for _, f := range entries {
		if e.leaf[f] {
			return e.stats, fmt.Errorf("function %d, named by an export or the table, has no check", f)
		}
	}
	for f := range e.prog {
		e.stats.functions++
		if e.leaf[f] {
			e.stats.leaves++
			continue // explored where it is called
		}
		if _, err := e.walk(f, 0); err != nil {
			return e.stats, fmt.Errorf("function %d: %v", f, err)
		}
	}
	return e.stats, nil
}

// codeBodies returns the instructions of each body of bin, after the
// locals.
func codeBodies(t *testing.T, bin []byte) [][]byte {
	ids, contents := sections(t, bin)
	code := contents[slices.Index(ids, 10)]
	n, p := readU32(code)
	var bodies [][]byte
	for range n {
		size, m := readU32(code[p:])
		body := code[p+m : p+m+int(size)]
		groups, q := readU32(body)
		for range groups {
			_, n := readU32(body[q:])
			q += n + 1 // and a one-byte type
		}
		bodies = append(bodies, body[q:])
		p += m + int(size)
	}
	return bodies
}

// successors returns where control may go after the instruction at.
func successors(prog []instr, at int) []int {
	in := prog[at]
	switch in.op {
	case 0x0c, 0x0e:
		return in.labels
	case 0x0d:
		return append([]int{at + 1}, in.labels...)
	case 0x04:
		return []int{at + 1, in.alt}
	case 0x05:
		return []int{in.alt}
	case 0x0f:
		return []int{-1}
	case 0x0b:
		if in.isFinal {
			return []int{-1}
		}
	}
	return []int{at + 1}
}

// walk explores every path of f from its entry, where the count is n, and
// returns the most count at its exit. A check starts a run; a direct call
// of a leaf goes on with the count through the leaf's body.
func (e *explorer) walk(f, n int) (int, error) {
	type state struct{ at, n int }
	prog := e.prog[f]
	seen := map[state]bool{}
	stack := []state{{0, n}}
	exit := 0
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if s.at == -1 {
			exit = max(exit, s.n)
			continue
		}
		if seen[s] {
			continue
		}
		seen[s] = true
		in := prog[s.at]
		n := s.n + 1
		switch {
		case in.check:
			n = 0
		case n > e.max:
			return 0, fmt.Errorf("instruction %d (%#x) runs as number %d of its run", s.at, in.op, n)
		case in.op == 0x10 && e.leaf[in.callee]:
			var err error
			if n, err = e.inline(in.callee, n); err != nil {
				return 0, err
			}
		}
		for _, to := range successors(prog, s.at) {
			stack = append(stack, state{to, n})
		}
	}
	return exit, nil
}

// inline returns the count after a call of the leaf g made at count n.
func (e *explorer) inline(g, n int) (int, error) {
	key := [2]int{g, n}
	if exit, ok := e.summary[key]; ok {
		return exit, nil
	}
	if e.busy[g] {
		return 0, fmt.Errorf("function %d calls itself without a check", g)
	}
	e.busy[g] = true
	exit, err := e.walk(g, n)
	delete(e.busy, g)
	if err != nil {
		return 0, fmt.Errorf("called at count %d, function %d: %v", n, g, err)
	}
	e.summary[key] = exit
	e.stats.inlined++
	return exit, nil
}

// decode splits body into instructions and resolves where branches, ifs
// and elses go. Function indices are those of the output, where yield is
// function 0; callee is the index among defined functions.
func decode(body []byte) ([]instr, error) {
	type open struct {
		at   int  // the block, loop or if instruction
		loop bool // branches go back to at+1
		els  int  // the else instruction, or -1
		brs  []int
	}
	var prog []instr
	ctl := []*open{{at: -1, els: -1}}
	target := func(l int, from int) {
		f := ctl[len(ctl)-1-l]
		if f.loop {
			prog[from].labels = append(prog[from].labels, f.at+1)
		} else {
			prog[from].labels = append(prog[from].labels, -2) // resolved at the end
			f.brs = append(f.brs, from)
		}
	}
	for p := 0; p < len(body); {
		if slices.Equal(body[p:min(p+len(check), len(body))], check) {
			prog = append(prog, instr{check: true})
			p += len(check)
			continue
		}
		op := body[p]
		p++
		at := len(prog)
		prog = append(prog, instr{op: op})
		switch op {
		case 0x01, 0x1a, 0x0f:
		case 0x41, 0x21:
			p++
		case 0x10:
			prog[at].callee = int(body[p]) - 1
			p++
		case 0x11:
			prog[at].callee = -1
			p += 2
		case 0x02, 0x03, 0x04:
			p++ // 0x40
			ctl = append(ctl, &open{at: at, loop: op == 0x03, els: -1})
		case 0x05:
			ctl[len(ctl)-1].els = at
		case 0x0c, 0x0d:
			target(int(body[p]), at)
			p++
		case 0x0e:
			n := int(body[p])
			for i := 0; i <= n; i++ {
				target(int(body[p+1+i]), at)
			}
			p += n + 2
		case 0x0b:
			f := ctl[len(ctl)-1]
			ctl = ctl[:len(ctl)-1]
			after := at + 1
			if len(ctl) == 0 {
				prog[at].isFinal = true
				after = -1
			}
			for _, from := range f.brs {
				for i, l := range prog[from].labels {
					if l == -2 {
						prog[from].labels[i] = after
						break
					}
				}
			}
			if f.at >= 0 && prog[f.at].op == 0x04 {
				prog[f.at].alt = after
				if f.els >= 0 {
					prog[f.at].alt = f.els + 1
					prog[f.els].alt = after
				}
			}
		default:
			return nil, fmt.Errorf("unexpected opcode %#x at %d", op, p-1)
		}
	}
	return prog, nil
}
