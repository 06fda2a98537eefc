package wasm

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"unicode/utf8"
)

const (
	// guestOutputCap is how many bytes of stdout and stderr, together, one
	// instance may write to the log. Past it, one "guest output truncated"
	// line is logged and further output is dropped (but stderr is still
	// watched for trap reasons).
	guestOutputCap = 64 << 10
	// stderrKeepLines and stderrKeepBytes bound what is kept of the stderr
	// of the current call, for trap reasons: the first lines (where a Go
	// panic puts its message) and the last ones.
	stderrKeepLines = 4
	stderrKeepBytes = 240
	// trapStderrMax bounds the stderr excerpt in a trap reason.
	trapStderrMax = 400
)

// guestOutput captures an instance's stdout and stderr: it logs them line
// by line, tagged with the operator and the stream, up to guestOutputCap
// bytes, and keeps the start and end of what the current call wrote to
// stderr. WASI writes happen on the goroutine calling the guest, so it
// needs no locking.
type guestOutput struct {
	log       *slog.Logger
	budget    int
	truncated bool
	stdout    guestStream
	stderr    guestStream

	// stderr lines of the current call.
	head  []string
	tail  [stderrKeepLines]string
	ntail int // lines written to tail, ever (ring position)
}

// guestStream is one of the two streams; it implements io.Writer.
type guestStream struct {
	g       *guestOutput
	name    string
	partial []byte
}

func newGuestOutput(log *slog.Logger) *guestOutput {
	g := &guestOutput{log: log, budget: guestOutputCap}
	g.stdout = guestStream{g: g, name: "stdout"}
	g.stderr = guestStream{g: g, name: "stderr"}
	return g
}

// Write splits p into lines. A line longer than abi.MaxLogLine is split.
func (s *guestStream) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := maxGuestLine - len(s.partial)
			if len(p) < room {
				s.partial = append(s.partial, p...)
				break
			}
			s.partial = append(s.partial, p[:room]...)
			p = p[room:]
			s.flush()
			continue
		}
		if len(s.partial) > 0 {
			s.partial = append(s.partial, p[:i]...)
			s.flush()
		} else {
			s.g.line(s, p[:i])
		}
		p = p[i+1:]
	}
	return n, nil
}

// maxGuestLine is the longest line of guest output logged as one line.
const maxGuestLine = 4096

// flush emits the partial line, if any.
func (s *guestStream) flush() {
	if len(s.partial) > 0 {
		s.g.line(s, s.partial)
		s.partial = s.partial[:0]
	}
}

func (g *guestOutput) line(s *guestStream, line []byte) {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if s == &g.stderr {
		g.keepStderr(line)
	}
	if g.budget <= 0 {
		if !g.truncated {
			g.truncated = true
			g.log.Warn("guest output truncated: the instance wrote more than its limit to stdout and stderr",
				"limit_bytes", guestOutputCap)
		}
		return
	}
	g.budget -= len(line) + 1
	g.log.LogAttrs(context.Background(), slog.LevelInfo, string(line),
		slog.String("source", "guest"), slog.String("stream", s.name))
}

// keepStderr remembers line as one of the current call's stderr lines.
func (g *guestOutput) keepStderr(line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	s := truncateUTF8(line, stderrKeepBytes)
	if len(g.head) < stderrKeepLines {
		g.head = append(g.head, s)
		return
	}
	g.tail[g.ntail%stderrKeepLines] = s
	g.ntail++
}

// beginCall forgets the stderr lines of earlier calls.
func (g *guestOutput) beginCall() {
	if len(g.head) > 0 || g.ntail > 0 {
		g.head = g.head[:0]
		g.ntail = 0
	}
}

// close emits partial lines.
func (g *guestOutput) close() {
	g.stdout.flush()
	g.stderr.flush()
}

// stderrExcerpt summarises what the current call wrote to stderr, for a
// trap reason: from a Go panic or fatal error line when there is one, else
// the last lines; "" when it wrote nothing.
func (g *guestOutput) stderrExcerpt() string {
	lines := append([]string(nil), g.head...)
	n := min(g.ntail, stderrKeepLines)
	if g.ntail > stderrKeepLines {
		lines = append(lines, "...")
	}
	for i := g.ntail - n; i < g.ntail; i++ {
		lines = append(lines, g.tail[i%stderrKeepLines])
	}
	if p := bytes.TrimSpace(g.stderr.partial); len(p) > 0 {
		lines = append(lines, truncateUTF8(p, stderrKeepBytes))
	}
	if len(lines) == 0 {
		return ""
	}
	for i, l := range lines {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			// The message, up to Go's stack trace.
			end := i + 1
			for end < len(lines) && !strings.HasPrefix(lines[end], "goroutine ") && lines[end] != "..." {
				end++
			}
			lines = lines[i:end]
			break
		}
	}
	if len(lines) > stderrKeepLines {
		lines = lines[len(lines)-stderrKeepLines:]
	}
	return truncateUTF8([]byte(strings.Join(lines, " | ")), trapStderrMax)
}

// truncateUTF8 returns b as a string of at most max bytes, cut at a rune
// boundary, with "..." appended when cut.
func truncateUTF8(b []byte, max int) string {
	if len(b) <= max {
		return string(b)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return string(b[:cut]) + "..."
}
