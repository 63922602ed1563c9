package testutil

import (
	"errors"
	"strconv"
	"testing"
)

func TestCheckParse(t *testing.T) {
	parse := func(s string) (int, error) {
		if s == "bad" {
			return 0, errors.New("bad number")
		}
		return strconv.Atoi(s)
	}
	tests := []struct {
		in, wantErr string
		want        int
		ok, failed  bool
	}{
		{in: "7", want: 7, ok: true},
		{in: "7", want: 8, failed: true},
		{in: "x", want: 1, failed: true},
		{in: "bad", wantErr: "bad number"},
		{in: "bad", wantErr: "other", failed: true},
		{in: "7", wantErr: "bad", failed: true},
	}
	for _, tt := range tests {
		r := &recorder{TB: t}
		_, ok := CheckParse(r, "parse", parse, tt.in, tt.want, tt.wantErr)
		if ok != tt.ok || (len(r.errs) > 0) != tt.failed {
			t.Errorf("CheckParse(%q, want %d, wantErr %q): ok %v, errors %q", tt.in, tt.want, tt.wantErr, ok, r.errs)
		}
	}
}

func FuzzRoundTripSeeds(f *testing.F) {
	FuzzRoundTrip(f, []string{"0", "12", "-3", "x"}, strconv.Atoi, strconv.Itoa, nil)
}
