package daemon

import (
	"fmt"
	"io/fs"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/config"
)

// TestStaleQuiesceOptional: a dead run's vfio-pci port may go unquiesced when the sysfs
// write is refused for want of privileges (the kernel's release did it); a uio port, and
// any other error, still stop the start.
func TestStaleQuiesceOptional(t *testing.T) {
	perm := &os.PathError{Op: "open", Path: "/sys/bus/pci/devices/0000:03:10.0/config", Err: unix.EACCES}
	tests := []struct {
		driver string
		err    error
		want   bool
	}{
		{config.DriverVFIO, fmt.Errorf("quiesce: %w", perm), true},
		{config.DriverVFIO, fmt.Errorf("quiesce: %w", unix.EROFS), true},
		{config.DriverVFIO, fmt.Errorf("quiesce: %w", unix.EPERM), true},
		{config.DriverVFIO, fmt.Errorf("quiesce: %w", fs.ErrNotExist), false},
		{config.DriverVFIO, fmt.Errorf("the function does not respond"), false},
		{config.DriverUIO, fmt.Errorf("quiesce: %w", perm), false},
		{config.DriverUIO, fmt.Errorf("quiesce: %w", unix.EROFS), false},
	}
	for _, tt := range tests {
		if got := staleQuiesceOptional(config.Port{Name: "p", Driver: tt.driver}, tt.err); got != tt.want {
			t.Errorf("%s, %v: %v, want %v", tt.driver, tt.err, got, tt.want)
		}
	}
}
