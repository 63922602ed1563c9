package intel_test

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/sim/intel"
	"github.com/uiod/uiod/wire"
)

// Example shows a model port on a wire, driven by hand: one RX descriptor is posted, a
// frame arrives from the cable, and the write-back reports it (a real driver does this
// through nic/ixgbe).
func Example() {
	cable, far := wire.Pair()
	m, err := intel.New(intel.Config{Wire: cable, Strict: true})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	dev := m.PCI()
	pci.SetBusMaster(dev.Config(), true)
	bar, _ := dev.Region(0)

	ring, _ := dev.DMA().Alloc(16 * 8)
	buf, _ := dev.DMA().Alloc(2048)
	binary.LittleEndian.PutUint64(ring.Bytes, buf.IOVA) // descriptor 0 → buf

	bar.Write32(0x5080, 0x200)        // FCTRL.UPE: accept any unicast
	bar.Write32(0x1014, 0x02000002)   // SRRCTL(0): advanced one-buffer, 2 KB
	bar.Write64(0x1000, ring.IOVA)    // RDBAL/RDBAH(0)
	bar.Write32(0x1008, uint32(16*8)) // RDLEN(0)
	bar.Write32(0x1028, 1<<25)        // RXDCTL(0).ENABLE
	waitSet(bar, 0x1028, 1<<25)       // the queue is on once ENABLE reads 1
	bar.Write32(0x1018, 1)            // RDT(0): descriptor 0 is the device's
	bar.Write32(0x8D00, 1<<1)         // SECRXCTRL.RX_DIS: halt the security RX path,
	waitSet(bar, 0x8D04, 1)           // wait for SECRXSTAT.SECRX_RDY (82599 erratum),
	bar.Write32(0x3000, 1)            // RXCTRL.RXEN,
	bar.Write32(0x8D00, 0)            // and let the path run again
	waitSet(bar, 0x42A4, 1<<30)       // LINKS.UP: auto-negotiation has finished

	far.Send(make([]byte, 60)) // a frame arrives at the port
	status := sim.LoadUint32(ring.Bytes[8:])
	length := binary.LittleEndian.Uint16(ring.Bytes[12:])
	fmt.Printf("DD=%v EOP=%v length=%d RDH=%d\n", status&1 != 0, status&2 != 0, length, bar.Read32(0x1010))
	fmt.Println("faults:", m.Device().Err())
	// Output:
	// DD=true EOP=true length=60 RDH=1
	// faults: <nil>
}

// waitSet polls a register until bits are set, for at most a second.
func waitSet(bar pci.Region, off, bits uint32) {
	for deadline := time.Now().Add(time.Second); bar.Read32(off)&bits != bits; {
		if time.Now().After(deadline) {
			panic(fmt.Sprintf("register 0x%x: bits 0x%x never set", off, bits))
		}
		time.Sleep(10 * time.Microsecond)
	}
}
