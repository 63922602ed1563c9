package integration

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/testrig/qemutest"
)

// pumpEtherType is the made-up ethertype of a framePump's frames.
const pumpEtherType = 0x88b5

// framePump sends a 60-byte frame into the wire of each of its NICs every 20 ms, from
// source MAC 02:00:00:00:00:0k for its k-th NIC (from 1), and counts the frames of that
// ethertype each NIC's wire carries back to the host.
type framePump struct {
	nics  []qemutest.NIC
	conns []*net.UnixConn
	sent  []atomic.Int64
	// recv[i] counts the pump's frames out of NIC i; from[i][k] those of them with the
	// source MAC of the frames sent into NIC k.
	recv []atomic.Int64
	from [][]atomic.Int64
	stop chan struct{}
	once sync.Once
}

// startPump binds the host's end of each NIC's wire and starts sending; the sockets close
// when t ends.
func startPump(t *testing.T, nics []qemutest.NIC) *framePump {
	t.Helper()
	p := &framePump{nics: nics, sent: make([]atomic.Int64, len(nics)), recv: make([]atomic.Int64, len(nics)),
		from: make([][]atomic.Int64, len(nics)), stop: make(chan struct{})}
	for i, nic := range nics {
		c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: nic.HostSocket, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		p.conns = append(p.conns, c)
		p.from[i] = make([]atomic.Int64, len(nics))
		go p.receive(i)
	}
	t.Cleanup(p.Stop)
	go p.send()
	return p
}

// runPumped boots a guest with o (see startGuest), pumps frames into its NICs from to to
// (as in vm.NICs[from:to]) for the whole boot, waits for its guest tests (finishGuest)
// and returns the stopped pump.
func runPumped(t *testing.T, kernel func() (qemutest.Kernel, error), o qemutest.Options, from, to int) *framePump {
	t.Helper()
	vm := startGuest(t, kernel, o)
	pump := startPump(t, vm.NICs[from:to])
	finishGuest(t, vm)
	pump.Stop()
	return pump
}

// receive counts the frames out of NIC i until its socket closes.
func (p *framePump) receive(i int) {
	buf := make([]byte, 2048)
	for {
		n, err := p.conns[i].Read(buf)
		if err != nil {
			return
		}
		if n < 14 || int(buf[12])<<8|int(buf[13]) != pumpEtherType {
			continue
		}
		p.recv[i].Add(1)
		if k := int(buf[11]) - 1; buf[6] == 0x02 && k >= 0 && k < len(p.nics) {
			p.from[i][k].Add(1)
		}
	}
}

// send sends a frame into every NIC each tick until Stop.
func (p *framePump) send() {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		for k, nic := range p.nics {
			frame := make([]byte, 60)
			copy(frame, nic.MAC)
			copy(frame[6:], []byte{0x02, 0, 0, 0, 0, byte(k + 1), pumpEtherType >> 8, pumpEtherType & 0xff})
			dst := &net.UnixAddr{Name: nic.GuestSocket, Net: "unixgram"}
			if _, err := p.conns[k].WriteToUnix(frame, dst); err == nil { // fails until QEMU has bound its end
				p.sent[k].Add(1)
			}
		}
	}
}

// Stop stops sending.
func (p *framePump) Stop() { p.once.Do(func() { close(p.stop) }) }
