package daemon

import (
	"errors"
	"sync/atomic"

	"github.com/uiod/uiod/nic"
)

// The livePort's nic.Timesync: it forwards to the driver's port while the device is
// present (a driver without a 1588 unit answers nic.ErrNoTimesync), so that the
// dataplane's RX wait works through it, and enables the unit again on a port put in after
// the device came back.

// errAbsent is the Timesync error while the device is away.
var errAbsent = errors.New("device absent")

// liveTimesync is a livePort's 1588 state: whether EnableTimesync was asked for.
type liveTimesync struct{ on atomic.Bool }

// timesync runs f on the driver port's 1588 unit, counted as a call inside it.
func (l *livePort) timesync(f func(nic.Timesync) error) error {
	p := l.enter()
	if p == nil {
		return errAbsent
	}
	defer l.leave()
	ts, err := nic.TimesyncOf(p)
	if err != nil {
		return err
	}
	return f(ts)
}

// EnableTimesync implements nic.Timesync, and asks for it on every port put in later.
func (l *livePort) EnableTimesync() error {
	err := l.timesync(func(ts nic.Timesync) error { return ts.EnableTimesync() })
	l.ts.on.Store(err == nil)
	return err
}

// DeviceTime implements nic.Timesync.
func (l *livePort) DeviceTime() (ns int64, err error) {
	err = l.timesync(func(ts nic.Timesync) (e error) { ns, e = ts.DeviceTime(); return e })
	return ns, err
}

// TxTimestamp implements nic.Timesync.
func (l *livePort) TxTimestamp() (ns int64, err error) {
	err = l.timesync(func(ts nic.Timesync) (e error) { ns, e = ts.TxTimestamp(); return e })
	return ns, err
}

// RxTimestamp implements nic.Timesync.
func (l *livePort) RxTimestamp() (st nic.RxStamp, err error) {
	err = l.timesync(func(ts nic.Timesync) (e error) { st, e = ts.RxTimestamp(); return e })
	return st, err
}

// reenableTimesync enables the 1588 unit of p, a driver port about to be put in, if it
// was on before the device went away.
func (l *livePort) reenableTimesync(p nic.Port) {
	if !l.ts.on.Load() {
		return
	}
	if ts, err := nic.TimesyncOf(p); err == nil {
		ts.EnableTimesync()
	}
}
