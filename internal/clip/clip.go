// Package clip bounds user input that error messages echo: a command-line argument, a
// configuration value, a path or an environment variable can be any length, and a
// message that quotes a 100 KB argument whole buries what is wrong with it (and fills
// logs). Every message that quotes such input quotes it through String or Quote.
package clip

import (
	"strconv"
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
