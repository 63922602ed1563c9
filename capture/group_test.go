//go:build linux

package capture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// helperEnv names, in a helper process's environment, the control socket it captures from.
const helperEnv = "UIOD_CAPTURE_TEST_SOCKET"

// helperCount is how many frames a helper captures.
const helperCount = 7

// TestCaptureHelperProcess is not a test: it is the client the group tests run as another
// user (a re-exec of the test binary). It captures helperCount frames of xe1 into fd 3 and
// exits 0, or prints the error and exits 3.
func TestCaptureHelperProcess(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("the group tests' client; runs only in their helper processes")
	}
	out := os.NewFile(3, "capture-out")
	o, err := NewOutput(OutputConfig{Path: "-", Stdout: out})
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		_, err = Capture(ctx, path, Request{Op: "capture", Ports: []string{"xe1"}, Count: helperCount}, o)
		cancel()
	}
	out.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	os.Exit(0)
}

// needRoot skips a test that changes users.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: runs clients as other users and gives files to other groups")
	}
}

// helperBinary copies the test binary where any user may run it (go test's build
// directory is root's alone).
func helperBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := publicDir(t, "uiodcapbin")
	bin := filepath.Join(dir, "capture.test")
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}

// publicDir makes a short temporary directory of mode 0755, removed at the end of the test.
func publicDir(t *testing.T, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// identity is who a helper runs as.
type identity struct {
	uid, gid uint32
	groups   []uint32
	// dacOverride gives the helper CAP_DAC_OVERRIDE, so that the socket's permissions do
	// not stop it and the daemon's own check is what answers.
	dacOverride bool
}

// Test identities: uids and gids no account of this machine is expected to use (the
// kernel needs no entry in /etc/passwd or /etc/group for them).
const (
	testGID   = 61000 // the capture group
	otherGID  = 61009
	memberUID = 61001
)

// runHelper runs the capture client as who against the socket at path. With admitted, it
// waits (bounded) for the capture to attach to xe1 and sends helperCount frames. It returns
// the pcapng stream the helper wrote and its standard error.
func runHelper(t *testing.T, bin, path string, ft *fakeTarget, who identity, admitted bool) ([]byte, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run=^TestCaptureHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	cmd.Dir = "/"
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: who.uid, Gid: who.gid, Groups: who.groups}}
	if who.dacOverride {
		cmd.SysProcAttr.AmbientCaps = []uintptr{unix.CAP_DAC_OVERRIDE}
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		w.Close()
		t.Fatal(err)
	}
	w.Close()
	stream := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r)
		stream <- b
	}()
	if admitted {
		waitMirror(t, ft, 1, true)
		seq := 0
		ft.send(1, 0, 0, 0, helperCount, 80, &seq)
	}
	err = cmd.Wait()
	return <-stream, strings.TrimSpace(stderr.String()), err
}

// listenStat listens on a control socket in a fresh directory others may search, for
// group g (nil: none), closing it at cleanup, and returns it with the socket's stat.
func listenStat(t *testing.T, ft *fakeTarget, g *Group) (*Server, unix.Stat_t) {
	t.Helper()
	s, err := Listen(filepath.Join(publicDir(t, "uiodcap"), SocketName), ft, nil, g)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var st unix.Stat_t
	if err := unix.Stat(s.Path(), &st); err != nil {
		t.Fatal(err)
	}
	return s, st
}

// checkRefused checks that the helper was refused (exit status 3) with an error that
// says every one of want.
func checkRefused(t *testing.T, msg string, err error, want []string) {
	t.Helper()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("helper: %v (%s), want it refused", err, msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("helper's error %q lacks %q", msg, w)
		}
	}
}

