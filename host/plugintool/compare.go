package plugintool

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Difference is one input on which two versions of a plugin did not do
// the same: what each emitted, rejected (as "error: <message>") or trapped
// on ("trap"). Input is the input's index, -1 for an aggregate's result.
// It is a plain value.
type Difference struct {
	Input int
	Value string   // the input's value
	A, B  []string // what each version did with it, in order
}

// ReadRecords reads a file of records for Compare: one record value per
// line, as a file source with format jsonl reads them (blank lines are
// skipped).
func ReadRecords(r io.Reader) ([]Input, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var ins []Input
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" {
			ins = append(ins, Input{Value: []byte(line)})
		}
	}
	return ins, sc.Err()
}

// Compare runs inputs through two versions of a plugin, a and b (.wasm
// files or source folders), as Run does, and returns the inputs on which
// they differ, in input order: the comparison a shadow run makes, offline.
// An error means a version could not run.
func Compare(ctx context.Context, a, b, op string, config []byte, inputs []Input, cacheDir string) ([]Difference, error) {
	outsA, err := Run(ctx, a, op, config, inputs, cacheDir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a, err)
	}
	outsB, err := Run(ctx, b, op, config, inputs, cacheDir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b, err)
	}
	gotA, gotB := byInput(outsA, len(inputs)), byInput(outsB, len(inputs))
	var diffs []Difference
	for i := range inputs {
		if !slices.Equal(gotA[i+1], gotB[i+1]) {
			diffs = append(diffs, Difference{Input: i, Value: string(inputs[i].Value), A: gotA[i+1], B: gotB[i+1]})
		}
	}
	if !slices.Equal(gotA[0], gotB[0]) {
		diffs = append(diffs, Difference{Input: -1, Value: "(the result)", A: gotA[0], B: gotB[0]})
	}
	return diffs, nil
}

// byInput groups outputs by input, as Test words them; slot 0 is an
// aggregate's result, slot i+1 input i.
func byInput(outs []Output, n int) [][]string {
	got := make([][]string, n+1)
	for _, o := range outs {
		slot := o.Input + 1
		switch {
		case o.Error != "":
			got[slot] = append(got[slot], "error: "+o.Error)
		case o.Trap != "":
			got[slot] = append(got[slot], "trap")
		default:
			got[slot] = append(got[slot], string(o.Value))
		}
	}
	return got
}
