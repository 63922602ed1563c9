package tap

import (
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/internal/tuntap"
)

// Open creates the TAP interface cfg names in the calling thread's network namespace (or
// attaches to an existing persistent TAP of that name), gives it cfg's MAC and MTU,
// brings it up and returns it as a port. An existing interface that is not a TAP, a TAP
// another process holds, or a TUN interface is refused with an error naming it. On error
// the host is as it was. It needs CAP_NET_ADMIN.
func Open(cfg Config) (_ *Port, err error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// Bound to this namespace, for Close too. Route only: a kernel without xfrm_user (a
	// module) refuses a handle of every family.
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("tap %s: netlink: %w", cfg.Name, err)
	}
	d := &netdev{h: h, name: cfg.Name}
	defer func() {
		if err != nil {
			d.h.Close()
		}
	}()
	if err := d.inspect(); err != nil {
		return nil, err
	}
	f, err := attach(cfg.Name)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.Close() // removes an interface TUNSETIFF created
			d.restore()
		}
	}()
	mac, err := d.configure(cfg)
	if err != nil {
		return nil, err
	}
	return newPort(cfg, f, mac, d.release)
}

// Available checks, in the calling thread's network namespace, that Open may take the
// interface name: a valid name, and no interface of that name or a persistent TAP. The
// errors match ErrUnavailable. (A TAP another process holds is only found by Open.)
func Available(name string) error {
	if err := CheckName(name); err != nil {
		return refuse("tap %q: name %v", name, err)
	}
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("tap %s: netlink: %w", name, err)
	}
	defer h.Close()
	return (&netdev{h: h, name: name}).inspect()
}

// netdev is the kernel side of a port's interface: what it was before Open, to give it
// back as it was.
type netdev struct {
	h       *netlink.Handle
	name    string
	existed bool
	index   int
	mac     net.HardwareAddr
	mtu     int
	up      bool
}

// inspect refuses an existing interface of the name that is not a TAP, and records the
// state of an existing TAP.
func (d *netdev) inspect() error {
	l, err := d.h.LinkByName(d.name)
	if errors.As(err, new(netlink.LinkNotFoundError)) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("tap %s: look up interface: %w", d.name, err)
	}
	t, ok := l.(*netlink.Tuntap)
	if !ok {
		return refuse("tap %s: interface %s exists and is a %s, not a TAP", d.name, d.name, l.Type())
	}
	if t.Mode != netlink.TUNTAP_MODE_TAP {
		return refuse("tap %s: interface %s exists and is a TUN (layer 3) interface, not a TAP", d.name, d.name)
	}
	if t.Flags&netlink.TUNTAP_MULTI_QUEUE != 0 {
		return refuse("tap %s: interface %s is a multi-queue TAP; uiod attaches to single-queue ones", d.name, d.name)
	}
	a := l.Attrs()
	d.existed, d.index = true, a.Index
	d.mac = append(net.HardwareAddr(nil), a.HardwareAddr...)
	d.mtu, d.up = a.MTU, a.Flags&net.FlagUp != 0
	return nil
}

// attach opens /dev/net/tun on the interface (TUNSETIFF, IFF_TAP|IFF_NO_PI): it creates a
// non-persistent one, removed when the descriptor closes, or attaches to a persistent one.
func attach(name string) (*os.File, error) {
	f, _, err := tuntap.Open(name)
	switch {
	case errors.Is(err, unix.EBUSY):
		return nil, refuse("tap %s: interface %s is held by another process (%v)", name, name, err)
	case err != nil:
		return nil, fmt.Errorf("tap %s: %w", name, err)
	}
	return f, nil
}

// configure sets the interface's address and MTU and brings it up. It returns the address
// the interface has.
func (d *netdev) configure(cfg Config) (net.HardwareAddr, error) {
	l, err := d.h.LinkByName(d.name)
	if err != nil {
		return nil, fmt.Errorf("tap %s: look up interface: %w", d.name, err)
	}
	if cfg.MAC != nil {
		if err := d.h.LinkSetHardwareAddr(l, cfg.MAC); err != nil {
			return nil, fmt.Errorf("tap %s: set address %s: %w", d.name, cfg.MAC, err)
		}
	}
	if err := d.h.LinkSetMTU(l, cfg.MTU); err != nil {
		return nil, fmt.Errorf("tap %s: set mtu %d: %w", d.name, cfg.MTU, err)
	}
	if err := d.h.LinkSetUp(l); err != nil {
		return nil, fmt.Errorf("tap %s: set up: %w", d.name, err)
	}
	if cfg.MAC != nil {
		return append(net.HardwareAddr(nil), cfg.MAC...), nil
	}
	return append(net.HardwareAddr(nil), l.Attrs().HardwareAddr...), nil
}

// restore gives an interface that existed before Open its address, MTU and state back.
func (d *netdev) restore() error {
	if !d.existed {
		return nil
	}
	l, err := d.h.LinkByIndex(d.index)
	if err != nil {
		return fmt.Errorf("tap %s: look up interface to restore it: %w", d.name, err)
	}
	var errs []error
	if !d.up {
		errs = append(errs, d.h.LinkSetDown(l))
	}
	errs = append(errs, d.h.LinkSetMTU(l, d.mtu), d.h.LinkSetHardwareAddr(l, d.mac))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tap %s: restore: %w", d.name, err)
	}
	return nil
}

// release runs once the port's descriptor is closed: it restores an existing interface
// and checks that one Open created is gone.
func (d *netdev) release() error {
	defer d.h.Close()
	if d.existed {
		return d.restore()
	}
	if _, err := d.h.LinkByName(d.name); err == nil {
		return fmt.Errorf("tap %s: interface still there after its descriptor closed", d.name)
	}
	return nil
}

// detached reports whether err is a TAP descriptor's read after its interface was
// deleted: the kernel detached the descriptor (EBADFD), for good.
func detached(err error) bool { return errors.Is(err, unix.EBADFD) }

// tuntapSetCarrier is TUNSETCARRIER on the port's descriptor.
func tuntapSetCarrier(f *os.File, on bool) error { return tuntap.SetCarrier(f, on) }
