package virtio

import (
	"encoding/binary"

	"github.com/uiod/uiod/internal/hw/virtiospec"
)

// field sizes of the common configuration, by offset; 64-bit fields are accessed as two
// 32-bit halves.
var commonWidth = map[uint32]uint32{
	virtiospec.ComDevFeatureSel: 4, virtiospec.ComDevFeature: 4, virtiospec.ComDrvFeatureSel: 4, virtiospec.ComDrvFeature: 4,
	virtiospec.ComMSIXConfig: 2, virtiospec.ComNumQueues: 2, virtiospec.ComStatus: 1, virtiospec.ComConfigGen: 1,
	virtiospec.ComQueueSelect: 2, virtiospec.ComQueueSize: 2, virtiospec.ComQueueMSIX: 2, virtiospec.ComQueueEnable: 2, virtiospec.ComQueueNotifyOff: 2,
	virtiospec.ComQueueDesc: 4, virtiospec.ComQueueDesc + 4: 4, virtiospec.ComQueueDriver: 4, virtiospec.ComQueueDriver + 4: 4,
	virtiospec.ComQueueDevice: 4, virtiospec.ComQueueDevice + 4: 4,
}

// commonAccess checks an access's width and ordering; ok false means it is ignored.
func (m *Model) commonAccess(off, size uint32, write bool) bool {
	w, known := commonWidth[off]
	if !known || w != size {
		m.fault("common config: %d-byte access at 0x%x (field width %d)", size, off, w)
		return false
	}
	if off >= virtiospec.ComQueueSelect && m.status&virtiospec.StatusFeaturesOK == 0 {
		m.fault("common config: queue register 0x%x accessed before FEATURES_OK (status 0x%02x)", off, m.status)
		return false
	}
	return true
}

// selected is the queue queue_select names, or nil past the last queue.
func (m *Model) selected() *queue {
	if int(m.queueSel) >= len(m.queues) {
		return nil
	}
	return &m.queues[m.queueSel]
}

// featureWord is the 32-bit word sel of a feature set (0 past the 64 bits modelled).
func featureWord(features uint64, sel uint32) uint32 {
	if sel < 2 {
		return uint32(features >> (32 * sel))
	}
	return 0
}

func (m *Model) readCommon(off, size uint32) uint32 {
	if !m.commonAccess(off, size, false) {
		return 0
	}
	q := m.selected()
	switch off {
	case virtiospec.ComDevFeatureSel:
		return m.devFeatSel
	case virtiospec.ComDevFeature:
		return featureWord(m.offered, m.devFeatSel)
	case virtiospec.ComDrvFeatureSel:
		return m.drvFeatSel
	case virtiospec.ComDrvFeature:
		return featureWord(m.drvFeatures, m.drvFeatSel)
	case virtiospec.ComMSIXConfig:
		return uint32(m.msixConfig)
	case virtiospec.ComNumQueues:
		return uint32(m.numQueues)
	case virtiospec.ComStatus:
		return uint32(m.status)
	case virtiospec.ComConfigGen:
		return uint32(m.generation)
	case virtiospec.ComQueueSelect:
		return uint32(m.queueSel)
	}
	if q == nil {
		return 0
	}
	switch off {
	case virtiospec.ComQueueSize:
		return uint32(q.size)
	case virtiospec.ComQueueMSIX:
		return uint32(q.msix)
	case virtiospec.ComQueueEnable:
		if q.enabled {
			return 1
		}
		return 0
	case virtiospec.ComQueueNotifyOff:
		return uint32(m.queueSel)
	case virtiospec.ComQueueDesc, virtiospec.ComQueueDesc + 4:
		return uint32(q.desc >> (8 * (off - virtiospec.ComQueueDesc)))
	case virtiospec.ComQueueDriver, virtiospec.ComQueueDriver + 4:
		return uint32(q.driver >> (8 * (off - virtiospec.ComQueueDriver)))
	case virtiospec.ComQueueDevice, virtiospec.ComQueueDevice + 4:
		return uint32(q.device >> (8 * (off - virtiospec.ComQueueDevice)))
	}
	return 0
}

