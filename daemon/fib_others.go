//go:build !linux

package daemon

import (
	"errors"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/l3fwd"
)

// fibWatcher follows the kernel's routes on Linux only.
type fibWatcher struct{}

func (d *Daemon) startFIB(*l3fwd.App) error {
	if d.cfg.Forward.RoutesFrom == config.RoutesFromKernel {
		return errors.New("forward.routes_from: kernel: rtnetlink is Linux's")
	}
	return nil
}

func (d *Daemon) closeFIB() {}

func (w *fibWatcher) status(*FIBStatus) {}
