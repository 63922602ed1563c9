package daemon

import (
	"fmt"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/dataplane"
)

// forwardQueues maps the ports onto dataplane queues as the forward mode says: l3fwd's
// own layout, each port onto itself under Reflect, or both directions of every forward
// pair. A TX queue is only ever used by the thread that owns the RX queue feeding it, so
// each RX queue needs a TX queue of the same index on its peer.
func (d *Daemon) forwardQueues(app dataplane.App) ([]dataplane.Queue, error) {
	var queues []dataplane.Queue
	addDir := func(rx, tx *port) error {
		if rx.nic.NumRxQueues() > tx.nic.NumTxQueues() {
			return fmt.Errorf("forward: port %s has %d rx_queues but %s only %d tx_queues: each RX queue needs its own TX queue on the peer",
				rx.cfg.Name, rx.nic.NumRxQueues(), tx.cfg.Name, tx.nic.NumTxQueues())
		}
		for q := 0; q < rx.nic.NumRxQueues(); q++ {
			queues = append(queues, dataplane.Queue{
				Name:   fmt.Sprintf("%s/rx%d", rx.cfg.Name, q),
				RxPort: rx.nic, RxQ: q, TxPort: tx.nic, TxQ: q,
			})
		}
		return nil
	}
	switch {
	case d.cfg.Forward.Mode == config.ForwardL3fwd, d.isBridge(): // a frame may leave by any port
		return l3fwdQueues(d.ports), nil
	case app == dataplane.Reflect:
		for _, p := range d.ports {
			if err := addDir(p, p); err != nil {
				return nil, err
			}
		}
		return queues, nil
	}
	byName := map[string]*port{}
	for _, p := range d.ports {
		byName[p.cfg.Name] = p
	}
	for _, pr := range d.cfg.ForwardPairs() {
		a, b := byName[pr[0]], byName[pr[1]]
		if a == nil || b == nil {
			return nil, fmt.Errorf("forward.pairs: %v names an unknown port", pr)
		}
		if err := addDir(a, b); err != nil {
			return nil, err
		}
		if err := addDir(b, a); err != nil {
			return nil, err
		}
	}
	return queues, nil
}

// assignThreads spreads queues round robin over one poll thread per CPU in cpus (one
// unpinned thread when cpus is empty) and drops the threads left without queues. When
// the idle policy sleeps on interrupts (sharedIRQ), queues that share an RX interrupt
// (INTx) go to one thread: only the thread that sleeps on a vector is woken by it.
func assignThreads(queues []dataplane.Queue, cpus []int, sharedIRQ bool) []dataplane.Thread {
	if len(cpus) == 0 {
		cpus = []int{-1}
	}
	threads := make([]dataplane.Thread, len(cpus))
	for i, c := range cpus {
		threads[i].CPU = c
	}
	vecThread := map[int]int{}
	next := 0
	for _, q := range queues {
		ti := next % len(threads)
		if v := q.RxPort.RxVector(q.RxQ); v != nil && sharedIRQ {
			if t, ok := vecThread[v.Fd()]; ok {
				ti = t
			} else {
				vecThread[v.Fd()] = ti
				next++
			}
		} else {
			next++
		}
		threads[ti].Queues = append(threads[ti].Queues, q)
	}
	used := threads[:0]
	for _, t := range threads {
		if len(t.Queues) > 0 {
			used = append(used, t)
		}
	}
	return used
}
