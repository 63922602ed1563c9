package igb

import (
	"net"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/intel"
	"github.com/uiod/uiod/pci"
)

// MAC implements nic.Port: the address read from the receive address register at open,
// or the one SetMAC set since.
func (p *Port) MAC() net.HardwareAddr { return p.core.MAC() }

// NumRxQueues implements nic.Port.
func (p *Port) NumRxQueues() int { return p.core.NumRxQueues() }

// NumTxQueues implements nic.Port.
func (p *Port) NumTxQueues() int { return p.core.NumTxQueues() }

// RxBurst implements nic.Port.
func (p *Port) RxBurst(q int, bufs []*nic.Buf) int { return p.core.RxBurst(q, bufs) }

// TxBurst implements nic.Port. A queue found hung (no write-back for twice
// Config.TxTimeout) is reset first and then takes the burst.
func (p *Port) TxBurst(q int, bufs []*nic.Buf) int { return p.core.TxBurst(q, bufs) }

// RxVector implements nic.Port.
func (p *Port) RxVector(q int) *irq.Vector { return p.core.RxVector(q) }

// EnableRxInterrupt implements nic.Port.
func (p *Port) EnableRxInterrupt(q int) { p.core.EnableRxInterrupt(q) }

// DisableRxInterrupt implements nic.Port.
func (p *Port) DisableRxInterrupt(q int) { p.core.DisableRxInterrupt(q) }

// Link implements nic.Port: link down once the port is closed.
func (p *Port) Link() nic.Link { return p.core.Link() }

// Stats implements nic.Port: the NIC's counters plus the frames the driver refused.
func (p *Port) Stats() nic.Stats { return p.core.Stats() }

// Close implements nic.Port: interrupts masked, queues disabled, the rings' buffers back
// in their pools, then the device closed (bus mastering off, DMA memory freed).
func (p *Port) Close() error { return p.core.Close() }

// IRQKind is the interrupt mode in use; ok is false when the port has no interrupts.
func (p *Port) IRQKind() (kind irq.Kind, ok bool) { return p.core.IRQKind() }

// LinkChanges is the number of link-status-change interrupts the port handled.
func (p *Port) LinkChanges() uint64 { return p.core.LinkChanges() }

// Device is the PCI function the port drives.
func (p *Port) Device() pci.Device { return p.core.Device() }

// Pools are the port's buffer pools: each RX queue's mempool, then the copy pool of each
// TX queue that has one (frames from a pool the device cannot reach are copied into it).
func (p *Port) Pools() []*nic.Mempool { return intel.Pools(&p.core) }

// SetMAC implements nic.RxFilter: mac goes into receive address 0 (RAL/RAH, valid),
// where the station address is read from at open; MAC returns it from then on. It may
// be called while the queues run.
func (p *Port) SetMAC(mac net.HardwareAddr) error { return intel.SetMAC(&p.core, mac) }

// SetMulticast implements nic.RxFilter: the groups are hashed into the 4096-bit
// multicast table (filter type 0: address bits 47:36), so any number of them is taken,
// and a frame to a group sharing those 12 bits with one of them passes too. all turns
// the multicast promiscuous bit on (every multicast frame), as a promiscuous port has it
// anyway. It may be called while the queues run.
func (p *Port) SetMulticast(groups []net.HardwareAddr, all bool) error {
	return intel.SetMulticast(&p.core, groups, all)
}

// EnableTimesync implements nic.Timesync: the IEEE 1588 unit on, PTPv2 layer-2 Sync
// frames stamped on receive and frames marked with Buf.MarkTimestamp on transmit.
func (p *Port) EnableTimesync() error { return p.ts.EnableTimesync() }

// DeviceTime implements nic.Timesync: the device clock (SYSTIM) in ns, continuous across
// its wraps.
func (p *Port) DeviceTime() (int64, error) { return p.ts.DeviceTime() }

// TxTimestamp implements nic.Timesync: the transmit time of the last marked frame.
func (p *Port) TxTimestamp() (int64, error) { return p.ts.TxTimestamp() }

// RxTimestamp implements nic.Timesync: the receive time and PTP sequence id of the last
// stamped frame.
func (p *Port) RxTimestamp() (nic.RxStamp, error) { return p.ts.RxTimestamp() }

// intelCore is the shared Intel port inside p, for the conformance harness.
func (p *Port) intelCore() *intel.Port { return &p.core }
