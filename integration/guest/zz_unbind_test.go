package guest

import "testing"

// TestGuestUnbindRestore gives both NICs back to the driver they had before TestGuestBind
// with `uiod unbind --restore`. It runs last (see the package comment).
func TestGuestUnbindRestore(t *testing.T) {
	vfioNIC, uioNIC := guestNICs(t)
	t.Log(mustUIOD(t, "unbind", "--restore", vfioNIC, uioNIC))
	for _, a := range []string{vfioNIC, uioNIC} {
		if d := driverOf(t, a); d != originalDriver {
			t.Errorf("%s is on driver %q after unbind --restore, want %s", a, d, originalDriver)
		}
		if o := overrideOf(t, a); o != "" {
			t.Errorf("%s has driver_override %q after unbind --restore, want none", a, o)
		}
	}
	drivers := devicesJSON(t)
	for _, a := range []string{vfioNIC, uioNIC} {
		if got := drivers[a]; got != originalDriver {
			t.Errorf("uiod devices --json: %s has driver %q, want %s", a, got, originalDriver)
		}
	}
}
