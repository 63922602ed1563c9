package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunModelMemory: `uiod run` with sim ports whose device models need more memory
// than <root>/proc/meminfo's MemAvailable, a memory.model_limit or (without a meminfo)
// the kernel's free RAM allows (500 ports × 16 queues × 4096 descriptors) is refused
// before it starts, exit 2, naming the ports, and leaves nothing in state_dir.
func TestRunModelMemory(t *testing.T) {
	var b strings.Builder
	b.WriteString("metrics: {listen: \"\"}\nforward: {mode: reflect}\npoll: {mode: busy}\nports:\n")
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&b, "  - {name: port%d, driver: sim, wire: \"pair:w%d\", rx_queues: 16, tx_queues: 16, rx_ring: 4096, tx_ring: 4096}\n", i, i)
	}
	for _, tt := range []struct {
		name, extra, want string
		meminfo           bool
	}{
		{"MemAvailable", "", "more than the 1GiB allowed by memory.model_limit auto: MemAvailable", true},
		{"explicit limit", "memory: {model_limit: 2GiB}\n", "more than the 2GiB allowed by memory.model_limit", true},
		{"no meminfo under the root", "", "allowed by memory.model_limit auto: sysinfo free and buffer RAM", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
				t.Fatal(err)
			}
			if tt.meminfo {
				meminfo := "MemTotal: 2097152 kB\nMemFree: 1048576 kB\nMemAvailable: 1048576 kB\n"
				if err := os.WriteFile(filepath.Join(root, "proc/meminfo"), []byte(meminfo), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, stderr, code := runUIOD(t, b.String()+tt.extra, nil, "--root", root, "run", "--config", "-")
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			for _, w := range []string{"memory.model_limit", "port0 547.2MiB", "and 492 more", tt.want} {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%.2000s", w, stderr)
				}
			}
			if _, err := os.Stat(filepath.Join(root, "run")); !os.IsNotExist(err) {
				t.Errorf("run left %s behind (stat: %v)", filepath.Join(root, "run"), err)
			}
		})
	}
}
