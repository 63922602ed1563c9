package wire

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
)

// TestUnixSocketMode checks that the socket file is mode 0600 under a umask that would
// let everyone in (the test sets umask 0 for its duration; nothing else runs in
// parallel with it in this package).
func TestUnixSocketMode(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	p := filepath.Join(dir, "a")
	listenUnix(t, p, filepath.Join(dir, "b"))
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket file %s is %v, want a socket with mode 0600", p, fi.Mode())
	}
}

// TestUnixSocketGroup checks that ListenUnixGroup hands the socket file to the group,
// mode 0660, whatever the umask. Changing a file's group to one the process is not in
// needs root.
func TestUnixSocketGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another group")
	}
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	const gid = 4242
	dir := t.TempDir()
	p := filepath.Join(dir, "a")
	port, err := ListenUnixGroup(p, filepath.Join(dir, "b"), strconv.Itoa(gid))
	if err != nil {
		t.Fatal(err)
	}
	defer port.Close()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o660 || st.Gid != gid {
		t.Fatalf("socket file %s is %v group %d, want a socket with mode 0660 group %d", p, fi.Mode(), st.Gid, gid)
	}
	if _, err := ListenUnixGroup(filepath.Join(dir, "c"), p, "no-such-group-uiod"); err == nil {
		t.Fatal("ListenUnixGroup accepted an unknown group")
	}
	if _, err := os.Lstat(filepath.Join(dir, "c")); !os.IsNotExist(err) {
		t.Fatalf("a refused ListenUnixGroup left its socket file: %v", err)
	}
}

// TestUnixSocketRefusesPlantedFiles checks that a symlink, a regular file or a FIFO at
// the socket path is refused and left as it was, and that the symlink's target is not
// created or touched.
func TestUnixSocketRefusesPlantedFiles(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	existing := filepath.Join(dir, "existing")
	if err := os.WriteFile(existing, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	plant := map[string]func(p string) error{
		"dangling symlink": func(p string) error { return os.Symlink(target, p) },
		"symlink to file":  func(p string) error { return os.Symlink(existing, p) },
		"regular file":     func(p string) error { return os.WriteFile(p, []byte("x"), 0o600) },
		"fifo":             func(p string) error { return syscall.Mkfifo(p, 0o600) },
	}
	for name, mk := range plant {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, "sock-"+filepath.Base(t.Name()))
			if err := mk(p); err != nil {
				t.Fatal(err)
			}
			before, _ := os.Lstat(p)
			if port, err := ListenUnix(p, filepath.Join(dir, "peer")); err == nil {
				port.Close()
				t.Fatalf("ListenUnix bound over a %s", name)
			}
			after, err := os.Lstat(p)
			if err != nil || !os.SameFile(before, after) || after.Mode() != before.Mode() {
				t.Fatalf("the planted %s was changed: %v", name, err)
			}
			if _, err := os.Lstat(target); !os.IsNotExist(err) {
				t.Fatalf("symlink target created: %v", err)
			}
			if b, err := os.ReadFile(existing); err != nil || string(b) != "keep" {
				t.Fatalf("symlink target changed: %q, %v", b, err)
			}
		})
	}
}

// TestUnixCloseKeepsReplacement checks that Close removes only its own socket file, not
// a file that took its place meanwhile.
func TestUnixCloseKeepsReplacement(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a")
	port, err := ListenUnix(p, filepath.Join(dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("other"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := port.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "other" {
		t.Fatalf("Close removed or changed the file that replaced its socket: %q, %v", b, err)
	}
}

// TestUnixRemoteSymlink checks that Send does not follow a symlink planted at the remote
// path: the socket it points to receives nothing.
func TestUnixRemoteSymlink(t *testing.T) {
	dir := t.TempDir()
	victimPath := filepath.Join(dir, "victim")
	victim, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: victimPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	remote := filepath.Join(dir, "remote")
	if err := os.Symlink(victimPath, remote); err != nil {
		t.Fatal(err)
	}
	p := listenUnix(t, filepath.Join(dir, "local"), remote)
	testutil.ErrorContains(t, p.Send(make([]byte, 60)), remote, "symlink")
	victim.SetReadDeadline(time.Now())
	if n, _, err := victim.ReadFrom(make([]byte, 100)); err == nil {
		t.Fatalf("the symlink's target received %d bytes", n)
	}
}

// TestUnixPeerRestart checks that a port connected to its peer reaches the peer's
// successor at the same path, and that only the peer can send to a connected port.
func TestUnixPeerRestart(t *testing.T) {
	dir := t.TempDir()
	pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	a := listenUnix(t, pa, pb)
	if err := a.Send(make([]byte, 60)); err == nil {
		t.Fatal("Send succeeded with nobody bound at the remote path")
	}
	got := make(chan int, 16)
	b1, err := ListenUnix(pb, pa)
	if err != nil {
		t.Fatal(err)
	}
	b1.SetHandler(func(f []byte, _ int64) { got <- 1 })
	if err := a.Send(make([]byte, 60)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("frame not delivered to the peer")
	}
	stranger, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: pa, Net: "unixgram"})
	if err == nil {
		_, err = stranger.Write(make([]byte, 60))
		stranger.Close()
	}
	if !errors.Is(err, syscall.EPERM) {
		t.Fatalf("a stranger sending to a connected port: %v, want EPERM", err)
	}
	b1.Close()
	b2 := listenUnix(t, pb, pa)
	got2 := make(chan int, 16)
	b2.SetHandler(func(f []byte, _ int64) { got2 <- 1 })
	if !testutil.WaitFor(5*time.Second, func() bool {
		a.Send(make([]byte, 60)) // the first may fail: the old peer is gone
		select {
		case <-got2:
			return true
		default:
			return false
		}
	}) {
		t.Fatal("no frame reached the restarted peer")
	}
}
