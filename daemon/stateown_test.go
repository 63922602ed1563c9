package daemon

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

// TestStartRefusesForeignStateDir: a daemon handed a configuration whose state_dir holds
// files that are not uiod's (validated or not) refuses to start, naming the directory and
// the file, and neither writes its pid file there nor touches what is there.
func TestStartRefusesForeignStateDir(t *testing.T) {
	for _, name := range []string{"passwd", ".bashrc", "uiod.pid.bak", "0000:01:00.0.json~"} {
		t.Run(name, func(t *testing.T) {
			cfg := simConfig(t, "dforeign", "busy", "")
			foreign := filepath.Join(cfg.StateDir, name)
			if err := os.WriteFile(foreign, []byte("keep\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			d := New(cfg, Options{})
			err := d.Start()
			if err == nil {
				d.Stop()
			}
			testutil.ErrorContains(t, err, "state_dir", cfg.StateDir, name, "not uiod's own")
			if b, err := os.ReadFile(foreign); err != nil || string(b) != "keep\n" {
				t.Errorf("%s after the refusal: %q, %v", foreign, b, err)
			}
			if _, err := os.Stat(filepath.Join(cfg.StateDir, pidFileName)); !os.IsNotExist(err) {
				t.Errorf("pid file written in a foreign state_dir (stat: %v)", err)
			}
		})
	}
}
