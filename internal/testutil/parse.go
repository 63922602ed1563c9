package testutil

import (
	"strings"
	"testing"
)

// CheckParse checks one row of a parser's table test: with wantErr set, parse(in) must
// fail with an error containing wantErr; without, it must return want. A mismatch is
// reported with t.Errorf under the parser's name. ok says that parse returned want, so
// the caller can check more of the value.
func CheckParse[T comparable](t testing.TB, name string, parse func(string) (T, error), in string, want T, wantErr string) (got T, ok bool) {
	t.Helper()
	got, err := parse(in)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s(%q) = %+v, %v; want an error containing %q", name, in, got, err, wantErr)
		}
		return got, false
	}
	if err != nil || got != want {
		t.Errorf("%s(%q) = %+v, %v; want %+v", name, in, got, err, want)
		return got, false
	}
	return got, true
}

// ParseCase is one row of a parser's table test: In parses to Want, or, with Err set,
// fails with an error containing Err.
type ParseCase[T comparable] struct {
	In   string
	Want T
	Err  string
}

// CheckParseCases runs CheckParse on every case.
func CheckParseCases[T comparable](t testing.TB, name string, parse func(string) (T, error), cases []ParseCase[T]) {
	t.Helper()
	for _, c := range cases {
		CheckParse(t, name, parse, c.In, c.Want, c.Err)
	}
}

// FuzzParser adds seeds to f's corpus and fuzzes parse with strings: parse must not
// panic, and check (if not nil) runs on every value parse accepts.
func FuzzParser[T any](f *testing.F, seeds []string, parse func(string) (T, error), check func(t *testing.T, in string, v T)) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		v, err := parse(in)
		if err != nil || check == nil {
			return
		}
		check(t, in, v)
	})
}

// FuzzRoundTrip is FuzzParser for a parser with a canonical text form: every value parse
// accepts must format back to text that parses to the same value, before check runs.
func FuzzRoundTrip[T comparable](f *testing.F, seeds []string, parse func(string) (T, error), format func(T) string, check func(t *testing.T, in string, v T)) {
	FuzzParser(f, seeds, parse, func(t *testing.T, in string, v T) {
		text := format(v)
		back, err := parse(text)
		if err != nil || back != v {
			t.Fatalf("%q parses to %+v, whose text %q parses to %+v, %v", in, v, text, back, err)
		}
		if check != nil {
			check(t, in, v)
		}
	})
}
