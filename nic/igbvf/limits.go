package igbvf

import (
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/intel/ring"
)

// What an 82576 VF takes as this driver programs it, for callers that check a
// configuration before opening a port.
const (
	// MaxQueues is the queue pairs the driver uses: one. A VF has two, but QEMU's igb
	// routes only queue pair 0 to a vector, and RSS across a VF's queues is the PF's
	// to configure.
	MaxQueues = 1
	// MaxRing is the largest ring in descriptors (as the igb driver's).
	MaxRing = 4096
	// ITRUnit is the unit of the VTEITR interval field (bits 14:2), and MaxITR the
	// longest interval it holds.
	ITRUnit = time.Microsecond
	MaxITR  = i82576.EitrIntervalMask >> i82576.EitrIntervalShift * ITRUnit
	// DescSize is the bytes of one advanced RX or TX descriptor.
	DescSize = ring.DescSize
	// MaxFrame is the largest frame, FCS included, the PF lets a VF receive (Linux igb's
	// limit for SET_LPE).
	MaxFrame = i82576.VFMaxFrame
	// MaxMTU is the largest MTU: a frame of it with a VLAN tag and the FCS is MaxFrame.
	MaxMTU = MaxFrame - 4 - nic.EthHeader - nic.VLANTag
)

// limits is what Open checks a configuration against.
var limits = nic.Limits{Queues: MaxQueues, Ring: MaxRing, MaxMTU: MaxMTU}

// facts is what the registry tells callers that check a configuration: a VF has no INTx
// pin, and its PF filters unicast frames by the VF's address, so it cannot be promiscuous.
var facts = nic.Facts{Chip: "82576 VF (igbvf)", Limits: limits, ITRUnit: ITRUnit, MaxITR: MaxITR, DescSize: DescSize,
	NoINTx: true, NoPromiscuous: true}

// Timeouts of the PF↔VF mailbox and of the VF reset. Every PF answer is waited for at
// most this long: a PF that does not answer is a PF event (the port re-initialises).
const (
	// mbxTimeout bounds each mailbox step: the PF taking a message, its reply (Linux
	// igbvf: 2000 tries 500 µs apart).
	mbxTimeout = time.Second
	// resetTimeout bounds the wait for RSTI and RSTD to clear after VTCTRL.RST.
	resetTimeout = 200 * time.Millisecond
	// retryInterval is the first wait between attempts to re-initialise a port whose PF
	// does not answer (a PF that is down), and how often the mailbox is looked at during
	// the waits; each wait doubles the next, up to maxRetryInterval (Linux's igbvf resets
	// a VF at most every 10 s). The port's user keeps the waits (RecoverBackoff).
	retryInterval    = 50 * time.Millisecond
	maxRetryInterval = 10 * time.Second
)

// watchInterval is how often the PF-event watcher looks at the mailbox without an
// interrupt. Every PF event Linux's igb causes raises the VF's mailbox interrupt: its
// reset sends the VFs a control message without CTS first (the port then retries until
// the PF answers), and it announces link changes by message too. The timer is only for a
// PF reset that sends nothing (a function-level reset of the PF); Linux's igbvf looks
// every 2 s (its watchdog) and so does this port. A timer wake-up of an idle process
// costs more than the register read: in a TCG guest a 100 ms timer on two VF ports kept
// the idle daemon at 180-215 context switches a second and 3.4 % of a CPU, against 30-56
// and 0.3-0.8 % at 2 s (BENCHMARKS.md §5.4). Each timer wake-up also reads the VF's
// statistics registers, whose byte counters wrap in 34 s at 1 Gb/s.
var watchInterval = 2 * time.Second // a variable for tests, which prove the interrupt alone
