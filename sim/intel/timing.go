package intel

import (
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/wire"
)

// Timing is how long the operations the hardware completes on its own take. A driver
// must poll for each (with a bounded wait) before it goes on. Zero fields take the
// defaults; a negative field makes the operation complete at once.
type Timing struct {
	// Reset is how long CTRL.RST reads 1 after it was written (or after a function-level
	// reset). Register writes during it are dropped and are protocol faults.
	Reset time.Duration
	// EEPROM is when, after a reset, the EEPROM auto-read is done: EEC.AUTO_RD (82576
	// EECD) reads 1 and the station address appears in RAL0/RAH0.
	EEPROM time.Duration
	// DMAInit is when, after a reset, the 82599's RDRXCTL.DMAIDONE reads 1.
	DMAInit time.Duration
	// QueueEnable is how long after an RXDCTL/TXDCTL write the queue's ENABLE bit reads
	// back the new value: only then is the queue on (or off).
	QueueEnable time.Duration
	// Autoneg is how long auto-negotiation takes after a reset, an AN restart or plugging
	// in a wire before the link comes up.
	Autoneg time.Duration
	// SecRxReady is how long the 82599's security RX path takes to drain after
	// SECRXCTRL.RX_DIS is set: SECRXSTAT.SECRX_RDY reads 1 only then.
	SecRxReady time.Duration
}

// Default timings: short, so that tests stay fast, but never zero, so that a driver that
// does not poll fails.
const (
	DefaultResetTime       = 50 * time.Microsecond
	DefaultEEPROMTime      = 100 * time.Microsecond
	DefaultDMAInitTime     = 150 * time.Microsecond
	DefaultQueueEnableTime = 20 * time.Microsecond
	DefaultAutonegTime     = 2 * time.Millisecond
	DefaultSecRxReadyTime  = 20 * time.Microsecond
)

func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// withDefaults fills in the zero fields.
func (t Timing) withDefaults() Timing {
	return Timing{
		Reset:       orDefault(t.Reset, DefaultResetTime),
		EEPROM:      orDefault(t.EEPROM, DefaultEEPROMTime),
		DMAInit:     orDefault(t.DMAInit, DefaultDMAInitTime),
		QueueEnable: orDefault(t.QueueEnable, DefaultQueueEnableTime),
		Autoneg:     orDefault(t.Autoneg, DefaultAutonegTime),
		SecRxReady:  orDefault(t.SecRxReady, DefaultSecRxReadyTime),
	}
}

// asyncOps are operations under way that complete at a wire time. They are completed
// lazily: before every register access and frame arrival (settle), so a driver polling a
// register sees the change once its time has come. Guarded by the device lock.
type asyncOps struct {
	pending  bool  // anything below is under way
	resetEnd int64 // CTRL.RST reads 1 until then (0: not in reset)
	eeprom   int64 // EEPROM auto-read done at (0: done)
	dmaInit  int64 // DMA init done at (0: done)
	rxPend   uint64
	txPend   uint64
	rxWant   uint64 // enable state the pending toggles go to
	txWant   uint64
	rxAt     [64]int64
	txAt     [64]int64
}

// startReset begins the reset's timed phases. Only a software reset (CTRL.RST) takes
// time: at power-on the device is ready long before a driver binds, and a function-level
// reset returns only once it is done (the kernel waits for it). The lock is held.
func (m *Model) startReset(timed bool) {
	a := &m.async
	now := wire.Now()
	*a = asyncOps{}
	t := m.timing
	if !timed {
		t = Timing{}
	}
	a.resetEnd = at(now, t.Reset)
	a.eeprom = at(now, t.EEPROM)
	if m.cfg.Flavor == X82599 {
		a.dmaInit = at(now, t.DMAInit)
	}
	a.pending = true
	m.settleAt(now)
}

// at is the wire time d after now, or 0 (already done) for d = 0.
func at(now int64, d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return now + int64(d)
}

// settle completes what is due. The lock is held.
func (m *Model) settle() {
	if m.async.pending {
		m.settleAt(wire.Now())
	}
}

func (m *Model) settleAt(now int64) {
	a := &m.async
	due := func(t *int64) bool {
		if *t != 0 && now >= *t {
			*t = 0
			return true
		}
		return false
	}
	due(&a.resetEnd)
	if due(&a.eeprom) || (a.eeprom == 0 && !m.eepromDone) {
		m.loadEEPROM()
	}
	if due(&a.dmaInit) || (a.dmaInit == 0 && m.cfg.Flavor == X82599 && !m.dmaDone) {
		m.dmaDone = true
		m.set(i82599.RDRXCTL, m.get(i82599.RDRXCTL)|i82599.RdrxctlDMAIDone)
	}
	for p := a.rxPend; p != 0; p &= p - 1 {
		q := trailing(p)
		if now >= a.rxAt[q] {
			a.rxPend &^= 1 << q
			m.applyQueue(false, q, a.rxWant&(1<<q) != 0)
		}
	}
	for p := a.txPend; p != 0; p &= p - 1 {
		q := trailing(p)
		if now >= a.txAt[q] {
			a.txPend &^= 1 << q
			m.applyQueue(true, q, a.txWant&(1<<q) != 0)
		}
	}
	a.pending = a.resetEnd != 0 || a.eeprom != 0 || a.dmaInit != 0 || a.rxPend != 0 || a.txPend != 0
}

// inReset reports whether CTRL.RST still reads 1. The lock is held.
func (m *Model) inReset() bool { return m.async.resetEnd != 0 }

// loadEEPROM ends the EEPROM auto-read: the station address goes into RAL0/RAH0 and
// the auto-read-done bit reads 1. The lock is held.
func (m *Model) loadEEPROM() {
	m.eepromDone = true
	mac := m.cfg.MAC
	m.set(m.l.ral(0), uint32(mac[0])|uint32(mac[1])<<8|uint32(mac[2])<<16|uint32(mac[3])<<24)
	m.set(m.l.rah(0), uint32(mac[4])|uint32(mac[5])<<8|intelnic.RahAV)
	off := uint32(i82599.EEC)
	if m.cfg.Flavor == X82576 {
		off = i82576.EECD
	}
	m.set(off, m.get(off)|intelnic.EecAutoRead)
}

// beforeAccess is the device's BeforeAccess hook: it completes what is due and drops
// writes while the device is in reset.
func (m *Model) beforeAccess(off uint32, write bool, v uint32) bool {
	m.settle()
	if write && m.inReset() {
		m.protocol("register 0x%05x written (0x%x) while CTRL.RST still reads 1 (dropped)", off, v)
		return false
	}
	return true
}
