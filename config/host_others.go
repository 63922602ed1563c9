//go:build !linux

package config

// affinityCPUs returns nil: the affinity mask is only read on Linux.
func affinityCPUs() []int { return nil }

// sysinfoAvailable returns 0 (unknown): sysinfo is only read on Linux.
func sysinfoAvailable() uint64 { return 0 }

// memlockLimit returns 0 (no limit known): the limit is only read on Linux.
func memlockLimit() uint64 { return 0 }
