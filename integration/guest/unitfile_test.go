package guest

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// unitService is what the unit test takes from a systemd unit's [Service] section: the
// command lines in the order systemd runs them, the stop signal and timeout, and the
// runtime directories systemd creates before the first ExecStartPre.
type unitService struct {
	StartPre, Start, StopPost []execLine
	KillSignal                string // "" when the unit leaves systemd's default (SIGTERM)
	TimeoutStopSec            string
	RuntimeDirectory          []string
	RuntimeDirectoryMode      string // octal, "" for systemd's default 0755
}

// execLine is one Exec*= command line (systemd.service(5), "Command lines").
type execLine struct {
	Raw string
	// IgnoreFailure is the "-" prefix: a failing command does not fail the unit.
	IgnoreFailure bool
	// Privileged is the "+" prefix: the command runs outside the unit's sandbox.
	Privileged bool
	Args       []string
}

// parseUnit reads the [Service] section of a unit file: comments (# and ;), continuation
// lines (a trailing backslash), and an empty Exec*= assignment resetting its list, as
// systemd reads them. Command lines are split into words on blanks with "…" and '…'
// quoting; anything this reader does not implement — %-specifiers, $-expansion, backslash
// escapes, a ";" between two commands, the ":", "@" and "!" prefixes — is an error, so
// the unit test never runs a command other than the one systemd would.
func parseUnit(r io.Reader) (*unitService, error) {
	u := &unitService{}
	section := ""
	sc := bufio.NewScanner(r)
	n := 0
	var pending string
	for sc.Scan() {
		n++
		trimmed := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, ";") {
			continue // also inside a continued line, as systemd reads it
		}
		if pending != "" {
			trimmed = strings.TrimSpace(pending + " " + trimmed)
			pending = ""
		}
		if strings.HasSuffix(trimmed, `\`) {
			pending = strings.TrimSuffix(trimmed, `\`)
			continue
		}
		switch {
		case trimmed == "":
			continue
		case strings.HasPrefix(trimmed, "["):
			if !strings.HasSuffix(trimmed, "]") {
				return nil, fmt.Errorf("line %d: bad section header %q", n, trimmed)
			}
			section = trimmed
			continue
		case section != "[Service]":
			continue
		}
		key, val, ok := strings.Cut(trimmed, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: %q is not KEY=VALUE", n, trimmed)
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		var list *[]execLine
		switch key {
		case "ExecStartPre":
			list = &u.StartPre
		case "ExecStart":
			list = &u.Start
		case "ExecStopPost":
			list = &u.StopPost
		case "ExecStartPost", "ExecStop", "ExecReload", "ExecCondition":
			return nil, fmt.Errorf("line %d: %s: the unit test does not run it yet", n, key)
		case "KillSignal":
			u.KillSignal = val
		case "TimeoutStopSec":
			u.TimeoutStopSec = val
		case "RuntimeDirectory":
			if val == "" {
				u.RuntimeDirectory = nil
			}
			u.RuntimeDirectory = append(u.RuntimeDirectory, strings.Fields(val)...)
		case "RuntimeDirectoryMode":
			u.RuntimeDirectoryMode = val
		}
		if list == nil {
			continue
		}
		if val == "" {
			*list = nil
			continue
		}
		e, err := parseExec(val)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s=%s: %w", n, key, val, err)
		}
		*list = append(*list, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if pending != "" {
		return nil, fmt.Errorf("line %d: continuation at the end of the file", n)
	}
	return u, nil
}

// parseExec splits one command line into its prefixes and words.
func parseExec(s string) (execLine, error) {
	e := execLine{Raw: s}
	i := 0
prefixes:
	for ; i < len(s); i++ {
		switch s[i] {
		case '-':
			e.IgnoreFailure = true
		case '+':
			e.Privileged = true
		case '@', ':', '!':
			return execLine{}, fmt.Errorf("prefix %q is not implemented by the unit test", s[i])
		default:
			break prefixes
		}
	}
	rest := s[i:]
	if strings.ContainsAny(rest, `%$\`) {
		return execLine{}, fmt.Errorf("%%-specifiers, $-expansion and backslash escapes are not implemented by the unit test")
	}
	var word strings.Builder
	inWord := false
	var quote byte
	for j := 0; j < len(rest); j++ {
		c := rest[j]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			word.WriteByte(c)
		case c == '"' || c == '\'':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			if inWord {
				e.Args = append(e.Args, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return execLine{}, fmt.Errorf("unterminated %c quote", quote)
	}
	if inWord {
		e.Args = append(e.Args, word.String())
	}
	if len(e.Args) == 0 {
		return execLine{}, fmt.Errorf("no command")
	}
	for _, a := range e.Args {
		if a == ";" {
			return execLine{}, fmt.Errorf(`";" between two commands is not implemented by the unit test`)
		}
	}
	if !strings.HasPrefix(e.Args[0], "/") {
		return execLine{}, fmt.Errorf("executable %q is not an absolute path", e.Args[0])
	}
	return e, nil
}

// configArg returns the value of the --config (or -c) flag of a uiod command line.
func (e execLine) configArg() string {
	for i, a := range e.Args {
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			return v
		}
		if (a == "--config" || a == "-c") && i+1 < len(e.Args) {
			return e.Args[i+1]
		}
	}
	return ""
}

// subcommand returns the uiod subcommand of the line ("bind", "quiesce", …).
func (e execLine) subcommand() string {
	if len(e.Args) < 2 {
		return ""
	}
	return e.Args[1]
}
