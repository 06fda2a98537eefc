package meter

import (
	"bytes"
	"errors"
)

// Names of the function an instrumented module imports.
const (
	ImportModule = "weir_sandbox"
	// ImportName is the yield function, of type () -> (i32): the host
	// returns the fuel to go on with, the number of checks until the next
	// yield (at least 1).
	ImportName = "yield"
)

// Options of Instrument; the zero value means the defaults.
type Options struct {
	// Fuel is the initial value of the fuel global: the first yield comes
	// at the Fuel-th check, and a yield that returns R comes back at the
	// R-th check after it. Zero means 1<<16.
	Fuel int32
	// MaxStraight is the most instructions a function runs between two of
	// its checks, those of the leaves it calls included. Zero means 1000.
	MaxStraight int
}

// Defaults of Options.
const (
	DefaultFuel        = 1 << 16
	DefaultMaxStraight = 1000
)

// Instrument returns bin rewritten so that it checks its fuel at the entry
// of every function but leaves, at every loop header, and at least every
// MaxStraight instructions of straight-line code. A check is
//
//	fuel--; if fuel < 1 { fuel = yield() }
//
// and leaves the operand stack as it found it. bin is not modified. The
// doc of the package tells where the checks go and what they guarantee.
//
// Instrument fails when bin is not a well-formed binary module, when it
// already imports from ImportModule, or when it uses an opcode outside
// what wazero's default CoreFeaturesV2 accepts; errors name the function
// index and the byte offset in bin. It checks the structure of what it
// rewrites, not types: compiling the result in wazero validates it.
//
// Instrument is a pure function, safe for concurrent use.
func Instrument(bin []byte, opts Options) ([]byte, error) {
	if opts.Fuel < 0 || opts.MaxStraight < 0 {
		return nil, errors.New("meter: negative Options")
	}
	if opts.Fuel == 0 {
		opts.Fuel = DefaultFuel
	}
	if opts.MaxStraight == 0 {
		opts.MaxStraight = DefaultMaxStraight
	}
	if len(bin) < len(header) || !bytes.Equal(bin[:len(header)], header) {
		return nil, errors.New("meter: not a WebAssembly 1.0 binary module")
	}
	w := &rewriter{writer: writer{in: bin}, opts: opts}
	if err := w.scan(); err != nil {
		return nil, err
	}
	return w.rewrite()
}

var header = []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

// Section ids.
const (
	secCustom   = 0
	secType     = 1
	secImport   = 2
	secFunction = 3
	secTable    = 4
	secGlobal   = 6
	secExport   = 7
	secStart    = 8
	secElement  = 9
	secCode     = 10
	secData     = 11
	secTag      = 13
)

// rank orders the non-custom section ids as a module must (the data count
// section, 12, goes between element and code); 0 marks an id that
// CoreFeaturesV2 does not know.
var rank = [...]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7, 8: 8, 9: 9, 12: 10, 10: 11, 11: 12}

func sectionRank(id byte) int {
	if int(id) < len(rank) {
		return rank[id]
	}
	return 0
}

// rewriter holds the state of one Instrument call.
type rewriter struct {
	writer
	opts Options

	// Learnt by scan, before any output.
	k         uint32   // imported functions: yield's index, and the first index that moves up
	types     uint32   // types the type section defines
	yieldType uint32   // index of the () -> (i32) type of yield
	reuseType bool     // whether bin has that type already
	globals   uint32   // imported and defined globals: the fuel global's index
	funcs     uint32   // entries of the function section
	has       [13]bool // which sections bin has
	plans     []plan   // of each defined function, from the code section
	// referenced: which defined functions an element segment, a ref.func,
	// an export or the start section names.
	referenced []bool
	facts      facts // of the body being scanned

	editing bool     // false while scanning, true while rewriting
	added   [13]bool // which sections that bin lacks the output has got
	check   []byte   // the check sequence
	ctl     []frame  // control stack of the function body being read
	body    reader   // the function body being read
	fn      uint32   // its index among the defined functions
}
