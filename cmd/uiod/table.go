package main

import (
	"io"
	"strings"
	"unicode/utf8"
)

// textTable is a table for a terminal: one-word headers, text left-aligned, numbers
// right-aligned, two spaces between columns.
type textTable struct {
	heads []string
	num   []bool // the column holds numbers: right-aligned
	rows  [][]string
}

// newTextTable starts a table of the given columns; a header ending in "#" (which is
// dropped) is a column of numbers.
func newTextTable(heads ...string) *textTable {
	t := &textTable{}
	for _, h := range heads {
		n := strings.HasSuffix(h, "#")
		t.heads = append(t.heads, strings.TrimSuffix(h, "#"))
		t.num = append(t.num, n)
	}
	return t
}

// add appends a row, one cell per column.
func (t *textTable) add(cells ...string) { t.rows = append(t.rows, cells) }

// write prints the table. With maxWidth > 0, a last column of text that would make a
// line longer is cut to fit, ending in "…".
func (t *textTable) write(w io.Writer, maxWidth int) error {
	width := make([]int, len(t.heads))
	for _, r := range append([][]string{t.heads}, t.rows...) {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	last := len(t.heads) - 1
	if maxWidth > 0 && last >= 0 && !t.num[last] {
		before := 0
		for _, n := range width[:last] {
			before += n + 2
		}
		width[last] = max(min(width[last], maxWidth-before), utf8.RuneCountInString(t.heads[last]))
	}
	var b strings.Builder
	for _, r := range append([][]string{t.heads}, t.rows...) {
		var line strings.Builder
		for i, c := range r {
			if i > 0 {
				line.WriteString("  ")
			}
			n := utf8.RuneCountInString(c)
			if n > width[i] {
				c, n = string([]rune(c)[:width[i]-1])+"…", width[i]
			}
			pad := strings.Repeat(" ", width[i]-n)
			if t.num[i] {
				line.WriteString(pad + c)
			} else if i < last {
				line.WriteString(c + pad)
			} else {
				line.WriteString(c)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
