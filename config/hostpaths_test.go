package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostPathsContained: under a --root, state_dir (from the file or $UIOD_STATE_DIR)
// and unix wire sockets that would resolve outside the root — a ".." above it, a symlink
// out of it, an absolute symlink, a socket path elsewhere — are validation errors naming
// the key; the same paths inside the root, symlinks within it included, are fine.
func TestHostPathsContained(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	mk("run/uiod")
	mk("sock")
	mk("var")
	link("../run", "var/run")                               // inside
	link(outside, "abs")                                    // absolute, out of the root
	link("../"+filepath.Base(outside), "climb")             // relative, climbing out
	link("../../../../../../../../../../../"+outside, "up") // deep climb
	in := filepath.Join(root, "sock")
	const simPort = "forward: {mode: reflect}\nports:\n  - {name: a, driver: sim, wire: \"%s\"}\n"
	port := func(w string) string { return strings.Replace(simPort, "%s", w, 1) }
	pair := port("pair:x")

	tests := []struct {
		name    string
		root    string
		yaml    string
		env     map[string]string
		path    string // the key the error names; "" means valid
		wantMsg string
	}{
		{"state_dir inside", root, pair + "state_dir: /run/uiod\n", nil, "", ""},
		{"state_dir through an inside symlink", root, pair + "state_dir: /var/run/uiod\n", nil, "", ""},
		{"state_dir missing inside", root, pair + "state_dir: /run/new/uiod\n", nil, "", ""},
		{"state_dir dotdot", root, pair + "state_dir: /../../x\n", nil, "state_dir", `".."`},
		{"state_dir dotdot under /", "/", pair + "state_dir: /run/../../x\n", nil, "state_dir", `".."`},
		{"UIOD_STATE_DIR dotdot", root, pair, map[string]string{"UIOD_STATE_DIR": "/../../x"}, "state_dir", "$UIOD_STATE_DIR"},
		{"state_dir absolute symlink", root, pair + "state_dir: /abs/uiod\n", nil, "state_dir", "outside the root"},
		{"state_dir climbing symlink", root, pair + "state_dir: /climb/uiod\n", nil, "state_dir", "outside the root"},
		{"UIOD_STATE_DIR deep symlink", root, pair, map[string]string{"UIOD_STATE_DIR": "/up/uiod"}, "state_dir", "outside the root"},
		{"unix inside", root, port("unix:" + in + "/a.sock," + in + "/b.sock"), nil, "", ""},
		{"unix outside", root, port("unix:" + outside + "/a.sock," + in + "/b.sock"), nil, "ports[0].wire", "outside the root"},
		{"unix remote outside", root, port("unix:" + in + "/a.sock," + outside + "/b.sock"), nil, "ports[0].wire", "outside the root"},
		{"unix dotdot out", root, port("unix:" + in + "/../../x.sock," + in + "/b.sock"), nil, "ports[0].wire", "outside the root"},
		{"unix through a symlink out", root, port("unix:" + root + "/abs/a.sock," + in + "/b.sock"), nil, "ports[0].wire", "outside the root"},
		{"unix anywhere under /", "/", port("unix:" + outside + "/a.sock," + in + "/b.sock"), nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := HostWithCPUs(2)
			l := Loader{Root: tt.root, Host: &h, LookupEnv: func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }}
			_, err := l.Read(strings.NewReader(tt.yaml))
			if tt.path == "" {
				if err != nil {
					t.Fatalf("want valid: %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v, want a *ValidationError on %s", err, tt.path)
			}
			for _, fe := range ve.Errors {
				if fe.Path == tt.path && strings.Contains(fe.Msg, tt.wantMsg) {
					return
				}
			}
			t.Errorf("error %v, want one on %s containing %q", err, tt.path, tt.wantMsg)
		})
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("validation created %d entries outside the root", len(entries))
	}
}

// TestLocalHostAtContained: the hugepages of a --root come from its own /proc/meminfo,
// never from a file a symlink out of the root points at, and a FIFO in its place is not
// waited on.
func TestLocalHostAtContained(t *testing.T) {
	meminfo := "HugePages_Total:      16\nHugePages_Free:       16\nHugepagesize:       2048 kB\n"
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(outside, "proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "proc", "meminfo"), []byte(meminfo), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.Symlink(filepath.Join(outside, "proc"), filepath.Join(root, "proc")); err != nil {
		t.Fatal(err)
	}
	if hp := LocalHostAt(root).HugePages; hp.Total != 0 {
		t.Errorf("hugepages %+v read through a symlink out of the root", hp)
	}
	inside := t.TempDir()
	os.MkdirAll(filepath.Join(inside, "proc"), 0o755)
	os.WriteFile(filepath.Join(inside, "proc", "meminfo"), []byte(meminfo), 0o644)
	if hp := LocalHostAt(inside).HugePages; hp.Total != 16 || hp.Size != 2<<20 {
		t.Errorf("hugepages %+v from the root's own meminfo, want 16 of 2 MiB", hp)
	}
}
