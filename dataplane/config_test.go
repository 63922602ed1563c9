package dataplane

import (
	"errors"
	"strings"
	"testing"

	"github.com/uiod/uiod/idle"
)

func TestConfigValidate(t *testing.T) {
	dma := &goDMA{}
	a := newFakePort(t, dma, 2, 2, true)
	b := newFakePort(t, dma, 1, 1, true)
	noirq := newFakePort(t, dma, 1, 1, false)
	intx := newFakePort(t, dma, 2, 2, true)
	intx.rxq[1].vec = intx.rxq[0].vec // one INTx line for both queues
	ok := Queue{RxPort: a, TxPort: b}
	tests := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"valid", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{ok}}}}, ""},
		{"reflect without tx port", Config{App: Reflect, Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: a}}}}}, ""},
		{"busy without irq", Config{Policy: idle.PolicyConfig{Mode: idle.Busy}, Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: noirq, TxPort: noirq}}}}}, ""},
		{"no threads", Config{}, "threads"},
		{"no queues", Config{Threads: []Thread{{CPU: -1}}}, "threads[0].queues"},
		{"bad cpu", Config{Threads: []Thread{{CPU: -2, Queues: []Queue{ok}}}}, "threads[0].cpu"},
		{"batch", Config{Batch: MaxBatch + 1, Threads: []Thread{{CPU: -1, Queues: []Queue{ok}}}}, "batch"},
		{"policy", Config{Policy: idle.PolicyConfig{Mode: idle.SleepRange}, Threads: []Thread{{CPU: -1, Queues: []Queue{ok}}}}, "policy: sleep_min"},
		{"no rx port", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{{TxPort: a}}}}}, "threads[0].queues[0] (t0q0).rx_port"},
		{"tx port defaults to rx port", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: a}}}}}, ""},
		{"thread tx queue range", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{ok}, Tx: []TxQueue{{Port: a, Queue: 2}}}}}, "threads[0].tx[0].queue"},
		{"thread tx queue on two threads", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{ok}}, {CPU: -1, Queues: []Queue{{RxPort: a, RxQ: 1, TxPort: a, TxQ: 1}}, Tx: []TxQueue{{Port: b}}}}}, "threads[1].tx[0].queue"},
		{"thread tx without port", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{ok}, Tx: []TxQueue{{}}}}}, "threads[0].tx[0].port"},
		{"port not listed", Config{Ports: []Port{{NIC: a}}, Threads: []Thread{{CPU: -1, Queues: []Queue{ok}}}}, "threads[0].queues[0] (t0q0): uses a port that is not in ports"},
		{"port listed twice", Config{Ports: []Port{{NIC: a}, {Name: "again", NIC: a}, {NIC: b}}, Threads: []Thread{{CPU: -1, Queues: []Queue{ok}}}}, "ports[1] (again)"},
		{"port without nic", Config{Ports: []Port{{Name: "x"}}, Threads: []Thread{{CPU: -1, Queues: []Queue{ok}}}}, "ports[0] (x).nic"},
		{"kernel path as tx port", Config{Ports: []Port{{NIC: a, Kernel: b}}, Threads: []Thread{{CPU: -1, Queues: []Queue{ok}}}}, "threads[0].queues[0] (t0q0).tx_port: a kernel path"},
		{"kernel path to another port", Config{Ports: []Port{{NIC: a, Kernel: b}, {NIC: intx}}, Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: b, TxPort: intx}}}}}, "threads[0].queues[0] (t0q0).tx_port: a kernel path's frames"},
		{"reflect to other port", Config{App: Reflect, Threads: []Thread{{CPU: -1, Queues: []Queue{ok}}}}, "threads[0].queues[0] (t0q0).tx_port"},
		{"rx queue range", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: a, RxQ: 2, TxPort: b}}}}}, "threads[0].queues[0] (t0q0).rx_queue"},
		{"tx queue range", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: a, TxPort: b, TxQ: 1}}}}}, "threads[0].queues[0] (t0q0).tx_queue"},
		{"rx queue twice", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{ok}}, {CPU: -1, Queues: []Queue{{Name: "x", RxPort: a, TxPort: a}}}}}, "threads[1].queues[0] (x).rx_queue"},
		{"tx queue on two threads", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{ok}}, {CPU: -1, Queues: []Queue{{RxPort: a, RxQ: 1, TxPort: b}}}}}, "threads[1].queues[0] (t1q0).tx_queue"},
		{"tx queue shared on one thread", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{ok, {RxPort: a, RxQ: 1, TxPort: b}}}}}, ""},
		{"shared irq on one thread", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: intx, TxPort: intx}, {RxPort: intx, RxQ: 1, TxPort: intx, TxQ: 1}}}}}, ""},
		{"shared irq on two threads", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: intx, TxPort: intx}}}, {CPU: -1, Queues: []Queue{{RxPort: intx, RxQ: 1, TxPort: intx, TxQ: 1}}}}}, "threads[1].queues[0] (t1q0).rx_queue: its RX interrupt"},
		{"shared irq on two busy threads", Config{Policy: idle.PolicyConfig{Mode: idle.Busy}, Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: intx, TxPort: intx}}}, {CPU: -1, Queues: []Queue{{RxPort: intx, RxQ: 1, TxPort: intx, TxQ: 1}}}}}, ""},
		{"adaptive without irq", Config{Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: noirq, TxPort: a}}}}}, "threads[0].queues[0] (t0q0): adaptive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dp, err := New(tt.cfg)
			if dp != nil {
				dp.Stop()
			}
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("New = %v", err)
			case tt.field != "" && err == nil:
				t.Fatal("New accepted the configuration")
			case tt.field != "" && !strings.HasPrefix(err.Error(), tt.field):
				t.Fatalf("New = %q, want an error about %s", err, tt.field)
			}
		})
	}
	// The policy's rules are idle's: New reports them, under "policy" and per queue.
	bad := idle.PolicyConfig{Mode: idle.SleepRange}
	if _, err := New(Config{Policy: bad, Threads: []Thread{{CPU: -1, Queues: []Queue{ok}}}}); err == nil || err.Error() != "policy: "+bad.Validate().Error() {
		t.Errorf("New with %+v = %v, want idle's %v", bad, err, bad.Validate())
	}
	if _, err := New(Config{Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: noirq, TxPort: a}}}}}); !errors.Is(err, idle.ErrNoVector) {
		t.Errorf("adaptive without irq: %v, want idle.ErrNoVector", err)
	}
	for _, s := range []string{"l2fwd", "reflect"} {
		if a, err := ParseApp(s); err != nil || appName(a) != s {
			t.Errorf("ParseApp(%q) = %v, %v", s, a, err)
		}
	}
	if _, err := ParseApp("bridge"); err == nil {
		t.Error("ParseApp accepted bridge")
	}
}

func FuzzParseApp(f *testing.F) {
	for _, s := range []string{"l2fwd", "reflect", "", "L2FWD"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if a, err := ParseApp(s); err == nil && appName(a) != s {
			t.Fatalf("ParseApp(%q) = %v", s, a)
		}
	})
}
