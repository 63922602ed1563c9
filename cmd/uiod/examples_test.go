package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
)

// helpWidth is the widest line a command's description may have.
const helpWidth = 92

// TestEveryHelpHasExamples runs `uiod PATH --help` for every command of the tree (cobra's
// help and completion commands too): each prints an Examples section, every example
// line is a uiod command line (or a continuation of one), and the description above the
// usage fits a terminal (helpWidth columns).
func TestEveryHelpHasExamples(t *testing.T) {
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Hidden {
			return
		}
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(testRoot(), nil)
	if len(paths) < 15 {
		t.Fatalf("walked %d commands", len(paths))
	}
	for _, path := range paths {
		t.Run(strings.Join(append([]string{"uiod"}, path...), " "), func(t *testing.T) {
			out, err := execUIOD(t, append(path, "--help")...)
			if err != nil {
				t.Fatal(err)
			}
			desc, _, _ := strings.Cut(out, "\nUsage:")
			for _, l := range strings.Split(desc, "\n") {
				if n := utf8.RuneCountInString(l); n > helpWidth {
					t.Errorf("a description line of %d columns (at most %d): %q", n, helpWidth, l)
				}
			}
			_, ex, ok := strings.Cut(out, "\nExamples:\n")
			if !ok {
				t.Fatalf("--help has no Examples section:\n%s", out)
			}
			ex, _, _ = strings.Cut(ex, "\n\n")
			for _, l := range strings.Split(ex, "\n") {
				l = strings.TrimSpace(l)
				if !strings.Contains(l, "uiod ") && !strings.HasPrefix(l, "--") && !strings.HasPrefix(l, "source") {
					t.Errorf("example line %q runs no uiod command", l)
				}
			}
		})
	}
}
