package ring

import "github.com/uiod/uiod/internal/hw/intelnic"

// Advanced descriptor layout shared by the 82599 (ixgbe) and the 82576/I350/I210 (igb).
// Every descriptor is 16 bytes; the NIC overwrites it in place with a write-back.
//
//	RX read:       qw0 packet buffer address | w2:w3 header buffer address (0)
//	RX write-back: qw0 RSS hash, packet type  | w2 status_error | w3 length (15:0), VLAN (31:16)
//	TX read:       qw0 buffer address         | w2 cmd_type_len | w3 olinfo_status
//	TX write-back: qw0 reserved               | w2 reserved     | w3 status (DD bit 0)
//
// The layout assumes a little-endian CPU (amd64, arm64), as does every supported backend.
type advDesc struct {
	qw0 uint64
	w2  uint32
	w3  uint32
}

// DescSize is the size of one advanced descriptor in bytes.
const DescSize = 16

// TX descriptor bits (cmd_type_len, w2; status, w3).
const (
	txCmd = intelnic.TxdDTYPData | intelnic.TxdDEXT | intelnic.TxdIFCS | intelnic.TxdEOP | intelnic.TxdRS
)

// MaxTxFrame is the largest frame one TX data descriptor carries (the length field is 16
// bits).
const MaxTxFrame = 0xffff

// MinTxFrame is the shortest frame the MACs take from a TX descriptor: shorter ones are
// undefined (Linux pads to it in ixgbe_xmit_frame, "the minimum packet size for olinfo
// paylen is 17", and igb_xmit_frame, "with TCTL.PSP set is 17"). The MAC itself pads the
// frame on the wire to the Ethernet minimum (HLREG0.TXPADEN, TCTL.PSP).
const MinTxFrame = 17
