package daemon

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/tap"
)

// checkKernels refuses, before any port is opened, a kernel path whose interface name is
// taken by an interface that is not a TAP (the error matches tap.ErrUnavailable).
func (d *Daemon) checkKernels() error {
	for _, pc := range d.cfg.Ports {
		if pc.Kernel.TAP == "" {
			continue
		}
		if err := tap.Available(pc.Kernel.TAP); err != nil {
			return fmt.Errorf("port %s: kernel: %w", pc.Name, err)
		}
	}
	return nil
}

// openKernel opens port p's kernel exception path, if it has one: a TAP interface with
// the port's MAC and MTU (ports[].mtu), up, with a TX queue for each poll thread. Closing p closes it.
func (d *Daemon) openKernel(p *port) error {
	name := p.cfg.Kernel.TAP
	if name == "" {
		return nil
	}
	k, err := tap.Open(tap.Config{Name: name, MAC: p.nic.MAC(), MTU: p.cfg.PortMTU(), TxQueues: max(1, len(d.cfg.Poll.CPUs)), Log: d.log})
	if err != nil {
		return fmt.Errorf("port %s: kernel: %w", p.cfg.Name, err)
	}
	p.kernel = k
	d.log.Info("kernel path up", zap.String("port", p.cfg.Name), zap.String("tap", k.Name()), zap.String("mac", k.MAC().String()))
	return nil
}

// addKernelPaths puts the ports' kernel paths into the dataplane configuration: each is
// its port's Kernel, its RX queue is polled by the thread that polls the port's RX queue
// 0 and leaves by that thread's TX queue on the port, and every thread gets a TX queue on
// it (thread i its queue i) for Burst.ToKernel.
func addKernelPaths(ports []dataplane.Port, threads []dataplane.Thread, opened []*port) error {
	for i, p := range opened {
		if p.kernel == nil {
			continue
		}
		ports[i].Kernel = p.kernel
		ti := pollingThread(threads, p.nic)
		if ti < 0 {
			return fmt.Errorf("port %s: kernel: no poll thread polls its RX queue 0", p.cfg.Name)
		}
		txq, err := kernelTxQueue(threads, ti, p.nic)
		if err != nil {
			return fmt.Errorf("port %s: kernel: %w", p.cfg.Name, err)
		}
		threads[ti].Queues = append(threads[ti].Queues, dataplane.Queue{
			Name: p.cfg.Name + "/kernel", RxPort: p.kernel, RxQ: 0, TxPort: p.nic, TxQ: txq,
		})
		for t := range threads {
			threads[t].Tx = append(threads[t].Tx, dataplane.TxQueue{Port: p.kernel, Queue: t})
		}
	}
	return nil
}

// pollingThread is the index of the thread that polls RX queue 0 of np, or -1.
func pollingThread(threads []dataplane.Thread, np nic.Port) int {
	for ti, th := range threads {
		for _, q := range th.Queues {
			if q.RxPort == np && q.RxQ == 0 {
				return ti
			}
		}
	}
	return -1
}

// kernelTxQueue picks the TX queue of np that thread ti sends the kernel's frames on: one
// it already sends on, or else one no thread uses.
func kernelTxQueue(threads []dataplane.Thread, ti int, np nic.Port) (int, error) {
	used := map[int]int{} // TX queue → thread
	for t, th := range threads {
		for _, q := range th.Queues {
			if q.TxPort == np || (q.TxPort == nil && q.RxPort == np) {
				used[q.TxQ] = t
			}
		}
		for _, x := range th.Tx {
			if x.Port == np {
				used[x.Queue] = t
			}
		}
	}
	for q := 0; q < np.NumTxQueues(); q++ {
		if t, ok := used[q]; ok && t == ti {
			return q, nil
		}
	}
	for q := 0; q < np.NumTxQueues(); q++ {
		if _, ok := used[q]; !ok {
			return q, nil
		}
	}
	return 0, fmt.Errorf("poll thread %d sends on none of the port's %d TX queues and the others use them all: raise tx_queues", ti, np.NumTxQueues())
}
