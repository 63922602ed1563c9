//go:build !linux

package guest

import "testing"

// checkLinuxTimestamping needs Linux's ethtool and hwstamp ioctls.
func checkLinuxTimestamping(t *testing.T, _ string) { t.Skip("not Linux") }
