package testutil

import "testing"

// Panics fails the test unless fn panics; what names the call in the failure ("Read32
// beyond the region").
func Panics(t testing.TB, what string, fn func()) {
	t.Helper()
	defer func() {
		t.Helper()
		if recover() == nil {
			t.Errorf("%s did not panic", what)
		}
	}()
	fn()
}
