package igbvf

import (
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/intel"
	"github.com/uiod/uiod/pci"
)

// NumRxQueues implements nic.Port.
func (p *Port) NumRxQueues() int { return p.core.NumRxQueues() }

// NumTxQueues implements nic.Port.
func (p *Port) NumTxQueues() int { return p.core.NumTxQueues() }

// RxVector implements nic.Port.
func (p *Port) RxVector(q int) *irq.Vector { return p.core.RxVector(q) }

// Link implements nic.Port: link down while the port re-initialises and once it is
// closed.
func (p *Port) Link() nic.Link { return p.core.Link() }

// IRQKind is the interrupt mode in use; ok is false when the port has no interrupts.
func (p *Port) IRQKind() (kind irq.Kind, ok bool) { return p.core.IRQKind() }

// LinkChanges is the number of link changes the port handled.
func (p *Port) LinkChanges() uint64 { return p.core.LinkChanges() }

// Device is the PCI function (the VF) the port drives.
func (p *Port) Device() pci.Device { return p.core.Device() }

// Pools are the port's buffer pools: the RX queue's mempool, then the TX queue's copy
// pool.
func (p *Port) Pools() []*nic.Mempool { return intel.Pools(&p.core) }

// intelCore is the shared Intel port inside p, for the conformance harness.
func (p *Port) intelCore() *intel.Port { return &p.core }
