package guest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
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
// quoting, $NAME and ${NAME} taken from the unit's Environment= assignments and its
// EnvironmentFile= files (read from this machine; "-" for an optional one), which
// override them. Anything this reader does not implement — %-specifiers, a variable the
// unit does not set or whose value has blanks, backslash escapes, a ";" between two
// commands, the ":", "@" and "!" prefixes — is an error, so the unit test never runs a
// command other than the one systemd would. ExecReload= is read past (not run).
func parseUnit(r io.Reader) (*unitService, error) {
	u := &unitService{}
	section := ""
	sc := bufio.NewScanner(r)
	n := 0
	var pending string
	type execAt struct {
		list     *[]execLine
		key, val string
		line     int
	}
	var execs []execAt
	env := map[string]string{}
	var envFiles []string
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
		case "ExecReload":
			continue // a signal to the running daemon; the unit test does not reload
		case "ExecStartPost", "ExecStop", "ExecCondition":
			return nil, fmt.Errorf("line %d: %s: the unit test does not run it yet", n, key)
		case "Environment":
			words, err := splitWords(val)
			if err != nil {
				return nil, fmt.Errorf("line %d: Environment=%s: %w", n, val, err)
			}
			for _, w := range words {
				k, v, ok := strings.Cut(w, "=")
				if !ok {
					return nil, fmt.Errorf("line %d: Environment=%s: %q is not NAME=VALUE", n, val, w)
				}
				env[k] = v
			}
		case "EnvironmentFile":
			envFiles = append(envFiles, val)
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
		execs = append(execs, execAt{list: list, key: key, val: val, line: n})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if pending != "" {
		return nil, fmt.Errorf("line %d: continuation at the end of the file", n)
	}
	// systemd expands the variables when it runs a command, with the whole environment.
	for _, f := range envFiles {
		if err := readEnvFile(f, env); err != nil {
			return nil, err
		}
	}
	for _, x := range execs {
		if x.val == "" {
			*x.list = nil
			continue
		}
		e, err := parseExec(x.val, env)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s=%s: %w", x.line, x.key, x.val, err)
		}
		*x.list = append(*x.list, e)
	}
	return u, nil
}

// readEnvFile adds the NAME=VALUE lines of an EnvironmentFile= file to env; a path with
// the "-" prefix may be missing.
func readEnvFile(path string, env map[string]string) error {
	optional := strings.HasPrefix(path, "-")
	path = strings.TrimPrefix(path, "-")
	b, err := os.ReadFile(path)
	if optional && errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("EnvironmentFile=%s: %w", path, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("EnvironmentFile=%s: %q is not NAME=VALUE", path, line)
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		env[strings.TrimSpace(k)] = v
	}
	return nil
}

// expandVars replaces $NAME and ${NAME} in s with their values in env.
func expandVars(s string, env map[string]string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		var name string
		if i+1 < len(s) && s[i+1] == '{' {
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("unterminated ${ in %q", s)
			}
			name, i = s[i+2:i+end], i+end
		} else {
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			name, i = s[i+1:j], j-1
		}
		v, ok := env[name]
		if !ok || name == "" {
			return "", fmt.Errorf("$-expansion of %q, which the unit does not set, is not implemented by the unit test", name)
		}
		if strings.ContainsAny(v, " \t\"'$%\\") {
			return "", fmt.Errorf("$%s = %q: values with blanks, quotes or expansions are not implemented by the unit test", name, v)
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

// parseExec splits one command line into its prefixes and words, with the variables of
// env expanded.
func parseExec(s string, env map[string]string) (execLine, error) {
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
	if strings.ContainsAny(rest, `%\`) {
		return execLine{}, fmt.Errorf("%%-specifiers and backslash escapes are not implemented by the unit test")
	}
	rest, err := expandVars(rest, env)
	if err != nil {
		return execLine{}, err
	}
	e.Args, err = splitWords(rest)
	if err != nil {
		return execLine{}, err
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

// splitWords splits s into words on blanks, with "…" and '…' quoting.
func splitWords(rest string) ([]string, error) {
	var words []string
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
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
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
