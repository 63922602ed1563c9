package dataplane

import (
	"errors"
	"fmt"
	"slices"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/nic"
	"go.uber.org/zap"
)

// Queue is one RX queue a thread polls and the TX queue its frames leave by.
type Queue struct {
	// Name labels the queue in statistics (default "t<thread>q<index>").
	Name string
	// RxPort and RxQ are the receive queue.
	RxPort nic.Port
	RxQ    int
	// TxPort and TxQ are the queue's own output: where l2fwd sends its frames, the
	// App's Burst.Peer. A nil TxPort is RxPort (as Reflect needs).
	TxPort nic.Port
	TxQ    int
}

// TxQueue is one TX queue of a port.
type TxQueue struct {
	Port  nic.Port
	Queue int
}

// Port is a port as the App addresses it (its PortID is its index in Config.Ports).
type Port struct {
	// Name labels the port in logs and statistics (default "port<index>").
	Name string
	NIC  nic.Port
	// Kernel is the port's kernel exception path (a TAP port, say), or nil.
	// Burst.ToKernel sends frames to it through the thread's TX queue on it (list one in
	// Thread.Tx); what a thread receives on it (a Queue whose RxPort is Kernel) goes
	// straight out of NIC through the queue's TxPort/TxQ, without the App.
	Kernel nic.Port
}

// Thread is one polling thread and the queues it serves.
type Thread struct {
	// CPU pins the thread to that CPU; -1 leaves it unpinned.
	CPU int
	// Queues are the RX queues the thread polls.
	Queues []Queue
	// Tx lists further TX queues the thread may send on (an l3fwd thread: one on every
	// port), besides its queues' own. The thread sends to a port through the first TX
	// queue it has on it, and to a queue's peer through the queue's own TxQ.
	Tx []TxQueue
}

// Config configures a Dataplane.
type Config struct {
	// Ports are the ports by PortID. When empty, it is made of the queues' RX and TX
	// ports in order of appearance. Every port a queue names must be a NIC or Kernel here.
	Ports   []Port
	Threads []Thread
	// App processes every RX burst (nil: L2Fwd).
	App App
	// Policy is every thread's idle policy, checked by its own Validate. Its zero value
	// is Adaptive sleeping at the first empty poll; idle.DefaultPolicy is the usual one.
	Policy idle.PolicyConfig
	// Batch is the most frames one RX burst takes from one queue (default 32).
	Batch int
	// Logger receives start-up and shutdown messages (default: none).
	Logger *zap.Logger
}

// Limits of Config.
const (
	DefaultBatch = 32
	MaxBatch     = 512
	maxCPU       = 1024 // unix.CPUSet size
	maxPorts     = 1024 // PortIDs and TX slots fit an int16
)

