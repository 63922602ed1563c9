package dataplane

import (
	"errors"
	"fmt"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/nic"
	"go.uber.org/zap"
)

// App is what a dataplane does with the frames it receives.
type App int

// Applications. The zero App is L2Fwd.
const (
	// L2Fwd sends every frame received on a queue's RxPort/RxQ out of its TxPort/TxQ
	// unchanged. Configure both directions of a port pair as two queues.
	L2Fwd App = iota
	// Reflect swaps the source and destination MAC addresses and sends the frame back out
	// of the port it came in on.
	Reflect
)

// appNames are the apps' configuration names, by value.
var appNames = [...]string{L2Fwd: "l2fwd", Reflect: "reflect"}

// String is the app's configuration name, as ParseApp accepts it.
func (a App) String() string {
	if a >= 0 && int(a) < len(appNames) {
		return appNames[a]
	}
	return fmt.Sprintf("dataplane.App(%d)", int(a))
}

// ParseApp parses "l2fwd" or "reflect".
func ParseApp(s string) (App, error) {
	for a, name := range appNames {
		if s == name {
			return App(a), nil
		}
	}
	return 0, fmt.Errorf("unknown app %q (want l2fwd or reflect)", s)
}

// Queue is one RX queue a thread polls and the TX queue its frames leave by.
type Queue struct {
	// Name labels the queue in statistics (default "t<thread>q<index>").
	Name string
	// RxPort and RxQ are the receive queue.
	RxPort nic.Port
	RxQ    int
	// TxPort and TxQ are the transmit queue. For Reflect TxPort may be nil (or must be
	// RxPort): frames go back out of the port they came from.
	TxPort nic.Port
	TxQ    int
}

// Thread is one polling thread and the queues it serves.
type Thread struct {
	// CPU pins the thread to that CPU; -1 leaves it unpinned.
	CPU    int
	Queues []Queue
}

// Config configures a Dataplane.
type Config struct {
	Threads []Thread
	App     App
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
)

// validate fills in defaults and checks cfg, naming the field that is wrong.
func (cfg *Config) validate() error {
	if cfg.Batch == 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Batch < 0 || cfg.Batch > MaxBatch {
		return fmt.Errorf("batch: %d outside [1, %d]", cfg.Batch, MaxBatch)
	}
	if cfg.App != L2Fwd && cfg.App != Reflect {
		return fmt.Errorf("app: invalid value %d", int(cfg.App))
	}
	if err := cfg.Policy.Validate(); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	if len(cfg.Threads) == 0 {
		return errors.New("threads: none configured")
	}
	type portQueue struct {
		port nic.Port
		q    int
	}
	rxOwner := map[portQueue]string{}
	txThread := map[portQueue]int{}
	vecThread := map[int]int{} // RX interrupt descriptor → thread that sleeps on it
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
			if q.Name == "" {
				q.Name = fmt.Sprintf("t%dq%d", ti, qi)
			}
			where := fmt.Sprintf("threads[%d].queues[%d] (%s)", ti, qi, q.Name)
			if q.RxPort == nil {
				return fmt.Errorf("%s.rx_port: missing", where)
			}
			if cfg.App == Reflect {
				if q.TxPort == nil {
					q.TxPort = q.RxPort
				}
				if q.TxPort != q.RxPort {
					return fmt.Errorf("%s.tx_port: reflect sends back out of the RX port", where)
				}
			}
			if q.TxPort == nil {
				return fmt.Errorf("%s.tx_port: missing", where)
			}
			if n := q.RxPort.NumRxQueues(); q.RxQ < 0 || q.RxQ >= n {
				return fmt.Errorf("%s.rx_queue: %d outside [0, %d)", where, q.RxQ, n)
			}
			if n := q.TxPort.NumTxQueues(); q.TxQ < 0 || q.TxQ >= n {
				return fmt.Errorf("%s.tx_queue: %d outside [0, %d)", where, q.TxQ, n)
			}
			rx := portQueue{q.RxPort, q.RxQ}
			if other, dup := rxOwner[rx]; dup {
				return fmt.Errorf("%s.rx_queue: RX queue %d already polled by %s", where, q.RxQ, other)
			}
			rxOwner[rx] = q.Name
			tx := portQueue{q.TxPort, q.TxQ}
			if other, dup := txThread[tx]; dup && other != ti {
				return fmt.Errorf("%s.tx_queue: TX queue %d already used by thread %d", where, q.TxQ, other)
			}
			txThread[tx] = ti
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
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return nil
}
