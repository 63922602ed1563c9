package qemutest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// qemuThreads describes what QEMU's threads (named with -name debug-threads=on: "CPU 0/TCG"
// and so on) are doing, for the error of a guest the watchdog killed: each thread's state,
// where it sleeps in the kernel and how much CPU it took over the second before. It tells
// a guest whose vCPUs sleep, halted, waiting for an interrupt that never comes (every vCPU
// thread asleep on a futex) from a QEMU that spins or blocked in its main loop.
func qemuThreads(pid int) string {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	before := make([]int64, len(tasks))
	for i, d := range tasks {
		before[i], _ = taskStat(d)
	}
	time.Sleep(time.Second)
	var b strings.Builder
	for i, d := range tasks {
		after, state := taskStat(d)
		comm, _ := os.ReadFile(filepath.Join(d, "comm"))
		wchan, _ := os.ReadFile(filepath.Join(d, "wchan"))
		fmt.Fprintf(&b, "\n  %s: %s in %s, %d%% CPU", strings.TrimSpace(string(comm)), state,
			strings.TrimSpace(string(wchan)), after-before[i]) // ticks are 1/100 s
	}
	return b.String()
}

// taskStat returns a thread's user+system CPU time in clock ticks and its state letter.
func taskStat(dir string) (int64, string) {
	data, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return 0, "gone"
	}
	// The name in parentheses can hold spaces; the fields after it are fixed.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, "?"
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, "?"
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return utime + stime, f[0]
}
