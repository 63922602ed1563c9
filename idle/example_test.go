package idle_test

import (
	"fmt"
	"log"
	"sync/atomic"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/irq"
)

func ExampleParseSpec() {
	c, err := idle.ParseSpec("adaptive:50us+hk:100/10us")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Mode, c.IdleThreshold, c.HousekeepingHz, c.HousekeepingLength)
	spec, _ := c.Spec()
	fmt.Println(spec)
	_, err = idle.ParseSpec("sleep:50us-20us")
	fmt.Println(err)
	// Output:
	// adaptive 50µs 100 10µs
	// adaptive:50µs+hk:100/10µs
	// policy "sleep:50us-20us": sleep_min: want 0 ≤ sleep_min < sleep_max ≤ 1s, have 50µs, 20µs
}

// queues stands for a polling thread's RX queues.
type queues struct{ rx *irq.Vector }

func (q *queues) Poll() int { return 0 } // one RX burst on every queue, frames processed
func (q *queues) Arm()      {}           // enable the queues' RX interrupts
func (q *queues) Disarm()   {}           // disable them

// ExampleNew shows a polling thread's loop: poll, tell the Idler what the poll found,
// and let it decide whether to keep polling or sleep until an RX interrupt.
func ExampleNew() {
	rx, err := irq.NewEventfd(irq.MSIX, 0) // a backend hands out the RX vector
	if err != nil {
		log.Fatal(err)
	}
	defer rx.Close()
	q := &queues{rx: rx}
	d, err := idle.New(idle.DefaultPolicy(), []*irq.Vector{rx}, q)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	var stop atomic.Bool // set by whoever ends the loop, which then calls d.Stop
	for !stop.Load() {
		if n, now := q.Poll(), idle.Now(); n > 0 {
			d.Traffic(now)
		} else {
			d.Empty(now)
		}
	}
}
