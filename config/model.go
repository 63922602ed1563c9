package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/uiod/uiod/internal/clip"
)

// What a sim port costs beyond its DMA memory, measured on the device models (heap after
// GC with one port open, every NIC model, 1 to 16 queues of 64 to 4096 descriptors: the
// 82599 and 82576 models take 1.035–1.21× DMANeed(4 KiB), virtio-net 0.81–0.85×): the
// model's registers, BARs and state per port, a buffer header per packet buffer, and the
// alignment page the model's IOMMU adds to every allocation.
const (
	modelPortOverhead  = 1 << 20 // 0.76 MiB measured
	modelBufOverhead   = 128     // 72 B measured
	modelAllocOverhead = pageSize
)

// ModelNeed returns the memory a sim port takes when it opens: its DMA memory, which the
// device model's IOMMU allocates as ordinary memory in 4 KiB pages, and the model's own.
func (p *Port) ModelNeed() uint64 {
	bufs := uint64(p.RxQueues)*uint64(2*p.RxRing+p.TxRing) + uint64(p.TxQueues)*uint64(p.TxRing)
	allocs := 2 * uint64(p.RxQueues+p.TxQueues)
	return p.DMANeed(pageSize) + modelPortOverhead + bufs*modelBufOverhead + allocs*modelAllocOverhead
}

// ModelLimit is what memory.model_limit: auto allows on this host: MemAvailable of
// /proc/meminfo (or MemAvailableFrom), with the reason; 0 when it is unknown.
func (h Host) ModelLimit() (limit uint64, why string) {
	switch {
	case h.MemAvailable == 0:
		return 0, ""
	case h.MemAvailableFrom != "":
		return h.MemAvailable, h.MemAvailableFrom
	}
	return h.MemAvailable, "MemAvailable of /proc/meminfo"
}

// maxNamedPorts is how many ports a memory error names, the largest first.
const maxNamedPorts = 8

// checkModel refuses a configuration whose sim ports need more memory than
// memory.model_limit allows, naming the ports and what each needs: without it a model
// port that cannot get its memory is a Go out-of-memory crash in the middle of Start.
func (c *Config) checkModel(errs *fieldErrors, h Host) {
	limit, why := c.Memory.ModelLimit.Bytes, "memory.model_limit"
	if c.Memory.ModelLimit.Auto {
		limit, why = h.ModelLimit()
		if why == "" {
			return // nothing known bounds it
		}
		why = "memory.model_limit auto: " + why
	}
	var needs []portNeed
	var total uint64
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Driver != DriverSim || !p.sized() {
			continue
		}
		n := p.ModelNeed()
		needs = append(needs, portNeed{p.Name, n})
		total += n
	}
	if total <= limit {
		return
	}
	value := any(c.Memory.ModelLimit)
	if c.Memory.ModelLimit.Auto {
		value = nil
	}
	errs.add("memory.model_limit", value, "the sim ports need %s of memory for their device models (%s), more than the %s allowed by %s: fewer ports or queues, smaller rings, or raise the limit",
		humanBytes(total), namePorts(needs), humanBytes(limit), why)
}

// portNeed is the memory one port needs.
type portNeed struct {
	name  string
	bytes uint64
}

// namePorts lists the ports and their needs, the largest first, at most maxNamedPorts of
// them and how many more.
func namePorts(needs []portNeed) string {
	sort.SliceStable(needs, func(i, j int) bool { return needs[i].bytes > needs[j].bytes })
	var parts []string
	for i, n := range needs {
		if i == maxNamedPorts {
			parts = append(parts, fmt.Sprintf("and %d more", len(needs)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s", clip.String(n.name), humanBytes(n.bytes)))
	}
	return strings.Join(parts, ", ")
}

// parseMemAvailable returns the MemAvailable line of /proc/meminfo in bytes, 0 if it
// has none.
func parseMemAvailable(text string) uint64 {
	for line := range strings.SplitSeq(text, "\n") {
		val, ok := strings.CutPrefix(line, "MemAvailable:")
		if !ok {
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return 0
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || n >= 1<<54 {
			return 0
		}
		return n << 10
	}
	return 0
}
