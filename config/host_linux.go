package config

import "golang.org/x/sys/unix"

// affinityCPUs returns the CPUs in the process's affinity mask, or nil.
func affinityCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var cpus []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// sysinfoAvailable returns the free and buffer RAM sysinfo(2) reports in bytes, 0 if it
// fails.
func sysinfoAvailable() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return (uint64(si.Freeram) + uint64(si.Bufferram)) * uint64(si.Unit)
}

// capIPCLock is CAP_IPC_LOCK's bit: with it, locked memory is not limited.
const capIPCLock = 14

// memlockLimit returns RLIMIT_MEMLOCK in bytes, or 0 if it is unlimited or the process
// has CAP_IPC_LOCK.
func memlockLimit() uint64 {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) == nil && data[0].Effective&(1<<capIPCLock) != 0 {
		return 0
	}
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl) != nil || rl.Cur == unix.RLIM_INFINITY {
		return 0
	}
	return rl.Cur
}
