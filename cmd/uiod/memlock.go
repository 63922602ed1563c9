package main

import (
	"fmt"
	"io"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/nic"
)

// writeMemlock says, for a configuration with ports that pin DMA memory, how much
// RLIMIT_MEMLOCK `uiod run` needs without CAP_IPC_LOCK, in the units of ulimit -l (KiB)
// and in bytes for systemd's LimitMEMLOCK= and a container's memlock rlimit.
func writeMemlock(w io.Writer, name string, cfg *config.Config, root string) {
	if root == "" {
		root = "/"
	}
	page := config.LocalHostAt(root).DMAPage()
	bytes, ports := cfg.PinnedDMA(page)
	if ports == 0 {
		return
	}
	kib := (bytes + 1023) / 1024
	fmt.Fprintf(w, "%s: %d PCI ports pin %d KiB of DMA memory (%d KiB pages): without CAP_IPC_LOCK, RLIMIT_MEMLOCK must allow at least that (ulimit -l %d, LimitMEMLOCK=%d)\n",
		name, ports, kib, page/1024, kib, bytes)
}

// writeMTUs says, for each NIC port with other than the standard MTU, the frames it
// carries and the DMA memory its buffers and rings then take.
func writeMTUs(w io.Writer, name string, cfg *config.Config, root string) {
	if root == "" {
		root = "/"
	}
	page := config.LocalHostAt(root).DMAPage()
	for _, p := range cfg.Ports {
		mtu := p.PortMTU()
		if mtu == nic.DefaultMTU || p.Driver == config.DriverVhostUser || p.Driver == config.DriverAFXDP {
			continue
		}
		fmt.Fprintf(w, "%s: port %s: mtu %d: frames of up to %d bytes (%d with a VLAN tag) in %d-byte buffers, %.1f MiB of DMA memory\n",
			name, p.Name, mtu, mtu+nic.EthHeader, nic.MaxFrame(mtu), nic.BufSizeFor(mtu), float64(p.DMANeed(page))/(1<<20))
	}
}
