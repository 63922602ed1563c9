package intel

import "github.com/uiod/uiod/internal/hw/intelnic"

// RSS registers, at the same offsets on the 82599 and the 82576.
const (

	// rxcsumPCSD makes the write-back carry the RSS hash instead of the fragment
	// checksum; QEMU's igb computes RSS only with it set (igb_rss_enabled).

	retaSize = 128
)

// RSSKey is Microsoft's RSS specification key, so hashes can be checked against its
// published test vectors. The drivers program a copy of their own.
var RSSKey = [40]byte{
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2,
	0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
	0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4,
	0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
	0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
}

// SetupRSS spreads flows over the RX queues when there is more than one: a Toeplitz hash
// with key picks one of 128 redirection-table entries, filled round-robin with the queue
// numbers, RXCSUM.PCSD puts the hash in the write-back (as Linux's ixgbe_setup_mrqc and
// igb_setup_mrqc do), and MRQC is set to mrqc (the controller's RSS enable and hash
// fields).
func SetupRSS(p *Port, key *[40]byte, mrqc uint32) {
	n := len(p.rx)
	if n < 2 {
		return
	}
	r := p.bar
	for i := 0; i < len(key)/4; i++ {
		k := key[4*i:]
		r.Write32(intelnic.RSSRK+4*uint32(i), uint32(k[0])|uint32(k[1])<<8|uint32(k[2])<<16|uint32(k[3])<<24)
	}
	for i := 0; i < retaSize/4; i++ {
		var v uint32
		for j := 0; j < 4; j++ {
			v |= uint32((4*i+j)%n) << (8 * j)
		}
		r.Write32(intelnic.RETA+4*uint32(i), v)
	}
	r.Write32(intelnic.RXCSUM, r.Read32(intelnic.RXCSUM)|intelnic.RxcsumPCSD)
	r.Write32(intelnic.MRQC, mrqc)
}
