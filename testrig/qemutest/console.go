package qemutest

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// consoleBuffer collects the serial console and passes complete lines to log.
type consoleBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	partial []byte
	log     func(string)
}

func (c *consoleBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if c.log != nil {
		c.partial = append(c.partial, p...)
		for {
			line, rest, ok := bytes.Cut(c.partial, []byte{'\n'})
			if !ok {
				break
			}
			c.log(strings.TrimRight(string(line), "\r"))
			c.partial = append(c.partial[:0], rest...)
		}
	}
	return len(p), nil
}

func (c *consoleBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.ReplaceAll(c.buf.String(), "\r", "")
}

var _ io.Writer = (*consoleBuffer)(nil)
