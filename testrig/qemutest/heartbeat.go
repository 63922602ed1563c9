package qemutest

import (
	"os"
	"path/filepath"
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
//
// A guest whose kernel reported a stall (one vCPU lost its timer: the RCU says so, and
// the heartbeat may well go on from the other) and whose script has printed nothing for
// the same gap is killed too: the tasks on the stalled vCPU wait for ever, and the test
// would only run into its timeout.
const (
	heartbeatFile  = "heartbeat.log"
	resultFile     = "result.log"
	heartbeatEvery = 5 * time.Second
)

// watchLimits are how long watch lets the heartbeat be silent: before the first beat
// (the kernel's boot, slow under TCG on a loaded host) and between beats; Gap is also how
// long a guest whose kernel stalled may print nothing.
type watchLimits struct {
	Poll, First, Gap time.Duration
}

// defaultWatch allows 24 missed beats, and four minutes for the boot.
var defaultWatch = watchLimits{Poll: heartbeatEvery, First: 4 * time.Minute, Gap: 2 * time.Minute}

// growth follows a file's size: since is when it last changed.
type growth struct {
	path  string
	size  int64
	since time.Time
}

// poll reads the size and returns how long it has not changed.
func (g *growth) poll(now time.Time) time.Duration {
	var n int64
	if fi, err := os.Stat(g.path); err == nil {
		n = fi.Size()
	}
	if n != g.size {
		g.size, g.since = n, now
	}
	return now.Sub(g.since)
}

// watch polls the heartbeat and the script's output (files in dir) until the guest powers
// off; when the heartbeat has not grown within the limit, or the console shows a stall and
// the output has not grown within Gap, it records why in vm.silent and kills the guest.
func (vm *VM) watch(dir string, l watchLimits) {
	tick := time.NewTicker(l.Poll)
	defer tick.Stop()
	start := time.Now()
	beat := growth{path: filepath.Join(dir, heartbeatFile), since: start}
	out := growth{path: filepath.Join(dir, resultFile), since: start}
	for {
		select {
		case <-vm.done:
			return
		case <-tick.C:
		}
		now := time.Now()
		quiet, limit := beat.poll(now), l.First
		if beat.size > 0 {
			limit = l.Gap
		}
		why := int32(0)
		if quiet > limit {
			why = noHeartbeat
		} else if q := out.poll(now); q > l.Gap && stalled(vm.console.String()) {
			why, quiet = stalledQuiet, q
		}
		if why != 0 {
			threads := ""
			if vm.cmd != nil && vm.cmd.Process != nil {
				threads = qemuThreads(vm.cmd.Process.Pid)
			}
			vm.silent.kill(why, quiet, threads)
			vm.cancel()
			return
		}
	}
}

// Why watch killed a guest.
const (
	noHeartbeat  int32 = iota + 1 // the heartbeat stopped
	stalledQuiet                  // the kernel stalled and the script's output stopped
)

// silence is what watch found: why it killed the guest (0 while it has not), how long the
// heartbeat or the output had stopped, and what QEMU's threads were doing (threads.go).
type silence struct {
	why     atomic.Int32
	ns      atomic.Int64
	threads atomic.Pointer[string]
}

func (s *silence) kill(why int32, quiet time.Duration, threads string) {
	s.ns.Store(int64(quiet))
	s.threads.Store(&threads)
	s.why.Store(why)
}

func (s *silence) killed() bool         { return s.why.Load() != 0 }
func (s *silence) quiet() time.Duration { return time.Duration(s.ns.Load()) }

// String says why, for the error of the guest's run.
func (s *silence) String() string {
	q := s.quiet().Round(time.Second)
	if s.why.Load() == stalledQuiet {
		return "its kernel reported a stall (see the console) and the script printed nothing for " + q.String()
	}
	return "no heartbeat from its init for " + q.String() + " (its kernel stalled or QEMU stopped)"
}

// qemu is what QEMU's threads were doing when watch killed the guest, "" if unknown.
func (s *silence) qemu() string {
	if t := s.threads.Load(); t != nil {
		return *t
	}
	return ""
}