func (m *Model) writeCommon(off, size, v uint32) {
	if !m.commonAccess(off, size, true) {
		return
	}
	switch off {
	case virtiospec.ComDevFeatureSel:
		m.devFeatSel = v
		return
	case virtiospec.ComDrvFeatureSel:
		m.drvFeatSel = v
		return
	case virtiospec.ComDrvFeature:
		if m.status&virtiospec.StatusFeaturesOK != 0 || m.status&virtiospec.StatusDriver == 0 {
			m.fault("driver features written in status 0x%02x", m.status)
			return
		}
		if m.drvFeatSel < 2 {
			sh := 32 * m.drvFeatSel
			m.drvFeatures = m.drvFeatures&^(0xffffffff<<sh) | uint64(v)<<sh
		}
		return
	case virtiospec.ComMSIXConfig:
		m.msixConfig = m.vector(uint16(v))
		return
	case virtiospec.ComStatus:
		m.writeStatus(uint8(v))
		return
	case virtiospec.ComQueueSelect:
		m.queueSel = uint16(v)
		return
	case virtiospec.ComDevFeature, virtiospec.ComNumQueues, virtiospec.ComConfigGen, virtiospec.ComQueueNotifyOff:
		m.fault("common config: write 0x%x to read-only field 0x%x", v, off)
		return
	}
	q := m.selected()
	if q == nil {
		m.fault("common config: write to queue %d of %d", m.queueSel, len(m.queues))
		return
	}
	if q.enabled && off != virtiospec.ComQueueMSIX {
		m.fault("common config: queue %d register 0x%x written while enabled", m.queueSel, off)
		return
	}
	switch off {
	case virtiospec.ComQueueSize:
		if v == 0 || v > uint32(m.cfg.QueueSize) || v&(v-1) != 0 {
			m.fault("queue %d: size %d (max %d, a power of two)", m.queueSel, v, m.cfg.QueueSize)
			return
		}
		q.size = uint16(v)
	case virtiospec.ComQueueMSIX:
		q.msix = m.vector(uint16(v))
	case virtiospec.ComQueueEnable:
		if v != 1 {
			m.fault("queue %d: queue_enable written with %d", m.queueSel, v)
			return
		}
		m.enable(q)
	case virtiospec.ComQueueDesc, virtiospec.ComQueueDesc + 4:
		q.desc = set32(q.desc, off-virtiospec.ComQueueDesc, v)
	case virtiospec.ComQueueDriver, virtiospec.ComQueueDriver + 4:
		q.driver = set32(q.driver, off-virtiospec.ComQueueDriver, v)
	case virtiospec.ComQueueDevice, virtiospec.ComQueueDevice + 4:
		q.device = set32(q.device, off-virtiospec.ComQueueDevice, v)
	}
}

func set32(x uint64, half, v uint32) uint64 {
	sh := 8 * half
	return x&^(0xffffffff<<sh) | uint64(v)<<sh
}

// vector is an MSI-X vector number as the device accepts it: one inside the table, or
// noVector.
func (m *Model) vector(v uint16) uint16 {
	if v != virtiospec.NoVector && int(v) >= m.nq+1 {
		return virtiospec.NoVector
	}
	return v
}

