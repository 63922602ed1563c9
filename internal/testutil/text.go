package testutil

import (
	"strings"
	"testing"
)

// TextContains reports (with t.Errorf) each of want that text lacks; what names the text
// in the message ("stdout", "log").
func TextContains(t testing.TB, what, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
}

// TextLacks reports (with t.Errorf) each of unwanted that text contains.
func TextLacks(t testing.TB, what, text string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(text, w) {
			t.Errorf("%s has %q:\n%s", what, w, text)
		}
	}
}
