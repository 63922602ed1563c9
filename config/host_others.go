//go:build !linux

package config

// affinityCPUs returns nil: the affinity mask is only read on Linux.
func affinityCPUs() []int { return nil }
