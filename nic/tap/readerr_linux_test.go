package tap

import (
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"
)

// TestReadErrorBacksOff: a descriptor on which every read fails at once (a TAP deleted
// under the daemon reads EBADFD forever; here the write end of a pipe, EBADF) costs a
// few reads, not one a millisecond, and is logged once. On the old code: 1 ms between
// reads whatever happened, and no log line.
func TestReadErrorBacksOff(t *testing.T) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	cfg := Config{Name: "uiodtest0"}.withDefaults()
	core, logs := observer.New(zap.InfoLevel)
	cfg.Log = zap.New(core)
	p, err := newPort(cfg, os.NewFile(uintptr(fds[1]), "pipe"), testMAC, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// The reader waits 1+2+4+...+512 ms before its first 1 s wait: 11 reads in the first
	// 1.5 s at most however fast or slow the machine (a slow one makes fewer).
	time.Sleep(1500 * time.Millisecond)
	if n := p.Stats().RxErrors; n == 0 || n > 12 {
		t.Errorf("%d failed reads in 1.5 s, want 1 to 12", n)
	}
	ok := false
	for range 100 { // the warning comes with the first 1 s wait, after about 1 s
		for _, e := range logs.All() {
			ok = ok || strings.Contains(e.Message, "reads keep failing")
		}
		if ok {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !ok || logs.Len() != 1 {
		t.Errorf("log %v: want one warning", logs.All())
	}
}
