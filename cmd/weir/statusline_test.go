package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// fakeTerm is the screen of a terminal, as far as the status line uses
// one: '\r' goes to the start of the line, "\x1b[K" erases to its end,
// '\n' starts the next line, and other characters overwrite the screen.
type fakeTerm struct {
	lines    [][]rune
	row, col int
}

func (f *fakeTerm) Write(p []byte) (int, error) {
	s := string(p)
	for s != "" {
		switch {
		case strings.HasPrefix(s, "\x1b[K"):
			f.line()
			f.lines[f.row] = f.lines[f.row][:min(f.col, len(f.lines[f.row]))]
			s = s[3:]
			continue
		case s[0] == '\r':
			f.col = 0
		case s[0] == '\n':
			f.row, f.col = f.row+1, 0
		default:
			r := []rune(s)[0]
			f.line()
			for len(f.lines[f.row]) <= f.col {
				f.lines[f.row] = append(f.lines[f.row], ' ')
			}
			f.lines[f.row][f.col] = r
			f.col++
			s = s[len(string(r)):]
			continue
		}
		s = s[1:]
	}
	return len(p), nil
}

// line makes sure the cursor's line exists.
func (f *fakeTerm) line() {
	for len(f.lines) <= f.row {
		f.lines = append(f.lines, nil)
	}
}

func (f *fakeTerm) screen() []string {
	f.line()
	out := make([]string, len(f.lines))
	for i, l := range f.lines {
		out[i] = string(l)
	}
	return out
}

// TestStatusWriterKeepsLogLinesApart: through a statusWriter, log lines
// written while a status line is shown never share a screen line with it,
// whether they come whole, in pieces, before the first status or between
// redraws, and the status line stays last until it is cleared.
func TestStatusWriterKeepsLogLinesApart(t *testing.T) {
	type step struct {
		log    string // written as a log write, if not ""
		status string // shown, if not ""
		clear  bool
	}
	tests := []struct {
		name  string
		steps []step
		want  []string
	}{
		{"log lines between redraws",
			[]step{{status: "status 1"}, {log: "log A\n"}, {status: "status 2"}, {log: "log B\n"}},
			[]string{"log A", "log B", "status 2"}},
		{"a log line written in pieces around a redraw",
			[]step{{status: "status 1"}, {log: "log "}, {status: "status 2"}, {log: "C\n"}},
			[]string{"log C", "status 2"}},
		{"logs before the first status pass through",
			[]step{{log: "log A\n"}, {log: "log B\n"}, {status: "status 1"}},
			[]string{"log A", "log B", "status 1"}},
		{"a shorter status overwrites a longer one",
			[]step{{status: "status number one"}, {status: "status 2"}, {log: "log A\n"}},
			[]string{"log A", "status 2"}},
		{"clearing leaves the logs",
			[]step{{status: "status 1"}, {log: "log A\n"}, {clear: true}, {log: "log B\n"}},
			[]string{"log A", "log B", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			term := &fakeTerm{}
			sw := newStatusWriter(term)
			for _, s := range tc.steps {
				switch {
				case s.log != "":
					fmt.Fprint(sw, s.log)
				case s.clear:
					sw.clear()
				default:
					sw.show(s.status)
				}
			}
			if got := term.screen(); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("screen:\n%q\nwant:\n%q", got, tc.want)
			}
		})
	}
}

// TestStatusWriterConcurrentLogs: logs written from many goroutines while
// the status is redrawn each land on a line of their own.
func TestStatusWriterConcurrentLogs(t *testing.T) {
	term := &fakeTerm{}
	sw := newStatusWriter(term)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				fmt.Fprintf(sw, "log %d.%d\n", g, i)
			}
		})
	}
	for i := range 100 {
		sw.show(fmt.Sprintf("status %d", i))
	}
	wg.Wait()
	sw.show("status last")
	got := term.screen()
	logs := 0
	for _, l := range got[:len(got)-1] {
		if !strings.HasPrefix(l, "log ") || strings.Contains(l, "status") {
			t.Fatalf("line %q mixes a log line with the status", l)
		}
		logs++
	}
	if last := got[len(got)-1]; logs != 200 || last != "status last" {
		t.Errorf("%d log lines, last line %q", logs, last)
	}
}

func TestFitWidth(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		width      int
		want       string
	}{
		{"unknown width", "abcdef", 0, "abcdef"},
		{"fits", "abc", 10, "abc"},
		{"cut before the last column", "abcdef", 5, "abc…"},
	} {
		if got := fitWidth(tc.line, tc.width); got != tc.want {
			t.Errorf("%s: fitWidth(%q, %d) = %q, want %q", tc.name, tc.line, tc.width, got, tc.want)
		}
	}
}
