package igbvf

import (
	"fmt"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/intelnic"
)

// vfVectorMask is the interrupt register bits of the VF's three vectors.
const vfVectorMask = 1<<i82576.VFVectors - 1

// vfBAR is the VF's BAR0: its own registers, and the engine's for queue 0, the
// interrupt registers and the status.
type vfBAR struct{ m *Model }

// Len implements pci.Region.
func (b vfBAR) Len() int { return i82576.VFBAR0Size }

func (b vfBAR) check(off uint32) {
	if off%4 != 0 || off >= i82576.VFBAR0Size {
		panic(fmt.Sprintf("sim igbvf: access at 0x%05x outside the VF's BAR0 or unaligned", off))
	}
}

// queueReg maps a register of the VF's queue 0 ring blocks to the engine's.
func queueReg(off uint32) (uint32, bool) {
	for _, q := range []struct{ vf, pf uint32 }{{i82576.VFRXBase, i82576.RXBase}, {i82576.VFTXBase, i82576.TXBase}} {
		if off >= q.vf && off < q.vf+intelnic.QStride {
			return q.pf + off - q.vf, true
		}
	}
	return 0, false
}

// vectorReg reports whether off is one of the interrupt registers a VF shares the
// layout of with the PF (bits per vector).
func vectorReg(off uint32) bool {
	switch off {
	case i82576.VTEICS, i82576.VTEIMS, i82576.VTEIMC, i82576.VTEIAC, i82576.VTEIAM, i82576.VTEICR:
		return true
	}
	return false
}

func eitrReg(off uint32) bool {
	return off >= i82576.VTEITR0 && off < i82576.VTEITR0+4*i82576.VFVectors
}

func mbxWord(off uint32) (int, bool) {
	if off >= i82576.VFMbxMem && off < i82576.VFMbxMem+4*i82576.VFMbxWords {
		return int(off-i82576.VFMbxMem) / 4, true
	}
	return 0, false
}

// Read32 implements pci.Region.
func (b vfBAR) Read32(off uint32) uint32 {
	b.check(off)
	m := b.m
	if pf, ok := queueReg(off); ok {
		return m.bar.Read32(pf)
	}
	if i, ok := mbxWord(off); ok {
		return m.readMem(i)
	}
	switch {
	case vectorReg(off):
		return m.bar.Read32(off) & vfVectorMask
	case eitrReg(off), off == i82576.VTIVAR0:
		return m.bar.Read32(off)
	}
	switch off {
	case i82576.VTCTRL:
		return 0 // RST clears itself
	case i82576.VTSTATUS:
		return m.status()
	case i82576.VTIVARMisc:
		return m.bar.Read32(i82576.IVARMisc) >> 8 & 0xFF
	case i82576.V2PMailbox:
		return m.readMailbox()
	case i82576.VFGPRC, i82576.VFGPTC, i82576.VFGORC, i82576.VFGOTC, i82576.VFMPRC:
		return m.readStat(off)
	}
	m.fault("read of 0x%05x: not a VF register the model has", off)
	return 0
}

// Write32 implements pci.Region.
func (b vfBAR) Write32(off, v uint32) {
	b.check(off)
	m := b.m
	if pf, ok := queueReg(off); ok {
		m.bar.Write32(pf, v)
		return
	}
	if i, ok := mbxWord(off); ok {
		m.writeMem(i, v)
		return
	}
	switch {
	case vectorReg(off):
		m.bar.Write32(off, v&vfVectorMask)
		return
	case eitrReg(off):
		m.bar.Write32(off, v)
		return
	}
	switch off {
	case i82576.VTCTRL:
		if v&intelnic.CtrlReset != 0 {
			m.vfReset()
		}
	case i82576.VTIVAR0:
		for e := 0; e < 4; e++ {
			entry := v >> (8 * e) & 0xFF
			if entry&intelnic.IvarValid == 0 {
				continue
			}
			if e >= 2 {
				m.fault("VTIVAR0 maps queue 1 (%#x): only queue pair 0 is routed to a vector", v)
			}
			if entry&0x7F >= i82576.VFVectors {
				m.fault("VTIVAR0 entry %d names vector %d: a VF has %d", e, entry&0x7F, i82576.VFVectors)
			}
		}
		m.bar.Write32(i82576.IVAR0, v&0x8383)
	case i82576.VTIVARMisc:
		entry := v & 0xFF
		if entry&intelnic.IvarValid != 0 && entry&0x7F >= i82576.VFVectors {
			m.fault("VTIVAR_MISC names vector %d: a VF has %d", entry&0x7F, i82576.VFVectors)
		}
		m.bar.Write32(i82576.IVARMisc, (entry&0x83)<<8)
	case i82576.V2PMailbox:
		m.writeMailbox(v)
	case i82576.VTSTATUS, i82576.VFGPRC, i82576.VFGPTC, i82576.VFGORC, i82576.VFGOTC, i82576.VFMPRC:
		m.fault("write of %#x to read-only VF register 0x%05x", v, off)
	default:
		m.fault("write of %#x to 0x%05x: not a VF register the model has", v, off)
	}
}

// Read64 implements pci.Region as two 32-bit reads, low first.
func (b vfBAR) Read64(off uint32) uint64 {
	return uint64(b.Read32(off)) | uint64(b.Read32(off+4))<<32
}

// Write64 implements pci.Region as two 32-bit writes, low first.
func (b vfBAR) Write64(off uint32, v uint64) {
	b.Write32(off, uint32(v))
	b.Write32(off+4, uint32(v>>32))
}

// status is VTSTATUS: the PF port's STATUS, link down while the PF is in reset.
func (m *Model) status() uint32 {
	v := m.bar.Read32(intelnic.STATUS)
	m.mu.Lock()
	down := m.pf.down
	m.mu.Unlock()
	if down {
		v &^= i82576.StatusLU
	}
	return v
}

// vfStats are the VF's statistics registers: they count and wrap at 32 bits and a read
// does not clear them (the engine's, read to clear, are added in at every read).
type vfStats struct{ gprc, gptc, gorc, gotc, mprc uint32 }

// clearStatsLocked sets the VF's statistics registers to zero (a PF reset). m.mu is held.
func (m *Model) clearStatsLocked() {
	m.addEngineStatsLocked()
	m.stat = vfStats{}
}

// addEngineStatsLocked adds the engine's read-to-clear counters to the VF's. m.mu is held.
func (m *Model) addEngineStatsLocked() {
	s, r := &m.stat, m.bar
	s.gprc += r.Read32(intelnic.GPRC)
	s.gptc += r.Read32(intelnic.GPTC)
	s.gorc += r.Read32(intelnic.GORCL)
	r.Read32(intelnic.GORCH)
	s.gotc += r.Read32(intelnic.GOTCL)
	r.Read32(intelnic.GOTCH)
	s.mprc += r.Read32(intelnic.MPRC)
}

func (m *Model) readStat(off uint32) uint32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.addEngineStatsLocked()
	s := &m.stat
	switch off {
	case i82576.VFGPRC:
		return s.gprc
	case i82576.VFGPTC:
		return s.gptc
	case i82576.VFGORC:
		return s.gorc
	case i82576.VFGOTC:
		return s.gotc
	}
	return s.mprc
}
