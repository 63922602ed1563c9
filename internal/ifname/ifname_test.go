package ifname

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	cases := []struct {
		name, wantErr string
	}{
		{"uiod0", ""},
		{"eth-kernel_1.2", ""},
		{"abcdefghijklmno", ""}, // 15 bytes
		{"", "empty"},
		{"abcdefghijklmnop", "16 bytes, longer than the kernel's 15"},
		{".", "not an interface name"},
		{"..", "not an interface name"},
		{"-x", "start with '-'"},
		{"tap%d", "'%'"},
		{"a/b", "'/'"},
		{"a:1", "':'"},
		{"a b", "' '"},
		{"é", "only letters"},
	}
	for _, c := range cases {
		err := Check(c.name)
		if c.wantErr == "" {
			if err != nil {
				t.Errorf("Check(%q) = %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("Check(%q) = %v, want an error with %q", c.name, err, c.wantErr)
		}
	}
}
