package testutil

import "testing"

func TestPollSection(t *testing.T) {
	for _, tc := range []struct{ policy, want string }{
		{"busy", "{mode: busy, cpus: [0]}"},
		{"adaptive", "{mode: adaptive, cpus: [0]}"},
		{"auto", "{mode: adaptive, idle_threshold: auto, cpus: [0]}"},
		{"adaptive@2ms", "{mode: adaptive, idle_threshold: 2ms, cpus: [0]}"},
		{"adaptive@soon", ""},
		{"busy@2ms", ""},
	} {
		got, err := PollSection(tc.policy, "0")
		if tc.want == "" {
			if err == nil {
				t.Errorf("%s: %q, want an error", tc.policy, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.policy, got, err, tc.want)
		}
	}
}
