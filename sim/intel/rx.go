package intel

import (
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/sim"
)

// minFrame is the shortest Ethernet frame, without FCS.
const minFrame = 60

// place results.
type placeResult int

const (
	placed placeResult = iota
	noDescriptor
	dropped
)

// receive is the wire handler: a frame arrives at the port.
func (m *Model) receive(frame []byte, ts int64) {
	d := m.dev
	d.Lock()
	defer d.Unlock()
	m.st.WireIn++
	if m.closing || d.Closed() || !m.link.up {
		m.st.RxOff++
		return
	}
	m.settle()
	if m.inj.drop.any > 0 && m.inj.drop.take(AnyQueue) {
		m.st.Dropped++
		return
	}
	if !m.rxEnabled() {
		m.st.RxOff++
		return
	}
	if len(frame) < minFrame {
		if !m.cfg.Quirks.PadRunts {
			m.add(intelnic.RUC, 1)
			m.st.BadFrames++
			return
		}
		m.runt = append(append(m.runt[:0], frame...), make([]byte, minFrame-len(frame))...)
		frame = m.runt
	}
	if len(frame)+intelnic.FCSLen > m.maxFrame(frame) {
		m.add(intelnic.ROC, 1)
		m.st.BadFrames++
		return
	}
	if !m.accept(frame) {
		m.st.Filtered++
		return
	}
	if !d.BusMaster() {
		m.st.NoBusMaster++
		return
	}
	stamped := m.stampRx(frame, ts)
	q, hash, typ := m.selectQueue(frame)
	typ |= stamped
	if m.inj.drop.take(q) {
		m.st.Dropped++
		return
	}
	if m.inj.stall || m.fifo.n > 0 {
		m.enqueue(q, hash, typ, frame)
		return
	}
	if m.place(q, frame, hash, typ) == noDescriptor {
		if m.rxl[q].srrctl&m.l.srrctlDropEn != 0 {
			m.queueDrop(q)
			return
		}
		m.enqueue(q, hash, typ, frame)
	}
}

// missed counts a frame lost for lack of packet-buffer space (MPC).
func (m *Model) missed() {
	m.add(m.l.mpc, 1)
	m.st.Missed++
}

// queueDrop counts a frame queue q dropped for lack of descriptors with SRRCTL.DROP_EN:
// per queue, in QPRDC (82599, queues 0-15) or RQDPC (82576), not in MPC.
func (m *Model) queueDrop(q int) {
	m.st.QueueDrops++
	if m.cfg.Flavor == X82576 {
		m.add(m.l.rxq(q, i82576.QRQDPC), 1)
	} else if q < 16 {
		m.add(i82599.QPRDC(q), 1)
	}
}

// maxFrame is the longest frame accepted, FCS included. The 82599's limit (MAXFRS with
// HLREG0.JUMBOEN, 1518 without) counts no VLAN tag: a tagged frame may be 4 bytes longer
// (82599 datasheet, MAXFRS.MFS). The 82576's is QEMU's: RLPML with RCTL.LPE, which
// counts everything, else 1522.
func (m *Model) maxFrame(frame []byte) int {
	if m.cfg.Flavor == X82576 {
		if m.get(i82576.RCTL)&i82576.RctlLPE != 0 {
			return int(m.get(i82576.RLPML) & 0x3FFF)
		}
		return 1522
	}
	tag := 0
	if len(frame) >= 14 && (frame[12] == 0x81 && frame[13] == 0x00 || frame[12] == 0x88 && frame[13] == 0xa8) {
		tag = 4
	}
	if m.get(i82599.HLREG0)&i82599.Hlreg0JumboEn != 0 {
		return int(m.get(i82599.MAXFRS)>>16) + tag
	}
	return intelnic.StdFrameFCS + tag
}

