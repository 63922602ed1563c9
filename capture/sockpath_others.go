//go:build !linux

package capture

// shortPath returns path: only Linux reaches a long path through /proc/self/fd.
func shortPath(path string, extra int) (string, func(), error) { return path, func() {}, nil }
