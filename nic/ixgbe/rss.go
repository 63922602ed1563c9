package ixgbe

import (
	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic/internal/intel"
)

// RSSKey is the Toeplitz hash key the driver programs: the key of Microsoft's RSS
// specification, so hashes can be checked against its published test vectors.
var RSSKey = intel.RSSKey

// setupRSS spreads flows over the RX queues when there is more than one: a Toeplitz hash
// over the IPv4/IPv6 addresses and TCP/UDP ports picks one of 128 redirection-table
// entries, filled round-robin with the queue numbers.
func (p *Port) setupRSS() { intel.SetupRSS(&p.core, &RSSKey, i82599.MrqcRSSEn|intelnic.MrqcRSSFields) }