// accept applies the address filters: exact unicast (RAL/RAH), multicast table, broadcast
// and the promiscuous bits.
func (m *Model) accept(frame []byte) bool {
	var upe, mpe, bam, mfe bool
	var mo uint32
	if m.cfg.Flavor == X82576 {
		r := m.get(i82576.RCTL)
		upe, mpe, bam, mfe, mo = r&i82576.RctlUPE != 0, r&i82576.RctlMPE != 0, r&i82576.RctlBAM != 0, true, r>>12&3
	} else {
		f := m.get(i82599.FCTRL)
		upe, mpe, bam = f&i82599.FctrlUPE != 0, f&i82599.FctrlMPE != 0, f&i82599.FctrlBAM != 0
		mc := m.get(i82599.MCSTCTRL)
		mfe, mo = mc&4 != 0, mc&3
	}
	dst := frame[:6]
	if dst[0]&1 == 0 {
		if upe {
			return true
		}
		lo := binary.LittleEndian.Uint32(dst)
		hi := uint32(binary.LittleEndian.Uint16(dst[4:])) | intelnic.RahAV
		for i := 0; i < m.l.rarEntries; i++ {
			if m.get(m.l.rah(i))&(intelnic.RahAV|0xFFFF) == hi && m.get(m.l.ral(i)) == lo {
				return true
			}
		}
		return false
	}
	if dst[0] == 0xFF && dst[1] == 0xFF && dst[2] == 0xFF && dst[3] == 0xFF && dst[4] == 0xFF && dst[5] == 0xFF {
		return bam || mpe
	}
	if mpe {
		return true
	}
	if !mfe {
		return false
	}
	// Multicast table: 12 bits of the address selected by MO.
	w := uint32(dst[4]) | uint32(dst[5])<<8
	var v uint32
	switch mo {
	case 0:
		v = w >> 4 & 0xFFF
	case 1:
		v = w >> 3 & 0xFFF
	case 2:
		v = w >> 2 & 0xFFF
	case 3:
		v = w & 0xFFF
	}
	return m.get(intelnic.MTA+4*(v>>5))&(1<<(v&31)) != 0
}

// selectQueue picks the RX queue: RSS when enabled (hash → RETA), else queue 0.
func (m *Model) selectQueue(frame []byte) (q int, hash, typ uint32) {
	mrqc := m.get(m.l.mrqc)
	rss := mrqc&0xF == 1
	if m.cfg.Flavor == X82576 {
		rss = mrqc&3 == 2
	}
	if !rss || m.cfg.Quirks.RSSNeedsPCSD && m.get(intelnic.RXCSUM)&intelnic.RxcsumPCSD == 0 {
		return 0, 0, intelnic.RSSTypeNone
	}
	var key [40]byte
	for i := 0; i < 10; i++ {
		binary.LittleEndian.PutUint32(key[4*i:], m.get(m.l.rssrk+4*uint32(i)))
	}
	if m.cfg.Quirks.RSSIPv6TCPEx {
		mrqc &^= intelnic.MrqcIPv6TCP
		if mrqc&i82576.MrqcIPv6TCPEx != 0 {
			mrqc |= intelnic.MrqcIPv6TCP
		}
	}
	hash, typ = rssHash(frame, mrqc, key[:], m.rssBuf[:])
	if typ == intelnic.RSSTypeNone {
		return 0, 0, intelnic.RSSTypeNone
	}
	idx := hash & 0x7F
	e := m.get(m.l.reta+4*(idx/4)) >> (8 * (idx % 4)) & 0xFF
	q = int(e & 0xF)
	if m.get(intelnic.RXCSUM)&intelnic.RxcsumPCSD == 0 {
		hash = 0 // the field holds the fragment checksum instead
	}
	return q, hash, typ
}

// badDMAAddr is where injected DMA faults point: never mapped.
const badDMAAddr = 0xdead_0000_0000

