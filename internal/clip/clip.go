// Package clip bounds user input that error messages echo: a command-line argument, a
// configuration value, a path or an environment variable can be any length, and a
// message that quotes a 100 KB argument whole buries what is wrong with it (and fills
// logs). Every message that quotes such input quotes it through String or Quote.
package clip

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Max is the most bytes of an input a message quotes.
const Max = 64

// String returns s, or, when s is longer than Max bytes, its first Max bytes (cut at a
// character boundary) followed by "…(N bytes)", N being the whole length.
func String(s string) string {
	if len(s) <= Max {
		return s
	}
	return s[:prefix(s)] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// Quote returns s as a Go string literal (strconv.Quote), or, when s is longer than Max
// bytes, its first Max bytes quoted and followed by "…(N bytes)".
func Quote(s string) string {
	if len(s) <= Max {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:prefix(s)]) + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// prefix returns the length of the longest prefix of s of at most Max bytes that does not
// end inside a UTF-8 sequence.
func prefix(s string) int {
	n := Max
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	if n == 0 {
		return Max // not UTF-8 at all: cut where the bound says
	}
	return n
}

// MaxToken is the longest run of non-blank bytes Tokens leaves whole: longer than any
// path, name or number a message has reason to hold.
const MaxToken = 512

// Tokens returns s with every run of non-blank bytes longer than MaxToken shortened as
// String shortens it: the last guard of an output, for messages that libraries built
// around user input (an os.PathError's path, a parser quoting what it refused).
func Tokens(s string) string {
	if len(s) <= MaxToken {
		return s
	}
	var b strings.Builder
	start := -1 // start of the current token
	flush := func(end int) {
		if start >= 0 {
			if t := s[start:end]; len(t) > MaxToken {
				b.WriteString(String(t))
			} else {
				b.WriteString(t)
			}
			start = -1
		}
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			flush(i)
			b.WriteByte(c)
		case start < 0:
			start = i
		}
		if start >= 0 && i-start == MaxToken {
			// Long: find its end, then clip it whole.
			end := i
			for end < len(s) && !strings.ContainsRune(" \t\n\r", rune(s[end])) {
				end++
			}
			flush(end)
			i = end - 1
		}
	}
	flush(len(s))
	return b.String()
}