// TestServerGroupAccess: with a group, the socket is 0660, owned by the daemon's user and
// the group; a member by primary gid and one by a supplementary group capture; a
// non-member is stopped by the socket's permissions with a message naming the group, and
// one that gets past them (CAP_DAC_OVERRIDE) is refused by the daemon, which names its uid
// and the group.
func TestServerGroupAccess(t *testing.T) {
	needRoot(t)
	bin := helperBinary(t)
	g := &Group{ID: testGID, Name: "uiodtestcap"}
	ft := newFakeTarget(t)
	s, st := listenStat(t, ft, g)
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK || st.Mode&0o7777 != 0o660 || st.Gid != testGID || int(st.Uid) != os.Geteuid() {
		t.Fatalf("control socket mode %#o, uid %d, gid %d: want a socket of mode 0660, uid %d, gid %d", st.Mode, st.Uid, st.Gid, os.Geteuid(), testGID)
	}
	tests := []struct {
		name     string
		who      identity
		admitted bool
		want     []string // in the helper's error
	}{
		{"member by primary gid", identity{uid: memberUID, gid: testGID}, true, nil},
		{"member by a supplementary group", identity{uid: 61002, gid: 61002, groups: []uint32{otherGID, testGID}}, true, nil},
		{"non-member", identity{uid: 61003, gid: 61003, groups: []uint32{otherGID}}, false,
			[]string{"permission denied", "mode 0660, group gid 61000", "you (uid 61003) are not one of them", "usermod -aG 61000 USER"}},
		{"non-member past the permissions", identity{uid: 61004, gid: 61004, groups: []uint32{otherGID}, dacOverride: true}, false,
			[]string{"uid 61004 (pid ", "not in the group uiodtestcap (gid 61000)", "usermod -aG uiodtestcap USER"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, msg, err := runHelper(t, bin, s.Path(), ft, tt.who, tt.admitted)
			if !tt.admitted {
				checkRefused(t, msg, err, tt.want)
				return
			}
			if err != nil {
				t.Fatalf("helper: %v: %s", err, msg)
			}
			pkts, names, _ := readPcapng(t, bytes.NewReader(out))
			if len(pkts) != helperCount || len(names) != 1 || names[0] != "xe1" {
				t.Fatalf("the member's capture has %d packets on %v, want %d on xe1", len(pkts), names, helperCount)
			}
			waitMirror(t, ft, 1, false)
		})
	}
}

// TestServerWithoutGroup: without a group the socket stays 0600 and only root and the
// daemon's user are served: another user is stopped by the permissions, or, past them,
// by the daemon, each with a message that says so.
func TestServerWithoutGroup(t *testing.T) {
	needRoot(t)
	bin := helperBinary(t)
	ft := newFakeTarget(t)
	s, st := listenStat(t, ft, nil)
	if st.Mode&0o7777 != 0o600 || int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid() {
		t.Fatalf("control socket mode %#o, uid %d, gid %d: want 0600 and the daemon's own", st.Mode&0o7777, st.Uid, st.Gid)
	}
	for _, tt := range []struct {
		name string
		who  identity
		want []string
	}{
		{"by the permissions", identity{uid: memberUID, gid: testGID}, []string{"permission denied", "mode 0600: only root and the daemon's user (uid 0)"}},
		{"by the daemon", identity{uid: memberUID, gid: testGID, dacOverride: true}, []string{"uid 61001 (pid ", "only root and the daemon's user (uid 0) may; capture.group"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, msg, err := runHelper(t, bin, s.Path(), ft, tt.who, false)
			checkRefused(t, msg, err, tt.want)
		})
	}
}

// TestListenGroupNeedsASearchableDir: with a group, Listen refuses a state directory the
// group's members could not pass, naming it and its mode, and creates nothing there; a
// directory searchable by others, or by the group when it is the directory's, is fine.
func TestListenGroupNeedsASearchableDir(t *testing.T) {
	needRoot(t)
	g := &Group{ID: testGID}
	for _, tt := range []struct {
		name string
		mode os.FileMode
		gid  int // the directory's group; -1 leaves it
		want string
	}{
		{"0755", 0o755, -1, ""},
		{"0711", 0o711, -1, ""},
		{"0750, the group's", 0o750, testGID, ""},
		{"0700", 0o700, -1, "the state directory %s is mode 0700"},
		{"0750, another group", 0o750, otherGID, "the state directory %s is mode 0750 (owner uid 0, group gid 61009)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := publicDir(t, "uiodcap")
			if err := os.Chown(dir, -1, tt.gid); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tt.mode); err != nil {
				t.Fatal(err)
			}
			s, err := Listen(filepath.Join(dir, SocketName), newFakeTarget(t), nil, g)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				s.Close()
				return
			}
			want := fmt.Sprintf(tt.want, dir)
			if err == nil {
				s.Close()
				t.Fatalf("Listen in a %s directory succeeded, want %q", tt.name, want)
			}
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "capture.group gid 61000") {
				t.Fatalf("Listen = %v, want %q naming the group", err, want)
			}
			if names, _ := os.ReadDir(dir); len(names) != 0 {
				t.Errorf("Listen left %v in the directory", names)
			}
		})
	}
}

// TestPeerGroups reads SO_PEERGROUPS on a socket pair: the groups the kernel recorded for
// this process, which are getgroups(2)'s.
func TestPeerGroups(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	got, err := peerGroups(fds[0])
	if err != nil {
		t.Fatal(err)
	}
	own, err := unix.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	want := make([]uint32, len(own))
	for i, g := range own {
		want[i] = uint32(g)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("SO_PEERGROUPS = %v, getgroups = %v", got, want)
	}
}
