package daemon

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/config"
)

// staleQuiesceOptional reports whether quiescing a port of a dead daemon may be skipped
// after err: for a vfio-pci port the sysfs writes were refused for want of privileges
// (an unprivileged daemon, a read-only /sys in a container). Nothing is lost: when the
// dead process's last descriptor of a vfio-pci device closed, the kernel turned bus
// mastering off and reset the function itself. A uio_pci_generic port gets no such
// release, so its quiesce stays mandatory.
func staleQuiesceOptional(p config.Port, err error) bool {
	if p.Driver != config.DriverVFIO {
		return false
	}
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EROFS) || errors.Is(err, unix.EPERM)
}
