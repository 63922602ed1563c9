package daemon

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/irq"
)

// vecPort is a stubPort whose RX queues fire the vectors in vecs (nil: polled only).
type vecPort struct {
	stubPort
	vecs []*irq.Vector
}

func (p *vecPort) RxVector(q int) *irq.Vector { return p.vecs[q] }

// TestAssignThreads: queues go round robin over the CPUs' threads, one unpinned thread
// when none are given, threads without queues are dropped, and when the policy sleeps on
// interrupts the queues of one shared vector stay on one thread.
func TestAssignThreads(t *testing.T) {
	shared := irq.NewFunc(irq.INTx, 0, 7, nil)
	own := irq.NewFunc(irq.MSIX, 1, 8, nil)
	intx := &vecPort{vecs: []*irq.Vector{shared, shared, own}}
	polled := &vecPort{vecs: []*irq.Vector{nil, nil, nil}}
	queues := func(p *vecPort, n int) []dataplane.Queue {
		var qs []dataplane.Queue
		for i := range n {
			qs = append(qs, dataplane.Queue{Name: fmt.Sprint("q", i), RxPort: p, RxQ: i})
		}
		return qs
	}
	tests := []struct {
		name      string
		queues    []dataplane.Queue
		cpus      []int
		sharedIRQ bool
		want      map[int][]string // CPU -> queue names
	}{
		{"no cpus: one unpinned thread", queues(polled, 3), nil, false, map[int][]string{-1: {"q0", "q1", "q2"}}},
		{"round robin", queues(polled, 3), []int{2, 3}, false, map[int][]string{2: {"q0", "q2"}, 3: {"q1"}}},
		{"idle threads dropped", queues(polled, 1), []int{2, 3, 4}, false, map[int][]string{2: {"q0"}}},
		{"shared vector, one thread", queues(intx, 3), []int{2, 3}, true, map[int][]string{2: {"q0", "q1"}, 3: {"q2"}}},
		{"shared vector ignored when polling", queues(intx, 3), []int{2, 3}, false, map[int][]string{2: {"q0", "q2"}, 3: {"q1"}}},
		{"no queues", nil, []int{2}, false, map[int][]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[int][]string{}
			for _, th := range assignThreads(tt.queues, tt.cpus, tt.sharedIRQ) {
				if len(th.Queues) == 0 {
					t.Errorf("thread on CPU %d has no queues", th.CPU)
				}
				for _, q := range th.Queues {
					got[th.CPU] = append(got[th.CPU], q.Name)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("threads %v, want %v", got, tt.want)
			}
			for cpu, names := range tt.want {
				if !slices.Equal(got[cpu], names) {
					t.Errorf("CPU %d: queues %v, want %v (all: %v)", cpu, got[cpu], names, got)
				}
			}
		})
	}
}

// countPort is a stubPort with rx RX and tx TX queues.
type countPort struct {
	stubPort
	rx, tx int
}

func (p *countPort) NumRxQueues() int { return p.rx }
func (p *countPort) NumTxQueues() int { return p.tx }

// TestForwardQueues: l2fwd gives every RX queue of both ports of a pair the TX queue of
// the same index on the peer, Reflect its own port's; a port with more RX queues than
// its peer has TX queues, or a pair naming a port that is not open, is an error naming
// what is wrong.
func TestForwardQueues(t *testing.T) {
	const two = "ports:\n  - {name: a, driver: sim, wire: \"pair:qa\"}\n  - {name: b, driver: sim, wire: \"pair:qb\"}\n"
	tests := []struct {
		name   string
		app    dataplane.App     // nil: l2fwd over forward.pairs
		ports  map[string][2]int // name -> RX, TX queues; a missing name is not open
		want   []string          // "queue>tx port"
		errMsg string
	}{
		{"l2fwd", nil, map[string][2]int{"a": {2, 2}, "b": {2, 2}}, []string{"a/rx0>b", "a/rx1>b", "b/rx0>a", "b/rx1>a"}, ""},
		{"l2fwd, peer short of TX queues", nil, map[string][2]int{"a": {2, 2}, "b": {2, 1}}, nil, "port a has 2 rx_queues but b only 1 tx_queues"},
		{"l2fwd, a port not open", nil, map[string][2]int{"a": {1, 1}}, nil, "forward.pairs: [a b] names an unknown port"},
		{"reflect", dataplane.Reflect, map[string][2]int{"a": {2, 2}, "b": {1, 1}}, []string{"a/rx0>a", "a/rx1>a", "b/rx0>b"}, ""},
		{"reflect, short of TX queues", dataplane.Reflect, map[string][2]int{"a": {2, 1}}, nil, "port a has 2 rx_queues but a only 1 tx_queues"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &Daemon{cfg: testConfig(t, two+"forward: {mode: l2fwd, pairs: [[a, b]]}\n")}
			names := map[*countPort]string{}
			for _, n := range []string{"a", "b"} {
				if c, ok := tt.ports[n]; ok {
					p := &countPort{rx: c[0], tx: c[1]}
					names[p] = n
					d.ports = append(d.ports, &port{cfg: config.Port{Name: n}, nic: p})
				}
			}
			qs, err := d.forwardQueues(tt.app)
			if tt.errMsg != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errMsg) {
					t.Fatalf("error %v, want one containing %q", err, tt.errMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, q := range qs {
				if q.TxQ != q.RxQ {
					t.Errorf("%s: TX queue %d, want %d", q.Name, q.TxQ, q.RxQ)
				}
				got = append(got, q.Name+">"+names[q.TxPort.(*countPort)])
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("queues %v, want %v", got, tt.want)
			}
		})
	}
}