// validate fills in defaults and checks cfg, naming the field that is wrong. It copies
// the caller's slices before it writes a default into them.
func (cfg *Config) validate() error {
	if cfg.Batch == 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Batch < 0 || cfg.Batch > MaxBatch {
		return fmt.Errorf("batch: %d outside [1, %d]", cfg.Batch, MaxBatch)
	}
	if cfg.App == nil {
		cfg.App = L2Fwd
	}
	if err := cfg.Policy.Validate(); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	if len(cfg.Threads) == 0 {
		return errors.New("threads: none configured")
	}
	cfg.Threads = slices.Clone(cfg.Threads)
	for ti := range cfg.Threads {
		qs := slices.Clone(cfg.Threads[ti].Queues)
		for qi := range qs {
			if qs[qi].Name == "" {
				qs[qi].Name = fmt.Sprintf("t%dq%d", ti, qi)
			}
		}
		cfg.Threads[ti].Queues = qs
	}
	if err := cfg.checkPorts(); err != nil {
		return err
	}
	type portQueue struct {
		port nic.Port
		q    int
	}
	rxOwner := map[portQueue]string{}
	txThread := map[portQueue]int{}
	useTx := func(where string, ti int, p nic.Port, q int) error {
		if n := p.NumTxQueues(); q < 0 || q >= n {
			return fmt.Errorf("%s: %d outside [0, %d)", where, q, n)
		}
		tx := portQueue{p, q}
		if other, dup := txThread[tx]; dup && other != ti {
			return fmt.Errorf("%s: TX queue %d already used by thread %d", where, q, other)
		}
		txThread[tx] = ti
		return nil
	}
	vecThread := map[int]int{}    // RX interrupt descriptor → thread that sleeps on it
	kernel := map[nic.Port]bool{} // kernel paths: their queues bypass the App
	for _, p := range cfg.Ports {
		if p.Kernel != nil {
			kernel[p.Kernel] = true
		}
	}
	for ti := range cfg.Threads {
		th := &cfg.Threads[ti]
		if th.CPU < -1 || th.CPU >= maxCPU {
			return fmt.Errorf("threads[%d].cpu: %d outside [-1, %d)", ti, th.CPU, maxCPU)
		}
		if len(th.Queues) == 0 {
			return fmt.Errorf("threads[%d].queues: none configured", ti)
		}
		for qi := range th.Queues {
			q := &th.Queues[qi]
			where := fmt.Sprintf("threads[%d].queues[%d] (%s)", ti, qi, q.Name)
			if q.RxPort == nil {
				return fmt.Errorf("%s.rx_port: missing", where)
			}
			if q.TxPort == nil {
				q.TxPort = q.RxPort
			}
			if cfg.App == Reflect && q.TxPort != q.RxPort && !kernel[q.RxPort] {
				return fmt.Errorf("%s.tx_port: reflect sends back out of the RX port", where)
			}
			if n := q.RxPort.NumRxQueues(); q.RxQ < 0 || q.RxQ >= n {
				return fmt.Errorf("%s.rx_queue: %d outside [0, %d)", where, q.RxQ, n)
			}
			rx := portQueue{q.RxPort, q.RxQ}
			if other, dup := rxOwner[rx]; dup {
				return fmt.Errorf("%s.rx_queue: RX queue %d already polled by %s", where, q.RxQ, other)
			}
			rxOwner[rx] = q.Name
			if err := useTx(where+".tx_queue", ti, q.TxPort, q.TxQ); err != nil {
				return err
			}
			if cfg.Policy.SleepsOnInterrupt() {
				v := q.RxPort.RxVector(q.RxQ)
				if v == nil {
					return fmt.Errorf("%s: %w", where, idle.ErrNoVector)
				}
				// A vector shared by several queues (INTx) wakes, and is drained by, one
				// thread only: another thread would miss its interrupts.
				if other, dup := vecThread[v.Fd()]; dup && other != ti {
					return fmt.Errorf("%s.rx_queue: its RX interrupt (%s) is shared with a queue of thread %d: poll queues that share an interrupt on one thread", where, v.Kind, other)
				}
				vecThread[v.Fd()] = ti
			}
		}
		for xi, tx := range th.Tx {
			where := fmt.Sprintf("threads[%d].tx[%d]", ti, xi)
			if tx.Port == nil {
				return fmt.Errorf("%s.port: missing", where)
			}
			if err := useTx(where+".queue", ti, tx.Port, tx.Queue); err != nil {
				return err
			}
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return nil
}

// checkPorts builds Ports from the queues when it is empty, and otherwise checks that it
// names every port the threads use, each once.
func (cfg *Config) checkPorts() error {
	if len(cfg.Ports) == 0 {
		seen := map[nic.Port]bool{}
		add := func(p nic.Port) {
			if p != nil && !seen[p] {
				seen[p] = true
				cfg.Ports = append(cfg.Ports, Port{NIC: p})
			}
		}
		for _, th := range cfg.Threads {
			for _, q := range th.Queues {
				add(q.RxPort)
				add(q.TxPort)
			}
			for _, tx := range th.Tx {
				add(tx.Port)
			}
		}
	} else {
		cfg.Ports = slices.Clone(cfg.Ports)
	}
	if len(cfg.Ports) > maxPorts {
		return fmt.Errorf("ports: %d, at most %d", len(cfg.Ports), maxPorts)
	}
	known := map[nic.Port]string{}
	for i := range cfg.Ports {
		p := &cfg.Ports[i]
		if p.Name == "" {
			p.Name = fmt.Sprintf("port%d", i)
		}
		if p.NIC == nil {
			return fmt.Errorf("ports[%d] (%s).nic: missing", i, p.Name)
		}
		for _, np := range []nic.Port{p.NIC, p.Kernel} {
			if np == nil {
				continue
			}
			if other, dup := known[np]; dup {
				return fmt.Errorf("ports[%d] (%s): the same port is already %s", i, p.Name, other)
			}
			known[np] = p.Name
		}
	}
	nics, kernels := map[nic.Port]bool{}, map[nic.Port]nic.Port{}
	for _, p := range cfg.Ports {
		nics[p.NIC] = true
		if p.Kernel != nil {
			kernels[p.Kernel] = p.NIC
		}
	}
	for ti, th := range cfg.Threads {
		for qi, q := range th.Queues {
			where := fmt.Sprintf("threads[%d].queues[%d] (%s)", ti, qi, q.Name)
			for _, np := range []nic.Port{q.RxPort, q.TxPort} {
				if _, ok := known[np]; np != nil && !ok {
					return fmt.Errorf("%s: uses a port that is not in ports", where)
				}
			}
			if q.TxPort == nil {
				continue
			}
			if nicPort, ok := kernels[q.RxPort]; ok && q.TxPort != nicPort {
				return fmt.Errorf("%s.tx_port: a kernel path's frames leave by its own port", where)
			}
			if nics[q.RxPort] && !nics[q.TxPort] {
				return fmt.Errorf("%s.tx_port: a kernel path (send to it with Burst.ToKernel)", where)
			}
		}
		for xi, tx := range th.Tx {
			if _, ok := known[tx.Port]; tx.Port != nil && !ok {
				return fmt.Errorf("threads[%d].tx[%d].port: not in ports", ti, xi)
			}
		}
	}
	return nil
}
