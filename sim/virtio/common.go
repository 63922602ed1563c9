package virtio

import (
	"encoding/binary"
)

// field sizes of the common configuration, by offset; 64-bit fields are accessed as two
// 32-bit halves.
var commonWidth = map[uint32]uint32{
	comDevFeatureSel: 4, comDevFeature: 4, comDrvFeatureSel: 4, comDrvFeature: 4,
	comMSIXConfig: 2, comNumQueues: 2, comStatus: 1, comConfigGen: 1,
	comQueueSelect: 2, comQueueSize: 2, comQueueMSIX: 2, comQueueEnable: 2, comQueueNotifyOff: 2,
	comQueueDesc: 4, comQueueDesc + 4: 4, comQueueDriver: 4, comQueueDriver + 4: 4,
	comQueueDevice: 4, comQueueDevice + 4: 4,
}

// commonAccess checks an access's width and ordering; ok false means it is ignored.
func (m *Model) commonAccess(off, size uint32, write bool) bool {
	w, known := commonWidth[off]
	if !known || w != size {
		m.fault("common config: %d-byte access at 0x%x (field width %d)", size, off, w)
		return false
	}
	if off >= comQueueSelect && m.status&statusFeaturesOK == 0 {
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

func (m *Model) readCommon(off, size uint32) uint32 {
	if !m.commonAccess(off, size, false) {
		return 0
	}
	q := m.selected()
	switch off {
	case comDevFeatureSel:
		return m.devFeatSel
	case comDevFeature:
		if m.devFeatSel < 2 {
			return uint32(m.offered >> (32 * m.devFeatSel))
		}
		return 0
	case comDrvFeatureSel:
		return m.drvFeatSel
	case comDrvFeature:
		if m.drvFeatSel < 2 {
			return uint32(m.drvFeatures >> (32 * m.drvFeatSel))
		}
		return 0
	case comMSIXConfig:
		return uint32(m.msixConfig)
	case comNumQueues:
		return uint32(m.nq)
	case comStatus:
		return uint32(m.status)
	case comConfigGen:
		return uint32(m.generation)
	case comQueueSelect:
		return uint32(m.queueSel)
	}
	if q == nil {
		return 0
	}
	switch off {
	case comQueueSize:
		return uint32(q.size)
	case comQueueMSIX:
		return uint32(q.msix)
	case comQueueEnable:
		if q.enabled {
			return 1
		}
		return 0
	case comQueueNotifyOff:
		return uint32(m.queueSel)
	case comQueueDesc, comQueueDesc + 4:
		return uint32(q.desc >> (8 * (off - comQueueDesc)))
	case comQueueDriver, comQueueDriver + 4:
		return uint32(q.driver >> (8 * (off - comQueueDriver)))
	case comQueueDevice, comQueueDevice + 4:
		return uint32(q.device >> (8 * (off - comQueueDevice)))
	}
	return 0
}

func (m *Model) writeCommon(off, size, v uint32) {
	if !m.commonAccess(off, size, true) {
		return
	}
	switch off {
	case comDevFeatureSel:
		m.devFeatSel = v
		return
	case comDrvFeatureSel:
		m.drvFeatSel = v
		return
	case comDrvFeature:
		if m.status&statusFeaturesOK != 0 || m.status&statusDriver == 0 {
			m.fault("driver features written in status 0x%02x", m.status)
			return
		}
		if m.drvFeatSel < 2 {
			sh := 32 * m.drvFeatSel
			m.drvFeatures = m.drvFeatures&^(0xffffffff<<sh) | uint64(v)<<sh
		}
		return
	case comMSIXConfig:
		m.msixConfig = m.vector(uint16(v))
		return
	case comStatus:
		m.writeStatus(uint8(v))
		return
	case comQueueSelect:
		m.queueSel = uint16(v)
		return
	case comDevFeature, comNumQueues, comConfigGen, comQueueNotifyOff:
		m.fault("common config: write 0x%x to read-only field 0x%x", v, off)
		return
	}
	q := m.selected()
	if q == nil {
		m.fault("common config: write to queue %d of %d", m.queueSel, len(m.queues))
		return
	}
	if q.enabled && off != comQueueMSIX {
		m.fault("common config: queue %d register 0x%x written while enabled", m.queueSel, off)
		return
	}
	switch off {
	case comQueueSize:
		if v == 0 || v > uint32(m.cfg.QueueSize) || v&(v-1) != 0 {
			m.fault("queue %d: size %d (max %d, a power of two)", m.queueSel, v, m.cfg.QueueSize)
			return
		}
		q.size = uint16(v)
	case comQueueMSIX:
		q.msix = m.vector(uint16(v))
	case comQueueEnable:
		if v != 1 {
			m.fault("queue %d: queue_enable written with %d", m.queueSel, v)
			return
		}
		m.enable(q)
	case comQueueDesc, comQueueDesc + 4:
		q.desc = set32(q.desc, off-comQueueDesc, v)
	case comQueueDriver, comQueueDriver + 4:
		q.driver = set32(q.driver, off-comQueueDriver, v)
	case comQueueDevice, comQueueDevice + 4:
		q.device = set32(q.device, off-comQueueDevice, v)
	}
}

func set32(x uint64, half, v uint32) uint64 {
	sh := 8 * half
	return x&^(0xffffffff<<sh) | uint64(v)<<sh
}

// vector is an MSI-X vector number as the device accepts it: one inside the table, or
// noVector.
func (m *Model) vector(v uint16) uint16 {
	if v != noVector && int(v) >= m.nq+1 {
		return noVector
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
	case add&statusDriver != 0 && v&statusAcknowledge == 0,
		add&statusFeaturesOK != 0 && v&statusDriver == 0,
		add&statusDriverOK != 0 && v&statusFeaturesOK == 0:
		m.fault("device status 0x%02x out of order (was 0x%02x)", v, old)
		return
	}
	if add&statusFeaturesOK != 0 {
		if !m.featuresAcceptable() {
			v &^= statusFeaturesOK // the driver reads it back and gives up
		}
	}
	if add&statusDriverOK != 0 {
		for i := range m.queues {
			if q := &m.queues[i]; q.enabled {
				q.eventIdx = m.has(featEventIdx)
			}
		}
	}
	m.status = v
}

// featuresAcceptable checks the driver's features at FEATURES_OK: a subset of the offer,
// VERSION_1 (this device has no legacy interface), ACCESS_PLATFORM (it sits behind an
// IOMMU), MQ only with CTRL_VQ.
func (m *Model) featuresAcceptable() bool {
	f := m.drvFeatures
	switch {
	case f&^m.offered != 0,
		f&(1<<featVersion1) == 0,
		f&(1<<featAccessPlat) == 0,
		f&(1<<featMQ) != 0 && f&(1<<featCtrlVQ) == 0:
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
	q.eventIdx = m.has(featEventIdx)
}

// initNetConfig fills the device configuration. The lock need not be held (New).
func (m *Model) initNetConfig() {
	copy(m.netcfg[netCfgMAC:], m.cfg.MAC)
	binary.LittleEndian.PutUint16(m.netcfg[netCfgStatus:], linkUpBit)
	binary.LittleEndian.PutUint16(m.netcfg[netCfgMaxPairs:], uint16(m.cfg.MaxPairs))
	binary.LittleEndian.PutUint16(m.netcfg[netCfgMTU:], 1500)
	speed := uint32(0xffffffff)
	if m.cfg.SpeedMbps > 0 {
		speed = uint32(m.cfg.SpeedMbps)
	}
	binary.LittleEndian.PutUint32(m.netcfg[netCfgSpeed:], speed)
	m.netcfg[netCfgDuplex] = 1
}

// readNetConfig reads the device configuration at its natural widths.
func (m *Model) readNetConfig(off, size uint32) uint32 {
	if off+size > netCfgLen {
		m.fault("device config: %d-byte read at 0x%x beyond %d bytes", size, off, netCfgLen)
		return 0
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
