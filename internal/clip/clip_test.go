package clip

import (
	"strings"
	"testing"
)

func TestClip(t *testing.T) {
	long := strings.Repeat("a", 100<<10)
	tests := []struct {
		name, in, str, quote string
	}{
		{"empty", "", "", `""`},
		{"short", "eth0", "eth0", `"eth0"`},
		{"at the bound", strings.Repeat("b", Max), strings.Repeat("b", Max), `"` + strings.Repeat("b", Max) + `"`},
		{"100 KB", long, strings.Repeat("a", Max) + "…(102400 bytes)", `"` + strings.Repeat("a", Max) + `"…(102400 bytes)`},
		{"cut before a character", strings.Repeat("a", Max-1) + "é" + long, strings.Repeat("a", Max-1) + "…(102465 bytes)",
			`"` + strings.Repeat("a", Max-1) + `"…(102465 bytes)`},
		{"control bytes", "\n" + long, "\n" + strings.Repeat("a", Max-1) + "…(102401 bytes)", `"\n` + strings.Repeat("a", Max-1) + `"…(102401 bytes)`},
		{"not UTF-8", strings.Repeat("\x80", Max+1), strings.Repeat("\x80", Max) + "…(65 bytes)", `"` + strings.Repeat(`\x80`, Max) + `"…(65 bytes)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := String(tt.in); got != tt.str {
				t.Errorf("String = %.100q…, want %.100q…", got, tt.str)
			}
			if got := Quote(tt.in); got != tt.quote {
				t.Errorf("Quote = %.100q…, want %.100q…", got, tt.quote)
			}
		})
	}
}

func TestTokens(t *testing.T) {
	long := strings.Repeat("x", 100<<10)
	okTok := strings.Repeat("p", MaxToken-1) // and the colon
	tests := []struct{ name, in, want string }{
		{"short", "open /etc/uiod.yaml: no such file", "open /etc/uiod.yaml: no such file"},
		{"a token at the bound", "open " + okTok + ": denied", "open " + okTok + ": denied"},
		{"a long path", "open /tmp/" + long + ": file name too long", "open " + String("/tmp/"+long+":") + " file name too long"},
		{"two long ones and lines", long + "\n\t" + long, String(long) + "\n\t" + String(long)},
		{"long at the end", "unknown flag: --" + long, "unknown flag: " + String("--"+long)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Tokens(tt.in); got != tt.want {
				t.Errorf("Tokens = %.200q, want %.200q", got, tt.want)
			}
		})
	}
}
