package config

// PinnedDMA returns the DMA memory the configuration's vfio-pci and uio_pci_generic ports
// pin when they open, with allocations rounded up to page bytes (Host.DMAPage), and how
// many such ports there are. Under vfio-pci (type1 or iommufd) pinned pages count against
// the process's RLIMIT_MEMLOCK unless it has CAP_IPC_LOCK: this is the least the limit
// must be (ulimit -l, systemd's LimitMEMLOCK=, a container's memlock rlimit).
func (c *Config) PinnedDMA(page uint64) (bytes uint64, ports int) {
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.pins() && p.sized() {
			bytes += p.DMANeed(page)
			ports++
		}
	}
	return bytes, ports
}
