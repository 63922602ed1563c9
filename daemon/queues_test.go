package daemon

import (
	"fmt"
	"slices"
	"testing"

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
