package intel

import (
	"crypto/rand"
	"fmt"
)

// Receive address 0, loaded by the NIC from its EEPROM, at the same offset on the 82599
// and the 82576.
const (
	regRAL0      = 0x05400
	regRAH0      = 0x05404
	rahAddrValid = 1 << 31
)

// ReadMAC reads the station address from receive address 0. A missing or invalid address
// is replaced by a random locally administered one, which is written back.
func ReadMAC(p *Port) error {
	lo, hi := p.bar.Read32(regRAL0), p.bar.Read32(regRAH0)
	mac := []byte{byte(lo), byte(lo >> 8), byte(lo >> 16), byte(lo >> 24), byte(hi), byte(hi >> 8)}
	if hi&rahAddrValid == 0 || mac[0]&1 != 0 || (lo == 0 && hi&0xffff == 0) {
		if _, err := rand.Read(mac); err != nil {
			return fmt.Errorf("random mac: %w", err)
		}
		mac[0] = mac[0]&^1 | 2 // unicast, locally administered
		p.bar.Write32(regRAL0, uint32(mac[0])|uint32(mac[1])<<8|uint32(mac[2])<<16|uint32(mac[3])<<24)
		p.bar.Write32(regRAH0, uint32(mac[4])|uint32(mac[5])<<8|rahAddrValid)
	}
	p.mac = mac
	return nil
}
