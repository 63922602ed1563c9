//go:build armbe || arm64be || m68k || mips || mips64 || mips64p32 || ppc || ppc64 || s390 || s390x || shbe || sparc || sparc64

package vhost

// littleEndian is false on big-endian hosts: ring words loaded and stored whole are
// byte-swapped, since the rings are little-endian (VERSION_1).
const littleEndian = false
