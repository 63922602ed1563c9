package igb

import (
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/intel/ring"
)

// What the 82576 takes as this driver programs it, for callers that check a
// configuration before opening a port.
const (
	// MaxQueues is the 82576's number of RX and TX queues.
	MaxQueues = 16
	// MaxRing is the largest ring in descriptors (Linux IGB_MAX_RXD/TXD, DPDK
	// IGB_MAX_RING_DESC); rings are powers of two from nic.MinRing.
	MaxRing = 4096
	// ITRUnit is the unit of the EITR interval field (bits 14:2), and MaxITR the longest
	// interval it holds. The driver uses it at every link speed, as Linux's igb_write_itr
	// does (at 10/100 Mb/s Linux only picks a fixed 4000 interrupts/s target, converted
	// with the same unit).
	ITRUnit = time.Microsecond
	MaxITR  = i82576.EitrIntervalMask >> i82576.EitrIntervalShift * ITRUnit
	// DescSize is the bytes of one advanced RX or TX descriptor.
	DescSize = ring.DescSize
	// MaxMTU is the largest MTU, Linux igb's max_mtu: its largest standard jumbo
	// frame, 9216 bytes, less header, FCS and room for two VLAN tags.
	MaxMTU = 9216 - nic.EthHeader - 4 - 2*nic.VLANTag
)

// limits is what Open checks a configuration against.
var limits = nic.Limits{Queues: MaxQueues, Ring: MaxRing, MaxMTU: MaxMTU}

// facts is what the registry tells callers that check a configuration.
var facts = nic.Facts{Chip: "82576 (igb)", Limits: limits, ITRUnit: ITRUnit, MaxITR: MaxITR, DescSize: DescSize}
