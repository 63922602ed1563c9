package tuntap

import (
	"errors"
	"fmt"
	"testing"

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
