package testutil

import (
	"os"
	"testing"
)

// TAPNetns is Netns for a test that opens TAP interfaces: it skips the test also when
// the kernel offers no /dev/net/tun.
func TAPNetns(t testing.TB, prefix string) string {
	t.Helper()
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("no /dev/net/tun")
	}
	return Netns(t, prefix)
}
