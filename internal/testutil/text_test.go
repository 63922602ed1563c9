package testutil

import "testing"

func TestTextContains(t *testing.T) {
	for _, tt := range []struct {
		want, unwanted []string
		errs           int
	}{
		{want: []string{"port a", "closed"}, unwanted: []string{"panic"}},
		{want: []string{"port b", "closed", "port c"}, errs: 2},
		{unwanted: []string{"port", "a", "panic"}, errs: 2},
	} {
		r := &errRecorder{TB: t}
		TextContains(r, "log", "port a closed", tt.want...)
		TextLacks(r, "log", "port a closed", tt.unwanted...)
		if len(r.errs) != tt.errs {
			t.Errorf("want %q, unwanted %q: %d errors %q, want %d", tt.want, tt.unwanted, len(r.errs), r.errs, tt.errs)
		}
	}
}
