package virtio

import (
	"time"

	"github.com/uiod/uiod/internal/hw/virtiospec"
)

// injections are pending faults. They are guarded by the device lock.
type injections struct {
	drop, badID, oversize, ahead int
	jump                         uint16
	churn                        bool
	ctrlErr                      int // control commands to answer VIRTIO_NET_ERR
}

// RefuseCtrlNext answers the next n control commands VIRTIO_NET_ERR without running them,
// as a device refuses a command it cannot carry out.
func (m *Model) RefuseCtrlNext(n int) { m.dev.Lock(); m.inj.ctrlErr += n; m.dev.Unlock() }

// DropNext drops the next n frames from the wire before they reach a queue.
func (m *Model) DropNext(n int) { m.dev.Lock(); m.inj.drop += n; m.dev.Unlock() }

// BadIDNext gives the next n received frames a used entry whose id is no descriptor of
// the ring (a bad descriptor index).
func (m *Model) BadIDNext(n int) { m.dev.Lock(); m.inj.badID += n; m.dev.Unlock() }

// OversizeNext gives the next n received frames a used length beyond their buffer.
func (m *Model) OversizeNext(n int) { m.dev.Lock(); m.inj.oversize += n; m.dev.Unlock() }

// UsedAheadNext publishes the used index of the next n received frames without writing
// their used entries: the driver finds whatever the entries held before.
func (m *Model) UsedAheadNext(n int) { m.dev.Lock(); m.inj.ahead += n; m.dev.Unlock() }

// JumpUsedIndex advances the used index by n extra entries when the next frame is
// received, as a device that lost count would: the driver finds an index beyond the
// buffers it posted.
func (m *Model) JumpUsedIndex(n uint16) { m.dev.Lock(); m.inj.jump += n; m.dev.Unlock() }

// InterruptStorm sends n used-buffer notifications for RX queue q regardless of event
// suppression (a notification storm).
func (m *Model) InterruptStorm(q, n int) {
	m.dev.Lock()
	defer m.dev.Unlock()
	for i := 0; i < n; i++ {
		m.interrupt(2 * q)
		m.st.Spurious++
	}
}

// SpuriousInterrupt sends one used-buffer notification for RX queue q without a used
// entry.
func (m *Model) SpuriousInterrupt(q int) { m.InterruptStorm(q, 1) }

// SetLink sets the link state; a change updates the device configuration and sends a
// configuration-change notification.
func (m *Model) SetLink(up bool) {
	m.dev.Lock()
	defer m.dev.Unlock()
	m.setLink(up)
}

// FlapLink takes the link down now and up again after downFor.
func (m *Model) FlapLink(downFor time.Duration) {
	m.dev.Lock()
	defer m.dev.Unlock()
	m.setLink(false)
	if m.flap != nil {
		m.flap.Stop()
	}
	m.flap = time.AfterFunc(downFor, func() { m.SetLink(true) })
}

// Link reports the modelled link state.
func (m *Model) Link() bool {
	m.dev.Lock()
	defer m.dev.Unlock()
	return m.link
}

// setLink changes the link. The lock is held.
func (m *Model) setLink(up bool) {
	if up == m.link {
		return
	}
	m.link = up
	var s uint16
	if up {
		s = virtiospec.NetStatusLinkUp
	}
	m.netcfg[virtiospec.NetCfgStatus], m.netcfg[virtiospec.NetCfgStatus+1] = byte(s), byte(s>>8)
	m.generation++
	m.st.LinkChanges++
	if !m.running() {
		return
	}
	m.configChanged()
}

// ChurnGeneration makes every device-configuration read change config_generation while on,
// as a device whose configuration never settles: a driver's generation-checked read never
// stabilises.
func (m *Model) ChurnGeneration(on bool) { m.dev.Lock(); m.inj.churn = on; m.dev.Unlock() }
