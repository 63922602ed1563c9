package ixgbe_test

import (
	"fmt"
	"log"

	"github.com/uiod/uiod/nic"
	_ "github.com/uiod/uiod/nic/ixgbe" // registers the "ixgbe" driver
	"github.com/uiod/uiod/sim/intel"
)

// Example opens two ports on modelled 82599s that share one IOMMU (like two functions in
// one VFIO container) and forwards frames from the first to the second, as an l2fwd
// would. With real hardware, dev comes from the vfio or uio package instead.
func Example() {
	pair, err := intel.NewPair(intel.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer pair.Close()
	modelA, modelB := pair.Models[0], pair.Models[1]
	inA, outB := pair.Far[0], pair.Far[1] // the test's ends of the ports' wires
	cfg := nic.Config{RxRing: 256, TxRing: 256, Interrupts: nic.IRQNone, Promiscuous: true}
	a, err := nic.Open(modelA.PCI(), "auto", cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	b, err := nic.Open(modelB.PCI(), "ixgbe", cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	forwarded := 0
	outB.SetHandler(func(frame []byte, ts int64) { forwarded++ })
	for i := 0; i < 100; i++ {
		frame := make([]byte, 60)
		copy(frame, []byte{0x02, 0, 0, 0, 0, 0x99}) // to some station behind port B
		inA.Send(frame)
	}

	bufs := make([]*nic.Buf, 32)
	for forwarded < 100 {
		n := a.RxBurst(0, bufs)
		sent := b.TxBurst(0, bufs[:n]) // b frees the buffers once sent
		for _, buf := range bufs[sent:n] {
			buf.Free() // ring full: drop
		}
	}
	fmt.Println("forwarded", forwarded, "frames; link", a.Link().Up, b.Link().SpeedMbps, "Mb/s")
	// Output: forwarded 100 frames; link true 10000 Mb/s
}
