package testutil

import (
	"bufio"
	"io"
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

// Follow adds the lines of r (a subprocess's stderr pipe) on a goroutine of its own
// until r ends. seen is closed at the first line containing want (never if want is
// empty), eof once r has ended and every line is in.
func (l *Lines) Follow(r io.Reader, want string) (seen, eof <-chan struct{}) {
	s, e := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(e)
		sc := bufio.NewScanner(r)
		found := false
		for sc.Scan() {
			l.Add(sc.Text())
			if !found && want != "" && strings.Contains(sc.Text(), want) {
				found = true
				close(s)
			}
		}
	}()
	return s, e
}
