package dmamem

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/pci/pcihost"
)

// TestOpenPagemapContained: root/proc/self/pagemap is opened only inside the root and
// only if it is a regular file: a symlink out of the root is not followed, and a FIFO in
// its place is refused at once instead of blocking the open.
func TestOpenPagemapContained(t *testing.T) {
	open := func(t *testing.T, root string) error {
		t.Helper()
		done := make(chan error, 1)
		go func() {
			p, err := OpenPagemap(root)
			if p != nil {
				p.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("OpenPagemap blocked for 10s")
			return nil
		}
	}
	t.Run("fifo", func(t *testing.T) {
		root := t.TempDir()
		os.MkdirAll(filepath.Join(root, "proc/self"), 0o755)
		if err := syscall.Mkfifo(filepath.Join(root, pagemapPath), 0o600); err != nil {
			t.Fatal(err)
		}
		testutil.ErrorContains(t, open(t, root), "pagemap", "not a regular file")
	})
	t.Run("symlink out of the root", func(t *testing.T) {
		root, outside := t.TempDir(), t.TempDir()
		os.MkdirAll(filepath.Join(outside, "self"), 0o755)
		os.WriteFile(filepath.Join(outside, "self/pagemap"), make([]byte, 64), 0o644)
		os.Symlink(outside, filepath.Join(root, "proc"))
		testutil.ErrorIs(t, open(t, root), pcihost.ErrOutsideRoot, "pagemap")
	})
	t.Run("regular file inside", func(t *testing.T) {
		root := t.TempDir()
		os.MkdirAll(filepath.Join(root, "proc/self"), 0o755)
		os.WriteFile(filepath.Join(root, pagemapPath), make([]byte, 64), 0o644)
		if err := open(t, root); err != nil {
			t.Errorf("a regular pagemap inside the root: %v", err)
		}
	})
}
