package guest

import (
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/vishvananda/netlink"
)

// TestGuestToolVFMAC is a tool for the guest scripts, not a test: with UIOD_VF_PF (a PF's
// interface), UIOD_VF_INDEX and UIOD_VF_MAC set, it sets that VF's MAC through the PF
// as "ip link set PF vf N mac MAC" does (busybox's ip has no vf subcommand). It skips
// otherwise.
func TestGuestToolVFMAC(t *testing.T) {
	pf, mac := os.Getenv("UIOD_VF_PF"), os.Getenv("UIOD_VF_MAC")
	if pf == "" || mac == "" {
		t.Skip("UIOD_VF_PF and UIOD_VF_MAC not set: a tool of the igbvf guest script")
	}
	vf, err := strconv.Atoi(os.Getenv("UIOD_VF_INDEX"))
	if err != nil {
		t.Fatalf("UIOD_VF_INDEX: %v", err)
	}
	hw, err := net.ParseMAC(mac)
	if err != nil {
		t.Fatal(err)
	}
	link, err := netlink.LinkByName(pf)
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetVfHardwareAddr(link, vf, hw); err != nil {
		t.Fatalf("set %s vf %d mac %v: %v", pf, vf, hw, err)
	}
	if err := netlink.LinkSetVfSpoofchk(link, vf, false); err != nil {
		t.Logf("set %s vf %d spoofchk off: %v", pf, vf, err)
	}
}
