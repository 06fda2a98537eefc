package weirtest

import (
	"bytes"
	"strings"
	"sync"
)

// SyncBuffer is a bytes.Buffer that a logger or sink may write to while
// the test reads it. The zero value is ready; it is safe for concurrent
// use.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Lines returns what was written so far as lines, without the last
// newline; none when nothing was.
func (s *SyncBuffer) Lines() []string {
	t := strings.TrimSpace(s.String())
	if t == "" {
		return nil
	}
	return strings.Split(t, "\n")
}