// place writes frame into queue q's ring: as many descriptors as the buffer size needs,
// each written back with DD stored last, then RDH advances and the queue's cause rises.
func (m *Model) place(q int, frame []byte, hash, typ uint32) placeResult {
	l, d := m.l, m.dev
	if q >= l.queues || !m.rxl[q].on {
		m.st.RxOff++
		return dropped
	}
	lt := &m.rxl[q]
	n := lt.n
	h, t := m.get(l.rxq(q, intelnic.QH)), m.get(l.rxq(q, intelnic.QT))
	if n == 0 || n%8 != 0 || h >= n || t >= n {
		m.protocol("rx queue %d: ring of %d descriptors with head %d, tail %d", q, n, h, t)
		m.st.RxOff++
		return dropped
	}
	typ, tsBit := splitTS(typ)
	srr := lt.srrctl
	bsize := int(srr&0x7F) * 1024
	if m.cfg.Flavor == X82599 {
		bsize = int(srr&0x1F) * 1024
	}
	if bsize == 0 || srr&intelnic.SrrctlDescTypeMask != intelnic.SrrctlDescAdvOneBuf {
		m.protocol("rx queue %d: SRRCTL 0x%08x: need advanced one-buffer descriptors and a buffer size", q, srr)
		m.st.RxOff++
		return dropped
	}
	data := frame
	if !m.crcStrip() {
		m.rxScratch = append(append(m.rxScratch[:0], frame...), 0, 0, 0, 0)
		binary.LittleEndian.PutUint32(m.rxScratch[len(frame):], crc32.ChecksumIEEE(frame))
		data = m.rxScratch
	}
	need := uint32((len(data) + bsize - 1) / bsize)
	if (t-h+n)%n < need {
		return noDescriptor
	}
	base := lt.base
	if need > 1 {
		// Translate every descriptor and buffer of the frame before writing any back: a
		// fault at a later one must not leave earlier ones done behind an unmoved RDH.
		for i, off := uint32(0), 0; off < len(data); i, off = i+1, off+bsize {
			desc, err := d.DMAAt(base+16*uint64((h+i)%n), 16, "rx descriptor")
			if err != nil {
				return m.dmaFailed(err)
			}
			addr := binary.LittleEndian.Uint64(desc)
			if _, err := d.DMAAt(addr, min(bsize, len(data)-off), "rx buffer"); err != nil {
				return m.dmaFailed(err)
			}
		}
	}
	for off := 0; off < len(data); off += bsize {
		desc, err := d.DMAAt(base+16*uint64(h), 16, "rx descriptor")
		if err != nil {
			return m.dmaFailed(err)
		}
		addr := binary.LittleEndian.Uint64(desc)
		if m.inj.badDMA.take(q) {
			addr = badDMAAddr
		}
		chunk := data[off:min(off+bsize, len(data))]
		buf, err := d.DMAAt(addr, len(chunk), "rx buffer")
		if err != nil {
			return m.dmaFailed(err)
		}
		copy(buf, chunk)
		status := uint32(intelnic.RxStatusDD)
		length := uint32(len(chunk))
		if off+bsize >= len(data) {
			status |= intelnic.RxStatusEOP | tsBit
		}
		if m.inj.oversize.take(q) {
			length = uint32(min(bsize+512, 0xFFFF))
		}
		binary.LittleEndian.PutUint32(desc[0:], typ)
		binary.LittleEndian.PutUint32(desc[4:], hash)
		binary.LittleEndian.PutUint32(desc[12:], length)
		sim.StoreUint32(desc[8:], status) // DD last
		h = (h + 1) % n
	}
	m.set(l.rxq(q, intelnic.QH), h)
	m.st.RxFrames++
	m.rxQueued[q]++
	m.st.RxBytes += uint64(len(data))
	m.countFrame(false, q, len(data))
	m.ic.raiseQueue(q, false)
	return placed
}

// dmaFailed accounts for a failed DMA while receiving.
func (m *Model) dmaFailed(err error) placeResult {
	if errors.Is(err, sim.ErrNoBusMaster) {
		m.st.NoBusMaster++
	} else {
		m.st.DMAFaults++
	}
	return dropped
}
