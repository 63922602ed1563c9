package daemon

import (
	"errors"
	"net"
	"slices"

	"go.uber.org/zap"

	"github.com/uiod/uiod/nic"
)

// errNoRxFilter is what a live port's SetMAC and SetMulticast return when its driver's
// port has no programmable receive filter (is no nic.RxFilter).
var errNoRxFilter = errors.New("the port's driver cannot program its receive filter (it is no nic.RxFilter)")

// liveFilter is the receive filter a live port's user last set, which a re-opened
// driver's port gets again (put).
type liveFilter struct {
	mac            net.HardwareAddr // nil: never set
	groups         []net.HardwareAddr
	all, groupsSet bool
}

var _ nic.RxFilter = (*livePort)(nil)

// SetMAC sets the driver's port's station address (nic.RxFilter) and keeps it for a
// re-opened device; while the device is absent it is only kept. A driver's port that is
// no nic.RxFilter fails with errNoRxFilter.
func (l *livePort) SetMAC(mac net.HardwareAddr) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.withFilter(func(f nic.RxFilter) error { return f.SetMAC(mac) }); err != nil {
		return err
	}
	l.filter.mac = slices.Clone(mac)
	l.mac = slices.Clone(mac)
	return nil
}

// SetMulticast sets the driver's port's multicast groups (nic.RxFilter) and keeps them
// for a re-opened device; while the device is absent they are only kept. A driver's port
// that is no nic.RxFilter fails with errNoRxFilter.
func (l *livePort) SetMulticast(groups []net.HardwareAddr, all bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.withFilter(func(f nic.RxFilter) error { return f.SetMulticast(groups, all) }); err != nil {
		return err
	}
	l.filter.groups = make([]net.HardwareAddr, len(groups))
	for i, g := range groups {
		l.filter.groups[i] = slices.Clone(g)
	}
	l.filter.all, l.filter.groupsSet = all, true
	return nil
}

// withFilter runs set on the driver's port's filter while the device is present (inside
// enter/leave, mu held by the caller) and does nothing while it is absent; a driver's
// port that is no nic.RxFilter is errNoRxFilter.
func (l *livePort) withFilter(set func(nic.RxFilter) error) error {
	p := l.enter()
	if p == nil {
		return nil
	}
	defer l.leave()
	f, ok := p.(nic.RxFilter)
	if !ok {
		return errNoRxFilter
	}
	return set(f)
}

// refilter gives a re-opened driver's port p the filter last set. Called by put with mu
// held, before p is swapped in.
func (l *livePort) refilter(p nic.Port) {
	if l.filter.mac == nil && !l.filter.groupsSet {
		return
	}
	f, ok := p.(nic.RxFilter)
	if !ok {
		l.log.Warn("re-opened port's driver cannot program its receive filter: the TAP's address and groups are not applied")
		return
	}
	if l.filter.mac != nil {
		if err := f.SetMAC(l.filter.mac); err != nil {
			l.log.Warn("re-opened port: set the TAP's address", zap.Stringer("mac", l.filter.mac), zap.Error(err))
		}
	}
	if l.filter.groupsSet {
		if err := f.SetMulticast(l.filter.groups, l.filter.all); err != nil {
			l.log.Warn("re-opened port: set the TAP's multicast groups", zap.Int("groups", len(l.filter.groups)), zap.Error(err))
		}
	}
}

// rxFilterOf is p's programmable receive filter: p itself when it is a nic.RxFilter and,
// for a live port, only while its driver's port is one (or absent: then what is set is
// kept for the device's return).
func rxFilterOf(p nic.Port) (nic.RxFilter, bool) {
	if l, ok := p.(*livePort); ok {
		if c := l.cur.Load(); c != nil {
			if _, ok := (*c).(nic.RxFilter); !ok {
				return nil, false
			}
		}
		return l, true
	}
	f, ok := p.(nic.RxFilter)
	return f, ok
}
