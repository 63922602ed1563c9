package tuntap

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Open attaches a descriptor to the TAP interface name with IFF_TAP|IFF_NO_PI (frames
// carry no packet-information header), creating a non-persistent interface, removed when
// the descriptor closes, if none of that name exists. It returns the descriptor as a
// non-blocking file named "tap:" and the interface's name, and that name as the kernel
// has it. An interface another process holds fails with unix.EBUSY (errors.Is); nothing
// stays open on error. It needs CAP_NET_ADMIN.
func Open(name string) (*os.File, string, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, "", err
	}
	ifr.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, "", fmt.Errorf("TUNSETIFF: %w", err)
	}
	return os.NewFile(uintptr(fd), "tap:"+ifr.Name()), ifr.Name(), nil
}

// tunSetCarrier is TUNSETCARRIER, _IOW('T', 226, int) (Linux 4.6 and later), which
// x/sys/unix does not name.
const tunSetCarrier = 0x400454e2

// SetCarrier turns the carrier of the TAP f is attached to on or off, as a cable plugged
// in or pulled out would: the kernel's operstate follows (down, NO-CARRIER) and it
// transmits nothing while the carrier is off. A kernel older than 4.6 fails with
// unix.EINVAL or unix.ENOTTY.
func SetCarrier(f *os.File, on bool) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	v := 0
	if on {
		v = 1
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) { ierr = unix.IoctlSetPointerInt(int(fd), tunSetCarrier, v) }); err != nil {
		return err
	}
	if ierr != nil {
		return fmt.Errorf("TUNSETCARRIER: %w", ierr)
	}
	return nil
}
