//go:build !linux

package main

import "golang.org/x/sys/unix"

// ioctlGetTermios is the ioctl that reads a terminal's attributes (the BSDs' and macOS's).
const ioctlGetTermios = unix.TIOCGETA
