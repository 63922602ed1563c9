package qemutest

import (
	"os"
	"sync/atomic"
	"time"
)

// The guest's init writes its uptime to ttyS3 every heartbeatEvery, and QEMU appends it to
// heartbeatFile in the VM's directory. A guest whose heartbeat stops has stopped running
// user space at all: its kernel stalled so badly that the RCU could not say so (every
// vCPU lost its timer) or QEMU itself stopped. A hang of the code under test does not
// stop the heartbeat, which a process of its own keeps. watch kills such a guest instead
// of waiting for the test's timeout, and the stall is recorded for one rerun like an RCU
// stall (stall.go).
const (
	heartbeatFile  = "heartbeat.log"
	heartbeatEvery = 5 * time.Second
)

// watchLimits are how long watch lets the heartbeat be silent: before the first beat
// (the kernel's boot, slow under TCG on a loaded host) and between beats.
type watchLimits struct {
	Poll, First, Gap time.Duration
}

// defaultWatch allows 24 missed beats, and four minutes for the boot.
var defaultWatch = watchLimits{Poll: heartbeatEvery, First: 4 * time.Minute, Gap: 2 * time.Minute}

// watch polls the heartbeat file until the guest powers off; when it has not grown within
// the limit it records how long it was silent in vm.silent and kills the guest.
func (vm *VM) watch(path string, l watchLimits) {
	tick := time.NewTicker(l.Poll)
	defer tick.Stop()
	size, last := int64(0), time.Now()
	for {
		select {
		case <-vm.done:
			return
		case <-tick.C:
		}
		var n int64
		if fi, err := os.Stat(path); err == nil {
			n = fi.Size()
		}
		if n != size {
			size, last = n, time.Now()
			continue
		}
		limit := l.First
		if size > 0 {
			limit = l.Gap
		}
		if quiet := time.Since(last); quiet > limit {
			vm.silent.ns.Store(int64(quiet))
			vm.cancel()
			return
		}
	}
}

// silence is what watch found: how long the heartbeat had stopped when it killed the
// guest, zero while it has not.
type silence struct{ ns atomic.Int64 }

func (s *silence) killed() bool         { return s.ns.Load() > 0 }
func (s *silence) quiet() time.Duration { return time.Duration(s.ns.Load()) }
