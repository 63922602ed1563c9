package main

import (
	"bytes"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// tsharkFrames reads file with tshark and returns one line per frame: its length and
// the payload's last four bytes (forward's frame index), tab-separated.
func tsharkFrames(t *testing.T, file string, extra ...string) []string {
	t.Helper()
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark is not installed (Debian package tshark)")
	}
	var stderr bytes.Buffer
	cmd := exec.Command(tshark, append([]string{"-r", file, "-T", "fields", "-e", "frame.len", "-e", "data.data"}, extra...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark -r %s: %v\n%s", file, err, stderr.String())
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Split(l, "\t"); len(f) == 2 && len(f[1]) >= 8 {
			lines = append(lines, f[0]+"\t"+f[1][len(f[1])-8:])
		}
	}
	return lines
}

func frameIndex(i int) string {
	return hex.EncodeToString([]byte{byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)})
}

// TestCaptureFileMode: -w creates the file 0600 (it was 0644 under umask 022: every local
// user could read the traffic), 0640 with -g, and an earlier file of ours is made 0600
// too.
func TestCaptureFileMode(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	s := startSimDaemon(t, "capmode")
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.pcapng")
	if err := os.WriteFile(existing, []byte("earlier"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		file string
		args []string
		want os.FileMode
	}{
		{filepath.Join(dir, "new.pcapng"), nil, 0o600},
		{filepath.Join(dir, "group.pcapng"), []string{"-g"}, 0o640},
		{existing, nil, 0o600},
	} {
		c := startCapture(t, s, "a", io.Discard, append([]string{"-w", tt.file}, tt.args...)...)
		s.forward(t, 3)
		if _, err := c.stop(t); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(tt.file)
		if err != nil || fi.Mode().Perm() != tt.want {
			t.Errorf("-w %s %v: mode %v, %v; want %v", filepath.Base(tt.file), tt.args, fi.Mode().Perm(), err, tt.want)
		}
	}
}

// TestCaptureLeavesTargetsAlone: a refused capture touches no file (an earlier capture
// of the same name was truncated and removed, and as root -w /dev/null removed the
// device node), and a target that is not a regular file is refused before the daemon is
// asked.
func TestCaptureLeavesTargetsAlone(t *testing.T) {
	s := startSimDaemon(t, "capkeep")
	dir := t.TempDir()
	earlier := filepath.Join(dir, "earlier.pcapng")
	if err := os.WriteFile(earlier, []byte("an earlier capture"), 0o600); err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(dir, "null")
	if err := syscall.Mknod(node, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Skipf("mknod: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(earlier, link); err != nil {
		t.Fatal(err)
	}
	state := s.stateDir(t)
	for _, tt := range []struct {
		name string
		args []string
		want string
		code int
	}{
		{"refused port, earlier file", []string{"--state-dir", state, "-i", "nope", "-w", earlier}, `port "nope"`, exitUsage},
		{"no daemon, earlier file", []string{"--state-dir", dir, "-i", "a", "-w", earlier}, "connect to the daemon", exitFailure},
		{"refused port, device", []string{"--state-dir", state, "-i", "nope", "-w", node}, "not a regular file (a character device)", exitUsage},
		{"device", []string{"--state-dir", state, "-i", "a", "-w", node, "--duration", "2s"}, "not a regular file (a character device)", exitUsage},
		{"fifo", []string{"--state-dir", state, "-i", "a", "-w", fifo, "--duration", "2s"}, "not a regular file (a named pipe)", exitUsage},
		{"symlink", []string{"--state-dir", state, "-i", "a", "-w", link, "--duration", "2s"}, "a symbolic link", exitUsage},
		{"no directory", []string{"--state-dir", state, "-i", "a", "-w", filepath.Join(dir, "no/x.pcapng"), "--duration", "2s"}, "does not exist", exitUsage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runUIOD(t, "", nil, append([]string{"capture"}, tt.args...)...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q: want %d and %q", code, stderr, tt.code, tt.want)
			}
			if b, err := os.ReadFile(earlier); err != nil || string(b) != "an earlier capture" {
				t.Fatalf("the earlier capture is now %q, %v", b, err)
			}
			if fi, err := os.Lstat(node); err != nil || fi.Mode().Type() != os.ModeDevice|os.ModeCharDevice {
				t.Fatalf("the device node: %v, %v", fi, err)
			}
		})
	}
}

// TestCaptureQueue: --queue 5 on a one-queue port is refused by name (it captured
// nothing, silently).
func TestCaptureQueue(t *testing.T) {
	s := startSimDaemon(t, "capqueue")
	file := filepath.Join(t.TempDir(), "q.pcapng")
	_, stderr, code := runUIOD(t, "", nil, "capture", "--state-dir", s.stateDir(t), "-i", "a", "--queue", "5", "--duration", "2s", "-w", file)
	if code != exitFailure && code != exitUsage || !strings.Contains(stderr, "queue 5: port a has 1 queue each way") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("a refused capture created %s", file)
	}
}

