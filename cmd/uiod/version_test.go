package main

import (
	"strings"
	"testing"
)

// TestVersion: `uiod version` and `uiod --version` print the same line, naming the
// version (unstamped: dev), the revision and the Go toolchain.
func TestVersion(t *testing.T) {
	cli := &uiodCLI{}
	var lines []string
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, stderr, code := cli.run(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if !strings.HasPrefix(out, "uiod dev (revision ") || !strings.Contains(out, " go1.") {
			t.Errorf("%v: %q, want uiod dev (revision ..., go1...)", args, out)
		}
		lines = append(lines, out)
	}
	if lines[0] != lines[1] {
		t.Errorf("uiod version %q and uiod --version %q differ", lines[0], lines[1])
	}
}
