package config

import "testing"

// TestUserStateDir: a user other than root whose configuration has no PCI port and sets
// no state_dir gets $XDG_RUNTIME_DIR/uiod; root, a PCI port, a state_dir in the file or
// from $UIOD_STATE_DIR, or no (or a relative) $XDG_RUNTIME_DIR keep what they had.
func TestUserStateDir(t *testing.T) {
	pciPort := port0("driver", "vfio-pci", "pci", `"0000:03:00.0"`, "wire", `""`)
	tests := []struct {
		name string
		euid int
		yaml string
		env  []string
		want string
	}{
		{"user, sim only", 1000, simPorts, []string{"XDG_RUNTIME_DIR", "/run/user/1000"}, "/run/user/1000/uiod"},
		{"root", 0, simPorts, []string{"XDG_RUNTIME_DIR", "/run/user/0"}, DefaultStateDir},
		{"no XDG_RUNTIME_DIR", 1000, simPorts, nil, DefaultStateDir},
		{"relative XDG_RUNTIME_DIR", 1000, simPorts, []string{"XDG_RUNTIME_DIR", "run"}, DefaultStateDir},
		{"state_dir set", 1000, simPorts + "state_dir: /tmp/mine\n", []string{"XDG_RUNTIME_DIR", "/run/user/1000"}, "/tmp/mine"},
		{"state_dir set in capitals", 1000, simPorts + "State_Dir: /tmp/mine\n", []string{"XDG_RUNTIME_DIR", "/run/user/1000"}, "/tmp/mine"},
		{"state_dir from env", 1000, simPorts, []string{"XDG_RUNTIME_DIR", "/run/user/1000", "UIOD_STATE_DIR", "/tmp/env"}, "/tmp/env"},
		{"pci port", 1000, pciPort, []string{"XDG_RUNTIME_DIR", "/run/user/1000"}, DefaultStateDir},
	}
	saved := geteuid
	defer func() { geteuid = saved }()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			geteuid = func() int { return tt.euid }
			c, err := read(t, tt.yaml+"forward: {mode: reflect}\n", tt.env...)
			if err != nil {
				t.Fatal(err)
			}
			if c.StateDir != tt.want {
				t.Errorf("state_dir %q, want %q", c.StateDir, tt.want)
			}
		})
	}
}
