package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/uiod/uiod/nic"
)

// Sizes of the DMA memory a port allocates (package nic): each RX queue has a mempool of
// PoolSize buffers and a descriptor ring, each TX queue a descriptor ring and a copy pool
// of one buffer per descriptor; buffers take nic.BufStride(BufSize), descriptors the
// drivers' DescSize (the Intel advanced descriptors). Every allocation is rounded up to
// the page size backing it: 2 MiB hugepages when the host has hugepages reserved, else
// 4 KiB pages.
const (
	pageSize     = 4 << 10
	hugePageSize = 2 << 20
)

// DMANeed returns the DMA memory the port allocates when it opens, with allocations
// rounded up to page bytes.
func (p *Port) DMANeed(page uint64) uint64 {
	nc := nic.Config{RxQueues: p.RxQueues, TxQueues: p.TxQueues, RxRing: p.RxRing, TxRing: p.TxRing, MTU: p.MTU}.WithDefaults()
	stride := uint64(nic.BufStride(nc.BufSize))
	round := func(n uint64) uint64 { return (n + page - 1) / page * page }
	desc := p.descSize()
	rxq := round(uint64(nc.PoolSize)*stride) + round(uint64(nc.RxRing)*desc)
	txq := round(uint64(nc.TxRing)*desc) + round(uint64(nc.TxRing)*stride)
	return uint64(nc.RxQueues)*rxq + uint64(nc.TxQueues)*txq
}

// pins reports whether the port's DMA memory is pinned host memory (not a sim port's).
func (p *Port) pins() bool { return p.Driver == DriverVFIO || p.Driver == DriverUIO }

// DMAPage is the page size DMA allocations are rounded to on this host.
func (h Host) DMAPage() uint64 {
	if h.HugePages.Total > 0 {
		return hugePageSize
	}
	return pageSize
}

// DMALimit is what memory.dma_limit: auto allows on this host: the smaller of
// RLIMIT_MEMLOCK (unless unlimited or the process has CAP_IPC_LOCK) and the free
// hugepages (when any are reserved: the allocator takes DMA memory from them), with the
// reason; 0 when neither bounds it.
func (h Host) DMALimit() (limit uint64, why string) {
	if h.HugePages.Total > 0 {
		limit, why = h.HugePages.Free*h.HugePages.Size, fmt.Sprintf("%d free %s hugepages", h.HugePages.Free, humanBytes(h.HugePages.Size))
	}
	if h.Memlock > 0 && (limit == 0 && why == "" || h.Memlock < limit) {
		limit, why = h.Memlock, "RLIMIT_MEMLOCK"
	}
	return limit, why
}

// checkDMA refuses a configuration whose pinned ports need more DMA memory than
// memory.dma_limit allows, naming the ports and what each needs.
func (c *Config) checkDMA(errs *fieldErrors, h Host) {
	limit, why := c.Memory.DMALimit.Bytes, "memory.dma_limit"
	if c.Memory.DMALimit.Auto {
		limit, why = h.DMALimit()
		if why == "" {
			return // nothing bounds it
		}
		why = "memory.dma_limit auto: " + why
	}
	type need struct {
		name  string
		bytes uint64
	}
	page := h.DMAPage()
	total, _ := c.PinnedDMA(page)
	if total <= limit {
		return
	}
	var needs []need
	for i := range c.Ports {
		if p := &c.Ports[i]; p.pins() && p.sized() {
			needs = append(needs, need{p.Name, p.DMANeed(page)})
		}
	}
	sort.SliceStable(needs, func(i, j int) bool { return needs[i].bytes > needs[j].bytes })
	parts := make([]string, len(needs))
	for i, n := range needs {
		parts[i] = fmt.Sprintf("%s %s", n.name, humanBytes(n.bytes))
	}
	value := any(c.Memory.DMALimit)
	if c.Memory.DMALimit.Auto {
		value = nil
	}
	errs.add("memory.dma_limit", value, "the ports need %s of DMA memory (%s), more than the %s allowed by %s: fewer queues, smaller rings, reserve hugepages or raise the limit",
		humanBytes(total), strings.Join(parts, ", "), humanBytes(limit), why)
}
