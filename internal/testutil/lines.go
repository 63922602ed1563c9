package testutil

import (
	"strings"
	"sync"
)

// Lines collects the lines one goroutine reads (a subprocess's output, as it scans it)
// for the test's goroutine to print. Its zero value is ready to use.
type Lines struct {
	mu sync.Mutex
	b  strings.Builder
}

// Add appends line and a newline.
func (l *Lines) Add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(line + "\n")
}

// String returns every line added so far.
func (l *Lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
