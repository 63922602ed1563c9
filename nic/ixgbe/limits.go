package ixgbe

import (
	"time"

	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/intel/ring"
)

// What the 82599 takes as this driver programs it, for callers that check a
// configuration before opening a port.
const (
	// MaxQueues is the number of RX and TX queues the driver uses per direction (SRRCTL
	// has 16 at 0x2100; one MSI-X vector per RX queue, whose causes are EICR 15:0).
	MaxQueues = 16
	// MaxRing is the largest ring in descriptors (Linux IXGBE_MAX_RXD/TXD, DPDK
	// IXGBE_MAX_RING_DESC); rings are powers of two from nic.MinRing.
	MaxRing = 8192
	// ITRUnit is the unit of the EITR interval field (bits 11:3) at 1 and 10 Gb/s, the
	// speeds of every supported 82599 (SFP+, KX4/KX/KR backplane, CX4: none links at
	// 100 Mb/s); MaxITR is the longest interval it holds (Linux IXGBE_MAX_EITR 0xFF8).
	// Linux's ixgbe_write_eitr converts with this unit whatever the link speed.
	ITRUnit = 2048 * time.Nanosecond
	MaxITR  = i82599.EitrIntervalMask >> i82599.EitrIntervalShift * ITRUnit
	// DescSize is the bytes of one advanced RX or TX descriptor.
	DescSize = ring.DescSize
	// MaxMTU is the largest MTU: the 82599's largest frame, 9728 bytes with FCS
	// (MAXFRS, whose limit does not count a VLAN tag), less header and FCS (Linux's
	// ixgbe max_mtu).
	MaxMTU = i82599.MaxFrameFCS - nic.EthHeader - intelnic.FCSLen
)

// limits is what Open checks a configuration against.
var limits = nic.Limits{Queues: MaxQueues, Ring: MaxRing, MaxMTU: MaxMTU}

// facts is what the registry tells callers that check a configuration.
var facts = nic.Facts{Chip: "82599 (ixgbe)", Limits: limits, ITRUnit: ITRUnit, MaxITR: MaxITR, DescSize: DescSize}
