package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunStateDirNotOwn: `uiod run` and `uiod config validate` refuse a state_dir that
// is not uiod's own with exit 2 and a message naming it, and leave it as it was.
func TestRunStateDirNotOwn(t *testing.T) {
	const cfg = "metrics: {listen: \"\"}\nforward: {mode: reflect}\npoll: {mode: busy}\n" +
		"ports:\n  - {name: p0, driver: sim, wire: \"pair:w0\"}\nstate_dir: "
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "srv/shared"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "srv/shared/notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		dir, want string
	}{
		{"/", `state_dir = "/": is the root directory`},
		{"/etc", `state_dir = "/etc": is a top-level system directory`},
		{"/home/alice", `state_dir = "/home/alice": is a home directory`},
		{"/srv/shared", `holds "notes.txt", which is not uiod's`},
	} {
		for _, cmd := range [][]string{{"run", "--config", "-"}, {"config", "validate", "-"}} {
			t.Run(tt.dir+" "+cmd[0], func(t *testing.T) {
				_, stderr, code := runUIOD(t, cfg+tt.dir+"\n", nil, append([]string{"--root", root}, cmd...)...)
				if code != exitUsage || !strings.Contains(stderr, tt.want) {
					t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, stderr, tt.want)
				}
			})
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "srv/shared/notes.txt")); err != nil || string(b) != "mine\n" {
		t.Errorf("notes.txt after the refusals: %q, %v", b, err)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 1 {
		t.Errorf("the root holds %d entries, want only srv", len(ents))
	}
}
