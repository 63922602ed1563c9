package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

// TestValidateMemlock: config validate says how much RLIMIT_MEMLOCK the PCI ports need
// (two default ports on 4 KiB pages: 2 × 4112 KiB), and says nothing of it for a
// configuration of sim ports only.
func TestValidateMemlock(t *testing.T) {
	cli := &uiodCLI{}
	tr := pcitest.New(t)
	dir := t.TempDir()
	tests := []struct {
		name, yaml, want string
	}{
		{"two vfio ports", `
ports:
  - {name: a, driver: vfio-pci, pci: "0000:03:10.0"}
  - {name: b, driver: vfio-pci, pci: "0000:03:10.2"}
forward: {mode: l2fwd, pairs: [[a, b]]}
memory: {dma_limit: 1GiB}
`, "vf.yaml: 2 PCI ports pin 8224 KiB of DMA memory (4 KiB pages): without CAP_IPC_LOCK, RLIMIT_MEMLOCK must allow at least that (ulimit -l 8224, LimitMEMLOCK=8421376)\n"},
		{"sim only", `
ports:
  - {name: a, driver: sim, wire: "pair:mla"}
forward: {mode: reflect}
`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "vf.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			out, stderr, code := cli.run(t, "--root", tr.Root, "config", "validate", path)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			out = strings.ReplaceAll(out, path, "vf.yaml")
			got := strings.TrimPrefix(out, "vf.yaml: ok\n")
			if !strings.HasPrefix(out, "vf.yaml: ok\n") || got != tt.want {
				t.Errorf("output %q, want ok and %q", out, tt.want)
			}
		})
	}
}
