// Package ifname checks network interface names: the kernel's rule, narrowed to names a
// shell passes unquoted. Every key that names an interface (a TAP's, an af_xdp port's)
// is checked by it.
package ifname

import (
	"errors"
	"fmt"
)

// Max is the longest interface name the kernel takes (IFNAMSIZ less its NUL).
const Max = 15

// Check accepts interface names the kernel takes and a shell passes unquoted: 1 to
// Max bytes of letters, digits, '-', '_' and '.', not "." or "..", not starting with
// '-'. The kernel's own rule (dev_valid_name) is looser; its '%d' templates, '/', ':'
// and white space are refused here.
func Check(name string) error {
	switch {
	case name == "":
		return errors.New("is empty")
	case len(name) > Max:
		return fmt.Errorf("is %d bytes, longer than the kernel's %d (IFNAMSIZ)", len(name), Max)
	case name == "." || name == "..":
		return fmt.Errorf("%q is not an interface name", name)
	case name[0] == '-':
		return errors.New("must not start with '-'")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("has %q: only letters, digits, '-', '_' and '.' are allowed", c)
		}
	}
	return nil
}
