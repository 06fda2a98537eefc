package meter_test

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/weir-stream/weir/host/internal/meter"
)

var fuzzRuntime = sync.OnceValue(func() wazero.Runtime { return wazero.NewRuntime(ctx) })

// compiles reports whether wazero, with its default configuration,
// compiles bin.
func compiles(bin []byte) error {
	m, err := fuzzRuntime().CompileModule(ctx, bin)
	if err == nil {
		m.Close(ctx)
	}
	return err
}

// FuzzInstrument: Instrument never panics; whenever wazero compiles the
// input, Instrument succeeds (unless the input imports from weir_sandbox
// already) and wazero compiles its output.
func FuzzInstrument(f *testing.F) {
	files, err := filepath.Glob("testdata/*.wasm")
	if err != nil || len(files) == 0 {
		f.Fatal("no testdata modules")
	}
	for _, file := range files {
		bin := readTestdata(f, filepath.Base(file))
		for _, seed := range seedsFrom(f, bin) {
			f.Add(seed, uint16(0), uint16(0))
			f.Add(seed, uint16(1), uint16(1))
		}
	}
	f.Fuzz(func(t *testing.T, bin []byte, fuel, maxStraight uint16) {
		opts := meter.Options{Fuel: int32(fuel % 1000), MaxStraight: int(maxStraight % 64)}
		out, err := meter.Instrument(bin, opts)
		if err == nil {
			if !bytes.HasPrefix(out, []byte("\x00asm\x01\x00\x00\x00")) {
				t.Fatalf("output %x", out)
			}
			if _, again := meter.Instrument(out, opts); again == nil || !strings.Contains(again.Error(), "already imports") {
				t.Fatalf("instrumenting the output again: %v", again)
			}
		}
		if declaresMillions(bin) || compiles(bin) != nil {
			return
		}
		if err != nil {
			if !strings.Contains(err.Error(), "already imports from "+meter.ImportModule) && !wazeroMisreadsSIMD(bin, err) {
				t.Fatalf("wazero compiles the input, Instrument fails: %v", err)
			}
			return
		}
		if err := compiles(out); err != nil {
			t.Fatalf("wazero compiles the input, not the output: %v", err)
		}
	})
}

// wazeroMisreadsSIMD reports whether err refuses, at its offset in bin, a
// SIMD opcode whose second byte is not 0x01. The spec encodes SIMD
// sub-opcodes as LEB128, so sub-opcodes from 0x80 to 0xff take two bytes,
// the second 0x01; wazero reads the first byte alone, and the second as
// the next instruction. So it accepts 0xfd 0xb5 0x41 as i32x4.mul then
// i32.const, where the spec reads the sub-opcode 8373, and relaxed SIMD's
// 0xfd 0x80 0x02 as i16x8.abs then block. Instrument reads the spec's
// encoding, and refuses those.
func wazeroMisreadsSIMD(bin []byte, err error) bool {
	msg := err.Error()
	i := strings.LastIndex(msg, "at offset 0x")
	if !strings.Contains(msg, "opcode 0xfd") || i < 0 {
		return false
	}
	off, perr := strconv.ParseUint(msg[i+len("at offset 0x"):], 16, 64)
	return perr == nil && off+2 < uint64(len(bin)) &&
		bin[off] == 0xfd && bin[off+1] >= 0x80 && bin[off+2] != 0x01
}

// declaresMillions reports whether bin has three bytes in a row with the
// high bit set, as a LEB128 of 2^21 or more has. wazero allocates vectors
// by their declared length before reading them: a module of a hundred
// bytes that declares a function type with 2^31 parameters makes
// CompileModule allocate 18 GB. Such inputs are still instrumented, but
// not compiled.
func declaresMillions(bin []byte) bool {
	run := 0
	for _, c := range bin {
		if run = (run + 1) * int(c>>7); run == 3 {
			return true
		}
	}
	return false
}

// seedsFrom returns bin, bin cut at each section boundary and in the
// middle of each section, bin without each of its sections, and bin with
// bytes of each section changed.
func seedsFrom(t testing.TB, bin []byte) [][]byte {
	seeds := [][]byte{bin}
	ids, contents := sections(t, bin)
	at := 8
	for i := range ids {
		s := section(ids[i], contents[i])
		seeds = append(seeds, bin[:at+len(s)/2], bin[:at+len(s)])
		seeds = append(seeds, append(bytes.Clone(bin[:at]), bin[at+len(s):]...))
		if len(contents[i]) > 2 {
			mutated := bytes.Clone(bin)
			mutated[at+len(s)-2] ^= 0x41
			mutated[at+len(s)/2] ^= 0x80
			seeds = append(seeds, mutated)
		}
		at += len(s)
	}
	return seeds
}
