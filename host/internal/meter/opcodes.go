package meter

// class says how Instrument decodes an instruction: what its immediates
// are, and what it does to control flow.
type class uint8

const (
	cBad          class = iota // not accepted by wazero's CoreFeaturesV2
	cPlain                     // no immediate
	cU32                       // one u32: index, label, table or memory number
	cU32x2                     // two u32: memarg, table.copy...
	cS32                       // i32.const
	cS64                       // i64.const
	cBytes4                    // f32.const
	cBytes8                    // f64.const
	cBytes16                   // v128.const, i8x16.shuffle
	cLane                      // one lane byte
	cMemLane                   // memarg and a lane byte
	cRefNull                   // ref.null heap type
	cSelectT                   // typed select: vector of value types
	cFunc                      // ref.func: a function index to renumber
	cCall                      // call: a function index to renumber
	cCallIndirect              // call_indirect: type and table
	cPrefixFC                  // bulk memory, table and saturating conversions
	cPrefixFD                  // SIMD
	cBlock
	cLoop
	cIf
	cElse
	cEnd
	cBr
	cBrIf
	cBrTable
	cStop // return, unreachable: the rest of the block is dead
)

// opClass classifies one-byte opcodes.
var opClass = func() (t [256]class) {
	set := func(c class, ops ...byte) {
		for _, op := range ops {
			t[op] = c
		}
	}
	setRange := func(c class, lo, hi byte) {
		for op := int(lo); op <= int(hi); op++ {
			t[op] = c
		}
	}
	set(cStop, 0x00, 0x0f) // unreachable, return
	set(cPlain, 0x01, 0x1a, 0x1b, 0xd1)
	set(cBlock, 0x02)
	set(cLoop, 0x03)
	set(cIf, 0x04)
	set(cElse, 0x05)
	set(cEnd, 0x0b)
	set(cBr, 0x0c)
	set(cBrIf, 0x0d)
	set(cBrTable, 0x0e)
	set(cCall, 0x10)
	set(cCallIndirect, 0x11)
	set(cFunc, 0xd2) // ref.func
	set(cSelectT, 0x1c)
	setRange(cU32, 0x20, 0x26) // local.*, global.*, table.get/set
	setRange(cU32x2, 0x28, 0x3e)
	set(cU32, 0x3f, 0x40) // memory.size, memory.grow
	set(cS32, 0x41)
	set(cS64, 0x42)
	set(cBytes4, 0x43)
	set(cBytes8, 0x44)
	setRange(cPlain, 0x45, 0xc4) // numeric, including sign extension
	set(cRefNull, 0xd0)
	set(cPrefixFC, 0xfc)
	set(cPrefixFD, 0xfd)
	return t
}()

// fcClass classifies the 0xFC sub-opcodes.
var fcClass = [...]class{
	0: cPlain, 1: cPlain, 2: cPlain, 3: cPlain, // i32.trunc_sat_*
	4: cPlain, 5: cPlain, 6: cPlain, 7: cPlain, // i64.trunc_sat_*
	8:  cU32x2, // memory.init data mem
	9:  cU32,   // data.drop data
	10: cU32x2, // memory.copy mem mem
	11: cU32,   // memory.fill mem
	12: cU32x2, // table.init elem table
	13: cU32,   // elem.drop elem
	14: cU32x2, // table.copy table table
	15: cU32,   // table.grow
	16: cU32,   // table.size
	17: cU32,   // table.fill
}

// fdClass classifies the 0xFD (SIMD) sub-opcodes.
var fdClass = func() (t [256]class) {
	for i := range t {
		t[i] = cPlain
	}
	for op := 0x00; op <= 0x0b; op++ { // v128.load*, v128.store
		t[op] = cU32x2
	}
	t[0x0c], t[0x0d] = cBytes16, cBytes16 // v128.const, i8x16.shuffle
	for op := 0x15; op <= 0x22; op++ {    // extract_lane, replace_lane
		t[op] = cLane
	}
	for op := 0x54; op <= 0x5b; op++ { // v128.load*_lane, v128.store*_lane
		t[op] = cMemLane
	}
	t[0x5c], t[0x5d] = cU32x2, cU32x2 // v128.load32_zero, v128.load64_zero
	// Opcodes the SIMD proposal left unassigned.
	for _, op := range []byte{0x9a, 0xa2, 0xa5, 0xa6, 0xaf, 0xb0, 0xb2, 0xb3, 0xb4,
		0xbb, 0xc2, 0xc5, 0xc6, 0xcf, 0xd0, 0xd2, 0xd3, 0xd4, 0xe2} {
		t[op] = cBad
	}
	return t
}()
