package daemon

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// The TAP follows its port (docs/design.md, "The TAP follows its port"): tapfollow_linux.go
// watches each kernel path's TAP and its port. This file holds what needs no Linux.

// parseDevMcast parses the kernel's list of link-layer multicast addresses
// (/proc/net/dev_mcast: a line per address, "ifindex name users global hexaddr") into
// each interface index's Ethernet multicast addresses, sorted, each once. Addresses that
// are not 6-byte multicast ones (another link layer's, a unicast entry) are left out; a
// line that is not in the kernel's format is an error naming it.
func parseDevMcast(data []byte) (map[int][]net.HardwareAddr, error) {
	out := map[int][]net.HardwareAddr{}
	for n, line := range bytes.Split(data, []byte{'\n'}) {
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 5 {
			return nil, fmt.Errorf("dev_mcast line %d %q: want 5 fields, got %d", n+1, line, len(f))
		}
		idx, err := strconv.Atoi(string(f[0]))
		if err != nil || idx <= 0 {
			return nil, fmt.Errorf("dev_mcast line %d %q: interface index %q", n+1, line, f[0])
		}
		addr := make([]byte, hex.DecodedLen(len(f[4])))
		if _, err := hex.Decode(addr, f[4]); err != nil {
			return nil, fmt.Errorf("dev_mcast line %d %q: address %q: %v", n+1, line, f[4], err)
		}
		if len(addr) != 6 || addr[0]&1 == 0 {
			continue
		}
		out[idx] = append(out[idx], net.HardwareAddr(addr))
	}
	for idx, g := range out {
		slices.SortFunc(g, func(a, b net.HardwareAddr) int { return bytes.Compare(a, b) })
		out[idx] = slices.CompactFunc(g, func(a, b net.HardwareAddr) bool { return bytes.Equal(a, b) })
	}
	return out, nil
}

// sameAddrs reports whether a and b hold the same addresses in the same order.
func sameAddrs(a, b []net.HardwareAddr) bool {
	return slices.EqualFunc(a, b, func(x, y net.HardwareAddr) bool { return bytes.Equal(x, y) })
}

// TAPFollowStatus is what the watcher of a port's TAP saw and did (KernelStatus).
type TAPFollowStatus struct {
	// MTU is the TAP's MTU now; Carrier its carrier (the port's link); Down is set while
	// the TAP is administratively down (frames to it dropped: TxDown).
	MTU     int    `json:"mtu"`
	Carrier bool   `json:"carrier"`
	Down    bool   `json:"down,omitempty"`
	TxDown  uint64 `json:"tx_down"`
	// MTURefused and MACRefused count kernel-side MTU changes above the port's mtu and
	// MAC changes the port's filter could not take, each set back on the TAP.
	MTURefused uint64 `json:"mtu_refused"`
	MACRefused uint64 `json:"mac_refused"`
	// FilterFollows is set when the port's receive filter takes the TAP's MAC and
	// multicast groups (nic.RxFilter); Groups is how many groups it was given and AllMulti
	// whether it takes every multicast frame (kernel.allmulti, or the TAP's allmulticast).
	FilterFollows bool `json:"filter_follows"`
	Groups        int  `json:"multicast_groups"`
	AllMulti      bool `json:"allmulti,omitempty"`
}

var (
	mTAPMTURefused = prometheus.NewDesc("uiod_kernel_tap_mtu_refused_total", "Kernel-side MTU changes on the port's TAP above the port's mtu, set back.", portLabels, nil)
	mTAPMACRefused = prometheus.NewDesc("uiod_kernel_tap_mac_refused_total", "Kernel-side MAC changes on the port's TAP that the port's filter could not take, set back.", portLabels, nil)
	mTAPDownDrops  = prometheus.NewDesc("uiod_kernel_tap_down_drops_total", "Frames for the kernel dropped while the port's TAP was down.", portLabels, nil)
	mTAPCarrier    = prometheus.NewDesc("uiod_kernel_tap_carrier", "1 while the port's TAP has carrier (follows the port's link).", portLabels, nil)
)

// collectTAPFollow is the watcher's part of port's metrics.
func collectTAPFollow(m scrape, f *TAPFollowStatus, port string) {
	m.counter(mTAPMTURefused, float64(f.MTURefused), port)
	m.counter(mTAPMACRefused, float64(f.MACRefused), port)
	m.counter(mTAPDownDrops, float64(f.TxDown), port)
	m.flag(mTAPCarrier, f.Carrier, port)
}
