package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestREADMEMatchesHelp reads the repository's README.md and the operator's manual
// (docs/operating.md) and checks every uiod command line they show (in code blocks and
// `inline code`) against the CLI: each command path exists, and each flag given to it
// appears in that command's --help. A flag mentioned on its own in prose (`--dry-run`)
// must appear in some command's --help.
func TestREADMEMatchesHelp(t *testing.T) {
	h := helpChecker{t: t, help: map[string]string{}}
	for _, doc := range []string{"README.md", "docs/operating.md"} {
		b, err := os.ReadFile("../../" + doc)
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		inCode := false
		checked := 0
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inCode = !inCode
				continue
			}
			var snippets []string
			if inCode {
				code, _, _ := strings.Cut(line, " #")
				snippets = []string{code}
			} else {
				for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
					snippets = append(snippets, m[1])
				}
			}
			for _, s := range snippets {
				c, problems := h.check(s, !inCode)
				checked += c
				for _, p := range problems {
					t.Errorf("%s:%d: %s", doc, i+1, p)
				}
			}
		}
		if checked == 0 {
			t.Fatalf("%s shows no uiod command: the check checked nothing", doc)
		}
		t.Logf("%d uiod commands and flags from %s checked", checked, doc)
	}
}

// TestHelpChecker: the README check finds a missing command, subcommand and flag.
func TestHelpChecker(t *testing.T) {
	h := helpChecker{t: t, help: map[string]string{}}
	tests := []struct {
		snippet string
		prose   bool
		checked int
		bad     string // in the one problem expected, "" for none
	}{
		{"uiod run --config /etc/uiod/uiod.yaml", false, 2, ""},
		{"go run ./cmd/uiod latency --sim", false, 2, ""},
		{"uiod config validate -", false, 1, ""},
		{"uiod config example > /etc/uiod/uiod.yaml", false, 1, ""},
		{"make build && install bin/uiod /usr/local/bin/", false, 0, ""},
		{"uiod status -w -n 3 --json", false, 4, ""},
		{"--tx/--rx", true, 2, ""},
		{"--root DIR", true, 1, ""},
		{"uiod frobnicate --now", false, 1, `has no subcommand "frobnicate"`},
		{"uiod config frobnicate", false, 1, `"uiod config" has no subcommand "frobnicate"`},
		{"uiod run --frob x", false, 2, "`uiod run --help` has no --frob"},
		{"uiod run -Z", false, 2, "has no -Z"},
		{"--no-such-flag", true, 1, "no command's --help has --no-such-flag"},
	}
	for _, tt := range tests {
		checked, problems := h.check(tt.snippet, tt.prose)
		switch {
		case checked != tt.checked:
			t.Errorf("%q: checked %d, want %d", tt.snippet, checked, tt.checked)
		case tt.bad == "" && len(problems) > 0:
			t.Errorf("%q: problems %q, want none", tt.snippet, problems)
		case tt.bad != "" && (len(problems) != 1 || !strings.Contains(problems[0], tt.bad)):
			t.Errorf("%q: problems %q, want one naming %q", tt.snippet, problems, tt.bad)
		}
	}
}

var inlineCode = regexp.MustCompile("`([^`]+)`")

// helpChecker checks command lines against the CLI, caching each command's --help.
type helpChecker struct {
	t    *testing.T
	help map[string]string // command path → its --help
}

// check checks one snippet of README text (prose: from inline code) and returns how many
// commands and flags it checked and what it found wrong.
func (h *helpChecker) check(snippet string, prose bool) (checked int, problems []string) {
	tok := strings.Fields(snippet)
	if prose && len(tok) > 0 && strings.HasPrefix(tok[0], "--") {
		for _, f := range strings.Split(tok[0], "/") {
			if !h.anyHelpHas(strings.SplitN(f, "=", 2)[0]) {
				problems = append(problems, fmt.Sprintf("`%s`: no command's --help has %s", snippet, f))
			}
			checked++
		}
		return checked, problems
	}
	for i := 0; i < len(tok); i++ {
		if !isUIOD(tok, i) {
			continue
		}
		root := testRoot()
		cmd, j := root, i+1
		for ; j < len(tok) && !strings.HasPrefix(tok[j], "-") && !isShell(tok[j]); j++ {
			sub := child(cmd, tok[j])
			if sub == nil {
				break
			}
			cmd = sub
		}
		checked++
		if j < len(tok) && !strings.HasPrefix(tok[j], "-") && !isShell(tok[j]) && cmd.HasAvailableSubCommands() {
			// A command with subcommands takes no operands: this word names a missing one.
			problems = append(problems, fmt.Sprintf("`%s`: %q has no subcommand %q", snippet, cmd.CommandPath(), tok[j]))
			i = j
			continue
		}
		help := h.helpOf(cmd)
		for ; j < len(tok) && !isShell(tok[j]); j++ {
			f := strings.SplitN(tok[j], "=", 2)[0]
			if !strings.HasPrefix(f, "-") || f == "-" || f == "--" {
				continue
			}
			if !helpHasFlag(help, f) {
				problems = append(problems, fmt.Sprintf("`%s`: `%s --help` has no %s", snippet, cmd.CommandPath(), f))
			}
			checked++
		}
		i = j
	}
	return checked, problems
}

// isUIOD reports whether tok[i] runs uiod: the word uiod, or a path to it (./cmd/uiod,
// /usr/local/bin/uiod) where a command starts.
func isUIOD(tok []string, i int) bool {
	if tok[i] == "uiod" {
		return true
	}
	if !strings.HasSuffix(tok[i], "/uiod") {
		return false
	}
	return i == 0 || isShell(tok[i-1]) || tok[i-1] == "sudo" || (i >= 2 && tok[i-2] == "go" && tok[i-1] == "run")
}

// isShell reports whether a word ends a command.
func isShell(w string) bool {
	switch w {
	case "|", "||", "&&", ";", "&", ">", ">>", "<", "2>&1":
		return true
	}
	return false
}

func child(c *cobra.Command, name string) *cobra.Command {
	for _, s := range c.Commands() {
		if s.Name() == name || s.HasAlias(name) {
			return s
		}
	}
	return nil
}

// helpOf returns `uiod PATH --help`.
func (h *helpChecker) helpOf(c *cobra.Command) string {
	path := c.CommandPath()
	if s, ok := h.help[path]; ok {
		return s
	}
	args := append(strings.Fields(path)[1:], "--help")
	out, err := execUIOD(h.t, args...)
	if err != nil {
		h.t.Fatalf("uiod %s: %v", strings.Join(args, " "), err)
	}
	h.help[path] = out
	return out
}

// anyHelpHas reports whether the --help of any command shows flag.
func (h *helpChecker) anyHelpHas(flag string) bool {
	root := testRoot()
	found := false
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if found || (c != root && !c.IsAvailableCommand()) {
			return
		}
		if helpHasFlag(h.helpOf(c), flag) {
			found = true
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	return found
}

// helpHasFlag reports whether help lists flag ("--name" or the shorthand "-n").
func helpHasFlag(help, flag string) bool {
	if strings.HasPrefix(flag, "--") {
		return regexp.MustCompile(`(^|[\s,])` + regexp.QuoteMeta(flag) + `($|[\s=\[])`).MatchString(help)
	}
	return regexp.MustCompile(`(^|\s)` + regexp.QuoteMeta(flag) + `, --`).MatchString(help)
}
