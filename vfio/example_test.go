package vfio_test

import (
	"fmt"
	"log"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/vfio"
)

// Two ports of one NIC share a container, so a buffer received on one can be transmitted
// on the other without copying.
func ExampleContainer() {
	c, err := vfio.NewContainer(vfio.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // quiesces both devices, then unmaps and frees all DMA memory

	a, err := c.Open(pci.MustParseAddr("0000:03:00.0"))
	if err != nil {
		log.Fatal(err)
	}
	b, err := c.Open(pci.MustParseAddr("0000:03:00.1"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.DMA() == b.DMA()) // one address space

	ring, err := c.DMA().Alloc(4096)
	if err != nil {
		log.Fatal(err)
	}
	bar0, err := a.Region(0)
	if err != nil {
		log.Fatal(err)
	}
	bar0.Write32(0xC000, uint32(ring.IOVA)) // igb RDBAL(0)
	bar0.Write32(0xC004, uint32(ring.IOVA>>32))

	vectors, err := a.IRQs(irq.MSIX, 2) // one eventfd per vector
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(vectors))
}

func ExampleOpen() {
	d, err := vfio.Open(pci.MustParseAddr("0000:03:00.0"), vfio.Options{})
	if err != nil {
		log.Fatal(err) // e.g. "device 0000:03:00.0 is bound to igb: device not bound to vfio-pci ..."
	}
	defer d.Close()
	bar0, err := d.Region(0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("STATUS %#x\n", bar0.Read32(0x8))
}
