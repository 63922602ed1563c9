package daemon

import (
	"os"
	"strings"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/config"
)

// ReloadSignal makes a running daemon re-read its configuration (Serve).
var ReloadSignal os.Signal = unix.SIGHUP

// Signals are the signals Serve acts on: ReloadSignal and ShutdownSignals. Pass them to
// signal.Notify before Start.
var Signals = append([]os.Signal{ReloadSignal}, ShutdownSignals...)

// Serve runs a started daemon until a shutdown signal arrives on sigs, and returns that
// signal; the caller then stops the daemon (Stop). It tells the service manager that the
// daemon is ready (READY=1: the ports are up and the poll threads run) and, on the way
// out, that it is stopping (STOPPING=1). On ReloadSignal it calls load for the
// configuration and applies it (Reload), between RELOADING=1 and READY=1: a load that
// fails (the file is gone, or does not validate) is logged and ignored, and the daemon
// goes on with what it runs. A nil load means the configuration cannot be read again
// (it came from standard input): reload signals are then logged and ignored.
func (d *Daemon) Serve(sigs <-chan os.Signal, load func() (*config.Config, error)) os.Signal {
	d.notify("READY=1\n" + statusLine(d.readyStatus()))
	for sig := range sigs {
		if sig != ReloadSignal {
			d.notify("STOPPING=1\n" + statusLine("shutting down on "+sig.String()))
			return sig
		}
		d.notify(reloadingState())
		d.reload(load)
		d.notify("READY=1\n" + statusLine(d.readyStatus()))
	}
	return nil
}

// reload is Serve's handling of one reload signal.
func (d *Daemon) reload(load func() (*config.Config, error)) {
	if load == nil {
		d.log.Warn("reload: the configuration was read from standard input and cannot be read again; nothing changed")
		return
	}
	d.log.Info("reload: reading the configuration")
	cfg, err := load()
	if err != nil {
		d.log.Error("reload: configuration refused, keeping the running one", zap.Error(err))
		return
	}
	applied, restart, err := d.Reload(cfg)
	if err != nil {
		d.log.Error("reload: not every change applied", zap.Error(err))
	}
	d.log.Info("reload done", zap.Strings("applied", applied), zap.Strings("need_restart", restart))
}

// readyStatus is the STATUS= text of a running daemon.
func (d *Daemon) readyStatus() string {
	st := d.Status()
	names := make([]string, len(st.Ports))
	for i, p := range st.Ports {
		names[i] = p.Name
	}
	return "running: ports " + strings.Join(names, ", ") + ", poll " + st.Policy.Mode
}

// notify sends state to the service manager, logging a failure (the daemon runs on).
func (d *Daemon) notify(state string) {
	if err := Notify(state); err != nil {
		d.log.Warn("sd_notify", zap.Error(err))
	}
}
