package virtio_test

import (
	"fmt"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/virtio"
	simvirtio "github.com/uiod/uiod/sim/virtio"
	"github.com/uiod/uiod/wire"
)

// Example opens a virtio-net port on the device model (with vfio or uio the device comes
// from vfio.Open or uio.Open instead), receives a frame from the far end of the cable and
// sends it back.
func Example() {
	host, cable := wire.Pair()
	model, err := simvirtio.New(simvirtio.Config{Wire: cable, Strict: true})
	if err != nil {
		panic(err)
	}
	port, err := virtio.Open(model.PCI(), nic.Config{RxRing: 64, TxRing: 64, Interrupts: nic.IRQMSIX})
	if err != nil {
		panic(err)
	}
	defer port.Close()
	echoed := make(chan int, 1)
	host.SetHandler(func(f []byte, _ int64) { echoed <- len(f) })

	frame := make([]byte, 60)
	copy(frame, port.MAC())
	host.Send(frame)

	bufs := make([]*nic.Buf, 8)
	n := port.RxBurst(0, bufs)
	sent := port.TxBurst(0, bufs[:n])
	fmt.Println("received", n, "sent", sent, "echoed", <-echoed, "bytes")
	fmt.Println("link up:", port.Link().Up, "queue pairs:", port.QueuePairs())
	// Output:
	// received 1 sent 1 echoed 60 bytes
	// link up: true queue pairs: 1
}