// writeStatus handles device_status: 0 resets, other values add bits in the spec's order.
func (m *Model) writeStatus(v uint8) {
	if v == 0 {
		m.reset()
		m.st.Resets++
		return
	}
	old := m.status
	if v&old != old {
		m.fault("device status 0x%02x clears bits of 0x%02x without a reset", v, old)
		return
	}
	add := v &^ old
	switch {
	case add&virtiospec.StatusDriver != 0 && v&virtiospec.StatusAcknowledge == 0,
		add&virtiospec.StatusFeaturesOK != 0 && v&virtiospec.StatusDriver == 0,
		add&virtiospec.StatusDriverOK != 0 && v&virtiospec.StatusFeaturesOK == 0:
		m.fault("device status 0x%02x out of order (was 0x%02x)", v, old)
		return
	}
	if add&virtiospec.StatusFailed != 0 {
		m.st.Failed++
	}
	if add&virtiospec.StatusFeaturesOK != 0 {
		if !m.featuresAcceptable() {
			v &^= virtiospec.StatusFeaturesOK // the driver reads it back and gives up
		}
	}
	if add&virtiospec.StatusDriverOK != 0 {
		for i := range m.queues {
			if q := &m.queues[i]; q.enabled {
				q.eventIdx = m.has(virtiospec.FeatEventIdx)
			}
		}
	}
	m.status = v
}

// featuresAcceptable checks the driver's features at FEATURES_OK: a subset of the offer,
// VERSION_1 (this device has no legacy interface), ACCESS_PLATFORM when offered (the
// device then sits behind the platform's IOMMU), MQ only with CTRL_VQ.
func (m *Model) featuresAcceptable() bool {
	f := m.drvFeatures
	switch {
	case f&^m.offered != 0,
		f&(1<<virtiospec.FeatVersion1) == 0,
		m.offered&(1<<virtiospec.FeatAccessPlat) != 0 && f&(1<<virtiospec.FeatAccessPlat) == 0,
		f&(1<<virtiospec.FeatMQ) != 0 && f&(1<<virtiospec.FeatCtrlVQ) == 0:
		return false
	}
	return true
}

// enable checks and enables the selected queue.
func (m *Model) enable(q *queue) {
	switch {
	case q.desc%16 != 0 || q.driver%2 != 0 || q.device%4 != 0:
		m.fault("queue %d: misaligned rings (desc 0x%x, driver 0x%x, device 0x%x)", m.queueSel, q.desc, q.driver, q.device)
		return
	case q.desc == 0 || q.driver == 0 || q.device == 0:
		m.fault("queue %d: enabled without ring addresses", m.queueSel)
		return
	}
	q.enabled = true
	q.eventIdx = m.has(virtiospec.FeatEventIdx)
}

// initNetConfig fills the device configuration. The lock need not be held (New).
func (m *Model) initNetConfig() {
	copy(m.netcfg[virtiospec.NetCfgMAC:], m.cfg.MAC)
	binary.LittleEndian.PutUint16(m.netcfg[virtiospec.NetCfgStatus:], virtiospec.NetStatusLinkUp)
	binary.LittleEndian.PutUint16(m.netcfg[virtiospec.NetCfgMaxPairs:], uint16(m.cfg.MaxPairs))
	mtu := 1500
	if m.cfg.MTU != 0 {
		mtu = m.cfg.MTU
	}
	binary.LittleEndian.PutUint16(m.netcfg[virtiospec.NetCfgMTU:], uint16(mtu))
	speed := uint32(0xffffffff)
	if m.cfg.SpeedMbps > 0 {
		speed = uint32(m.cfg.SpeedMbps)
	}
	binary.LittleEndian.PutUint32(m.netcfg[virtiospec.NetCfgSpeed:], speed)
	m.netcfg[virtiospec.NetCfgDuplex] = 1
}

// readNetConfig reads the device configuration at its natural widths.
func (m *Model) readNetConfig(off, size uint32) uint32 {
	if off+size > virtiospec.NetCfgLen {
		m.fault("device config: %d-byte read at 0x%x beyond %d bytes", size, off, virtiospec.NetCfgLen)
		return 0
	}
	if m.inj.churn {
		m.generation++
	}
	b := m.netcfg[off : off+size]
	switch size {
	case 1:
		return uint32(b[0])
	case 2:
		return uint32(binary.LittleEndian.Uint16(b))
	}
	return binary.LittleEndian.Uint32(b)
}
