package intel

import (
	"crypto/rand"
	"fmt"
	"net"

	"github.com/uiod/uiod/internal/hw/intelnic"
)

// ReadMAC reads the station address from receive address 0. A missing or invalid address
// is replaced by a random locally administered one, which is written back.
func ReadMAC(p *Port) error {
	lo, hi := p.bar.Read32(intelnic.RAL0), p.bar.Read32(intelnic.RAH0)
	mac := []byte{byte(lo), byte(lo >> 8), byte(lo >> 16), byte(lo >> 24), byte(hi), byte(hi >> 8)}
	if hi&intelnic.RahAV == 0 || mac[0]&1 != 0 || (lo == 0 && hi&0xffff == 0) {
		if _, err := rand.Read(mac); err != nil {
			return fmt.Errorf("random mac: %w", err)
		}
		mac[0] = mac[0]&^1 | 2 // unicast, locally administered
		p.bar.Write32(intelnic.RAL0, uint32(mac[0])|uint32(mac[1])<<8|uint32(mac[2])<<16|uint32(mac[3])<<24)
		p.bar.Write32(intelnic.RAH0, uint32(mac[4])|uint32(mac[5])<<8|intelnic.RahAV)
	}
	hw := net.HardwareAddr(mac)
	p.mac.Store(&hw)
	return nil
}
