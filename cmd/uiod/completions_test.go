package main

import (
	"strings"
	"testing"

	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

// TestDidYouMean: a mistyped subcommand exits 2 with cobra's suggestions, at the top
// level and under config and completion.
func TestDidYouMean(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"devics"}, "devices"},
		{[]string{"lantency"}, "latency"},
		{[]string{"quiese"}, "quiesce"},
		{[]string{"config", "valdate"}, "validate"},
		{[]string{"completion", "bsh"}, "bash"},
	} {
		_, stderr, code := runUIOD(t, "", nil, tt.args...)
		if code != exitUsage || !strings.Contains(stderr, `unknown command "`+tt.args[len(tt.args)-1]+`"`) ||
			!strings.Contains(stderr, "Did you mean this?\n\t"+tt.want+"\n") {
			t.Errorf("uiod %q: exit %d, stderr %q; want 2 suggesting %s", tt.args, code, stderr, tt.want)
		}
	}
	_, stderr, code := runUIOD(t, "", nil, "zzzzzz")
	if code != exitUsage || strings.Contains(stderr, "Did you mean") {
		t.Errorf("uiod zzzzzz: exit %d, stderr %q; want 2 without a suggestion", code, stderr)
	}
}

// TestCompletionValues asks the shell completion entry point (what the generated scripts run)
// for flag values and PCI functions under a fixture --root.
func TestCompletionValues(t *testing.T) {
	tr := pcitest.Standard(t)
	tests := []struct {
		args     []string
		want     []string
		unwanted []string
	}{
		{[]string{"latency", "--log-level", ""}, []string{"debug", "info", "warn", "error"}, nil},
		{[]string{"--log-format", ""}, []string{"console", "json"}, nil},
		{[]string{"latency", "--nic", ""}, []string{"ixgbe", "igb", "virtio"}, nil},
		{[]string{"--root", tr.Root, "bind", "--driver", ""}, []string{"vfio-pci", "uio_pci_generic", "ixgbe", "igb", "virtio-pci"}, []string{"ahci"}},
		{[]string{"--root", tr.Root, "devices", "--driver", ""}, []string{"ahci", "vfio-pci", "none"}, nil},
		{[]string{"--root", tr.Root, "bind", "--driver", "vfio-pci", ""},
			[]string{pcitest.Igb82576 + "\t", "if=ens3f0 drv=igb", pcitest.Unbound + "\t", pcitest.I350 + "\t"}, []string{pcitest.SATA}},
		{[]string{"--root", tr.Root, "unbind", pcitest.Igb82576, ""}, []string{pcitest.I350 + "\t"}, []string{pcitest.Igb82576 + "\t", pcitest.SATA}},
		{[]string{"--root", tr.Root, "quiesce", ""}, []string{pcitest.I350 + "\t"}, nil},
		{[]string{"--root", tr.Root, "devices", ""}, []string{pcitest.SATA + "\t", pcitest.Bridge + "\t"}, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			stdout, stderr, code := runUIOD(t, "", nil, append([]string{"__complete"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout, "\n"+w) && !strings.HasPrefix(stdout, w) && !(strings.Contains(w, "=") && strings.Contains(stdout, w)) {
					t.Errorf("completions lack %q:\n%s", w, stdout)
				}
			}
			for _, u := range tt.unwanted {
				if strings.Contains(stdout, u) {
					t.Errorf("completions have %q:\n%s", u, stdout)
				}
			}
			if !strings.Contains(stdout, ":4\n") { // ShellCompDirectiveNoFileComp
				t.Errorf("completions offer files:\n%s", stdout)
			}
		})
	}
}
