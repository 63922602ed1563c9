package tuntap

import (
	"errors"
	"fmt"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/internal/testutil"
)

// TestOpen opens TAP interfaces in a fresh namespace: a new name is created and named as
// asked, a second open of an interface the first holds fails with EBUSY, and a name the
// kernel cannot take fails with nothing left open.
func TestOpen(t *testing.T) {
	ns := testutil.TAPNetns(t, "uiod-tuntap")
	tests := []struct {
		name    string
		iface   string
		held    bool  // opened once before, and still held
		wantErr error // nil: success
	}{
		{"new", "uiodtt0", false, nil},
		{"held by another descriptor", "uiodtt1", true, unix.EBUSY},
		{"name too long", "uiodtt-much-too-long", false, unix.EINVAL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := testutil.InNetns(ns, func() error {
				if tt.held {
					f, _, err := Open(tt.iface)
					if err != nil {
						return fmt.Errorf("first open: %v", err) // not wrapped: never the error wanted
					}
					defer f.Close()
				}
				f, got, err := Open(tt.iface)
				if err != nil {
					return err
				}
				defer f.Close()
				if got != tt.iface || f.Name() != "tap:"+tt.iface {
					t.Errorf("Open(%q): interface %q, file %q", tt.iface, got, f.Name())
				}
				return nil
			})
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Open(%q) = %v, want %v", tt.iface, err, tt.wantErr)
			}
		})
	}
}

// TestSetCarrier turns a TAP's carrier off and on again: the kernel's view of the link
// (IFF_LOWER_UP, operstate) follows.
func TestSetCarrier(t *testing.T) {
	ns := testutil.TAPNetns(t, "uiod-carrier")
	err := testutil.InNetns(ns, func() error {
		f, name, err := Open("uiodcar0")
		if err != nil {
			return err
		}
		defer f.Close()
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return err
		}
		defer h.Close()
		l, err := h.LinkByName(name)
		if err != nil {
			return err
		}
		if err := h.LinkSetUp(l); err != nil {
			return err
		}
		lowerUp := func() (bool, error) {
			l, err := h.LinkByName(name)
			if err != nil {
				return false, err
			}
			return l.Attrs().RawFlags&unix.IFF_LOWER_UP != 0, nil
		}
		for _, on := range []bool{false, true, false} {
			if err := SetCarrier(f, on); err != nil {
				return err
			}
			if got, err := lowerUp(); err != nil {
				return err
			} else if got != on {
				return fmt.Errorf("after SetCarrier(%v) the TAP's IFF_LOWER_UP is %v", on, got)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
