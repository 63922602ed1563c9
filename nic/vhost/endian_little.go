//go:build !(armbe || arm64be || m68k || mips || mips64 || mips64p32 || ppc || ppc64 || s390 || s390x || shbe || sparc || sparc64)

package vhost

// littleEndian says the host's byte order is the rings' (VERSION_1 rings are little-endian):
// the ring words loaded and stored whole need no swap. The compiler folds the swaps away.
const littleEndian = true
