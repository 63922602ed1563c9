package dpdk

import (
	"slices"
	"testing"
)

// TestGrepPrefix checks that a line the guest is still writing (no newline yet) is not
// taken for a result.
func TestGrepPrefix(t *testing.T) {
	tests := []struct {
		out  string
		want []string
	}{
		{"", nil},
		{"BENCH RESULT a x=1", nil},
		{"BENCH RESULT a x=1\n", []string{"BENCH RESULT a x=1"}},
		{"BENCH RESULT a x=1\nBENCH RESULT uio", []string{"BENCH RESULT a x=1"}},
		{"noise\nBENCH RESULT a x=1\nBENCH RESULT b y=2\nmore\n", []string{"BENCH RESULT a x=1", "BENCH RESULT b y=2"}},
	}
	for _, tt := range tests {
		if got := grepPrefix(tt.out, "BENCH RESULT "); !slices.Equal(got, tt.want) {
			t.Errorf("grepPrefix(%q) = %q, want %q", tt.out, got, tt.want)
		}
	}
}

// A forwarder's READY and STOPPED lines are counted whole: uiod-busy's count is not
// raised by uiod-busy-noyield's, whose name it prefixes.
func TestCountLines(t *testing.T) {
	out := "BENCH READY uiod-busy\nBENCH READY uiod-busy-noyield\r\nBENCH READY uiod-busy-noyield\nBENCH READY uiod-busy"
	for _, tc := range []struct {
		line string
		want int
	}{
		{"BENCH READY uiod-busy", 1}, // the last line is not complete yet
		{"BENCH READY uiod-busy-noyield", 2},
		{"BENCH READY uiod", 0},
	} {
		if got := countLines(out, tc.line); got != tc.want {
			t.Errorf("%q: %d lines, want %d", tc.line, got, tc.want)
		}
	}
}