// TestCaptureRingBufferReadByTshark: -b filesize/files writes a set of files, the
// newest three kept, each a complete pcapng tshark reads, together the last frames sent.
func TestCaptureRingBufferReadByTshark(t *testing.T) {
	s := startSimDaemon(t, "capring")
	dir := t.TempDir()
	c := startCapture(t, s, "a", io.Discard, "--direction", "rx", "-w", filepath.Join(dir, "ring.pcapng"), "-b", "filesize:2", "-b", "files:3")
	const n = 100
	s.forward(t, n)
	summary, err := c.stop(t)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "ring_*.pcapng"))
	sort.Strings(files)
	if len(files) != 3 {
		t.Fatalf("%d files %v, want the newest 3 (summary %q)", len(files), files, summary)
	}
	var frames []string
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v", f, fi.Mode(), err)
		}
		got := tsharkFrames(t, f)
		if len(got) == 0 {
			t.Errorf("%s: no frames", f)
		}
		frames = append(frames, got...)
	}
	for i, l := range frames {
		if want := "64\t" + frameIndex(n-len(frames)+i); l != want {
			t.Fatalf("frame %d of the kept files: %q, want %q", i, l, want)
		}
	}
}

// TestCaptureFilterReadByTshark: -f runs a pcap-filter expression on the daemon's side.
func TestCaptureFilterReadByTshark(t *testing.T) {
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Skip("tcpdump is not installed (it compiles -f)")
	}
	s := startSimDaemon(t, "capfilter")
	file := filepath.Join(t.TempDir(), "f.pcapng")
	c := startCapture(t, s, "a", io.Discard, "--direction", "rx", "-f", "ether proto 0x88b5 and ether[60:4] < 10", "-w", file)
	s.forward(t, 30)
	if _, err := c.stop(t); err != nil {
		t.Fatal(err)
	}
	got := tsharkFrames(t, file)
	if len(got) != 10 {
		t.Fatalf("tshark read %d frames, want the 10 the filter accepts: %q", len(got), got)
	}
	for i, l := range got {
		if l != "64\t"+frameIndex(i) {
			t.Errorf("frame %d: %q", i, l)
		}
	}
	_, stderr, code := runUIOD(t, "", nil, "capture", "--state-dir", s.stateDir(t), "-i", "a", "-f", "tcp port", "-w", file)
	if code != exitUsage || !strings.Contains(stderr, `-f "tcp port"`) {
		t.Errorf("a bad filter: exit %d, %q", code, stderr)
	}
}

// TestCapturePcapAndList: -P writes pcap tcpdump reads; -D lists the ports; -q prints no
// summary.
func TestCapturePcapAndList(t *testing.T) {
	s := startSimDaemon(t, "cappcap")
	out, stderr, code := runUIOD(t, "", nil, "capture", "--state-dir", s.stateDir(t), "-D")
	if code != 0 || !strings.Contains(out, "1. a (") || !strings.Contains(out, "2. b (") {
		t.Errorf("-D: exit %d, %q %q", code, out, stderr)
	}
	tcpdump, err := exec.LookPath("tcpdump")
	if err != nil {
		t.Skip("tcpdump is not installed")
	}
	file := filepath.Join(t.TempDir(), "a.pcap")
	c := startCapture(t, s, "a", io.Discard, "-P", "-q", "--direction", "rx", "-w", file)
	s.forward(t, 7)
	summary, err := c.stop(t)
	if err != nil || summary != "" {
		t.Fatalf("-q: %v, summary %q", err, summary)
	}
	b, err := exec.Command(tcpdump, "-n", "-r", file).CombinedOutput()
	if err != nil || strings.Count(string(b), "ethertype Unknown (0x88b5)") != 7 {
		t.Errorf("tcpdump -r: %v\n%s", err, b)
	}
	_, stderr, code = runUIOD(t, "", nil, "capture", "--state-dir", s.stateDir(t), "-i", "a", "-i", "b", "-P", "-w", file)
	if code != exitUsage || !strings.Contains(stderr, "-P: pcap holds one interface") {
		t.Errorf("-P with two ports: exit %d, %q", code, stderr)
	}
}
