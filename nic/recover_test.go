package nic

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/uiod/uiod/irq"
)

// scriptedPort is a Recoverer whose Recover returns the errors of a script in turn.
type scriptedPort struct {
	needs  RecoverSignal
	script []error
	runs   int
}

func (p *scriptedPort) MAC() net.HardwareAddr    { return nil }
func (p *scriptedPort) NumRxQueues() int         { return 1 }
func (p *scriptedPort) NumTxQueues() int         { return 1 }
func (p *scriptedPort) RxBurst(int, []*Buf) int  { return 0 }
func (p *scriptedPort) TxBurst(int, []*Buf) int  { return 0 }
func (p *scriptedPort) RxVector(int) *irq.Vector { return nil }
func (p *scriptedPort) EnableRxInterrupt(int)    {}
func (p *scriptedPort) DisableRxInterrupt(int)   {}
func (p *scriptedPort) Link() Link               { return Link{} }
func (p *scriptedPort) Stats() Stats             { return Stats{} }
func (p *scriptedPort) Close() error             { return nil }
func (p *scriptedPort) OnRecoverNeeded(f func()) { p.needs.Set(f) }
func (p *scriptedPort) RecoverBackoff() (first, max time.Duration) {
	return time.Hour, 4 * time.Hour
}
func (p *scriptedPort) Recover() error {
	var err error
	if p.runs < len(p.script) {
		err = p.script[p.runs]
	}
	p.runs++
	if err == nil {
		p.needs.Clear()
	}
	return err
}

// TestRecoveryBackoff checks the retry schedule: each failure doubles the wait from the
// port's first up to its max, a success clears it, and the error of each Run is kept.
func TestRecoveryBackoff(t *testing.T) {
	bad := errors.New("device did not come back")
	tests := []struct {
		name   string
		script []error
		waits  []time.Duration // the wait set after each Run, 0: none scheduled
	}{
		{"success", []error{nil}, []time.Duration{0}},
		{"fails then works", []error{bad, bad, nil}, []time.Duration{time.Hour, 2 * time.Hour, 0}},
		{"capped", []error{bad, bad, bad, bad}, []time.Duration{time.Hour, 2 * time.Hour, 4 * time.Hour, 4 * time.Hour}},
		{"restarts after a success", []error{bad, bad, nil, bad}, []time.Duration{time.Hour, 2 * time.Hour, 0, time.Hour}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &scriptedPort{script: tt.script}
			r := NewRecovery(p, nil)
			for i, want := range tt.waits {
				start := time.Now()
				err := r.Run(nil)
				if (err != nil) != (tt.script[i] != nil) || r.Err() != err {
					t.Fatalf("run %d: error %v (Err %v), want %v", i, err, r.Err(), tt.script[i])
				}
				at := r.RetryAt()
				if want == 0 {
					if !at.IsZero() {
						t.Fatalf("run %d: retry at %v, want none", i, at)
					}
					continue
				}
				// at is now+want as Run saw now: between start+want and time.Now()+want.
				if at.Before(start.Add(want)) || at.After(time.Now().Add(want)) {
					t.Fatalf("run %d: retry in %v, want %v", i, at.Sub(start), want)
				}
			}
			runs, fails := r.Counts()
			if runs != uint64(len(tt.waits)) || p.runs != len(tt.waits) {
				t.Errorf("runs %d (port %d), want %d", runs, p.runs, len(tt.waits))
			}
			n := uint64(0)
			for _, e := range tt.script {
				if e != nil {
					n++
				}
			}
			if fails != n {
				t.Errorf("failures %d, want %d", fails, n)
			}
		})
	}
}

// TestRecoveryRequests checks how a port's requests reach its user: one raised before the
// user registered is delivered at registration, Due takes a request once, a retry is due
// only once its time came, Poll runs only what is due, and a nil Recovery (a port that is
// no Recoverer) does nothing.
func TestRecoveryRequests(t *testing.T) {
	if NewRecovery(&plainPort{}, nil) != nil {
		t.Fatal("a Recovery for a port that is no Recoverer")
	}
	var nilR *Recovery
	if ran, err := nilR.Poll(nil); ran || err != nil {
		t.Fatalf("nil Recovery ran: %v, %v", ran, err)
	}
	p := &scriptedPort{script: []error{errors.New("not yet"), nil}}
	p.needs.Raise() // before the user registers: e.g. an igbvf port opened with its PF down
	notified := 0
	r := NewRecovery(p, func() { notified++ })
	if notified != 1 || !p.needs.Pending() {
		t.Fatalf("pending request at registration: notified %d, pending %v", notified, p.needs.Pending())
	}
	now := time.Now()
	if !r.Due(now) {
		t.Fatal("a request is not due")
	}
	if r.Due(now) {
		t.Fatal("a request was due twice")
	}
	if ran, err := r.Poll(nil); ran || err != nil {
		t.Fatalf("Poll ran with nothing due: %v, %v", ran, err)
	}
	if err := r.Run(nil); err == nil {
		t.Fatal("the scripted failure did not fail")
	}
	if r.Due(time.Now()) || !r.Due(r.RetryAt()) {
		t.Fatal("a retry is due before its time, or not at it")
	}
	p.needs.Raise() // the port asks again before the backoff ends: due at once
	if ran, err := r.Poll(nil); !ran || err != nil {
		t.Fatalf("Poll after a new request: ran %v, %v", ran, err)
	}
	if p.needs.Pending() || !r.RetryAt().IsZero() {
		t.Fatal("need still pending, or a retry scheduled, after a successful Recover")
	}
}

// plainPort is a Port that is no Recoverer (never called).
type plainPort struct{ Port }
