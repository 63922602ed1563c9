//go:build !linux

package config

// affinityCPUs returns nil: the affinity mask is only read on Linux.
func affinityCPUs() []int { return nil }

// memlockLimit returns 0 (no limit known): the limit is only read on Linux.
func memlockLimit() uint64 { return 0 }
