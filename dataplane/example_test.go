package dataplane_test

import (
	"fmt"
	"log"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/nic"
	_ "github.com/uiod/uiod/nic/ixgbe" // registers the "ixgbe" driver
	"github.com/uiod/uiod/sim/intel"
)

// Example forwards frames between two modelled 82599 ports with one polling thread that
// sleeps on MSI-X interrupts when traffic stops. With real hardware the ports come from
// devices opened through the vfio or uio package.
func Example() {
	runtime.GOMAXPROCS(dataplane.ProcsFor(1))
	pair, err := intel.NewPair(intel.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer pair.Close()
	var ports [2]nic.Port
	far := pair.Far
	for i := range ports {
		ports[i], err = nic.Open(pair.Models[i].PCI(), "auto", nic.Config{RxRing: 256, TxRing: 256, Promiscuous: true})
		if err != nil {
			log.Fatal(err)
		}
		defer ports[i].Close() // after dp.Stop: ports close once no thread uses them
	}
	var out atomic.Int64
	far[1].SetHandler(func(frame []byte, ts int64) { out.Add(1) })

	dp, err := dataplane.New(dataplane.Config{
		App: dataplane.L2Fwd,
		Policy: idle.PolicyConfig{
			Mode:          idle.Adaptive,
			IdleThreshold: 300 * time.Microsecond,
		},
		Threads: []dataplane.Thread{{CPU: -1, Queues: []dataplane.Queue{
			{Name: "0to1", RxPort: ports[0], TxPort: ports[1]},
			{Name: "1to0", RxPort: ports[1], TxPort: ports[0]},
		}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := dp.Start(); err != nil {
		log.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		frame := make([]byte, 60)
		copy(frame, []byte{0x02, 0, 0, 0, 0, 0x99})
		far[0].Send(frame)
		time.Sleep(time.Millisecond) // the thread falls asleep between frames
	}
	for deadline := time.Now().Add(10 * time.Second); out.Load() < 10 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond) // bounded: a lost frame fails the output check below
	}
	dp.Stop()
	q := dp.Stats()[0]
	th := dp.Threads()[0]
	fmt.Println(q.Name, "forwarded", q.TxPackets, "frames; slept:", th.Idle.Sleeps > 0, "woken by interrupt:", th.Idle.WakeInterrupt > 0)
	// Output: 0to1 forwarded 10 frames; slept: true woken by interrupt: true
}

// dropBroadcast is the reason ExampleApp's app counts its drops under.
var dropBroadcast = dataplane.RegisterDropReason("broadcast")

// ExampleApp runs an application in the poll loop: it drops broadcast frames, counting
// them under a reason of its own, and forwards everything else to the queue's peer port.
func ExampleApp() {
	pair, err := intel.NewPair(intel.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer pair.Close()
	var ports [2]nic.Port
	for i := range ports {
		ports[i], err = nic.Open(pair.Models[i].PCI(), "auto", nic.Config{RxRing: 256, TxRing: 256, Promiscuous: true})
		if err != nil {
			log.Fatal(err)
		}
		defer ports[i].Close()
	}
	var out atomic.Int64
	pair.Far[1].SetHandler(func(frame []byte, ts int64) { out.Add(1) })

	app := dataplane.AppFunc(func(b *dataplane.Burst) {
		for i, f := range b.Frames {
			if f.Bytes()[0]&1 != 0 { // group bit: broadcast or multicast
				b.Drop(i, dropBroadcast)
			} else {
				b.Send(i, b.Peer)
			}
		}
	})
	dp, err := dataplane.New(dataplane.Config{
		App:     app,
		Policy:  idle.PolicyConfig{Mode: idle.Busy},
		Threads: []dataplane.Thread{{CPU: -1, Queues: []dataplane.Queue{{Name: "0to1", RxPort: ports[0], TxPort: ports[1]}}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := dp.Start(); err != nil {
		log.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		frame := make([]byte, 60)
		copy(frame, []byte{0x02, 0, 0, 0, 0, 0x99})
		if i%2 == 1 {
			copy(frame, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		}
		pair.Far[0].Send(frame)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if q := dp.Stats()[0]; q.TxPackets+q.Drops == 10 {
			break
		}
	}
	dp.Stop()
	q := dp.Stats()[0]
	fmt.Println("forwarded", q.TxPackets, "dropped", q.DropsBy["broadcast"], "as broadcast")
	// Output: forwarded 5 dropped 5 as broadcast
}
