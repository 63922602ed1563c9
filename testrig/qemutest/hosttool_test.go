package qemutest

import (
	"debug/elf"
	"errors"
	"strings"
	"testing"
)

func TestHostTools(t *testing.T) {
	p, err := lookTool("bridge")
	if err != nil {
		t.Skip(err)
	}
	f, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	needed, _ := f.ImportedLibraries()
	f.Close()
	entries, err := HostTools("bridge", "bridge")
	if err != nil {
		t.Fatal(err)
	}
	names := make(map[string]int)
	for _, e := range entries {
		names[e.Name]++
		if e.Mode != ModeRegular|0o755 || e.Source == "" {
			t.Errorf("%s: mode %#o source %q, want a regular executable copied from the host", e.Name, e.Mode, e.Source)
		}
	}
	if names["bin/bridge"] != 1 {
		t.Errorf("bin/bridge installed %d times, want once: %v", names["bin/bridge"], names)
	}
	for _, so := range needed {
		found := false
		for n, c := range names {
			if strings.HasSuffix(n, "/"+so) {
				found = true
				if c != 1 {
					t.Errorf("%s installed %d times", n, c)
				}
			}
		}
		if !found {
			t.Errorf("library %s that bridge needs is not installed: %v", so, names)
		}
	}
	if len(needed) > 0 && names["lib64/ld-linux-x86-64.so.2"] != 1 {
		t.Errorf("a dynamic bridge without its interpreter: %v", names)
	}
}

func TestHostToolsMissing(t *testing.T) {
	_, err := HostTools("uiod-no-such-tool")
	if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "uiod-no-such-tool") {
		t.Errorf("error %v, want ErrMissing naming the tool", err)
	}
}
