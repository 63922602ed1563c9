package guest

import (
	"fmt"
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/igb"
)

// filterPhase joins FilterGroup on p (nic.RxFilter), says UIOD-FILTER-READY, and
// receives on RX queue 0 until the host's broadcast marker (at most a minute): of the
// host's frames (FilterDests) exactly the group's, the port's own address's and the
// marker must arrive. It says UIOD-FILTER-DONE got=NAMES.
func filterPhase(t *testing.T, p nic.RxFilter) {
	if err := p.SetMulticast([]net.HardwareAddr{FilterGroup}, false); err != nil {
		t.Fatalf("filter: %v", err)
	}
	fmt.Println("UIOD-FILTER-READY")
	got := map[string]bool{}
	bufs := make([]*nic.Buf, 32)
	deadline := time.Now().Add(time.Minute)
	for !got["marker"] && time.Now().Before(deadline) {
		n := p.RxBurst(0, bufs)
		for _, b := range bufs[:n] {
			if f := b.Bytes(); len(f) > 21 && f[12] == 0x88 && f[13] == 0xb5 && string(f[14:21]) == "filter " {
				name, _, _ := strings.Cut(string(f[21:]), "\x00")
				got[name] = true
			}
			b.Free()
		}
		if n == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	var names []string
	for name := range got {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Printf("UIOD-FILTER-DONE got=%s\n", strings.Join(names, ","))
	if !got["marker"] {
		t.Fatalf("filter: the broadcast marker did not arrive in a minute (got %v; port %+v)", names, p.Stats())
	}
	for _, d := range FilterDests {
		if got[d.Name] != d.Want {
			t.Errorf("filter: frame to %s (%x) received %v, want %v", d.Name, d.Dst, got[d.Name], d.Want)
		}
	}
}

// TestGuestIGBFilter opens NIC 1, QEMU's igb, through vfio-pci without promiscuous mode
// and runs filterPhase on it: QEMU's igb filters multicast by the MTA and RCTL.MO/MPE
// (e1000x_rx_group_filter) as the 82576 does, so the group arrives only through the
// table the driver filled.
func TestGuestIGBFilter(t *testing.T) {
	addr := guestNICsFor(t, "UIOD_GUEST_IGB_FILTER", " -run IGBFilter", 1, "an igb NIC")[0]
	dev := openVFIO(t, addr)
	p, err := igb.Open(dev, nic.Config{RxRing: 128, TxRing: 128, Interrupts: nic.IRQNone, LinkTimeout: 5 * time.Second})
	if err != nil {
		dev.Close()
		t.Fatal(err)
	}
	defer p.Close()
	t.Logf("%s: mac %v, link %+v", addr, p.MAC(), p.Link())
	filterPhase(t, p)
}
