package integration

import (
	"encoding/binary"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/uiod/uiod/testrig/qemutest"
	"github.com/uiod/uiod/wire"
)

// frameLog collects the frames a host socket receives.
type frameLog struct{ wire.Recorder }

func (l *frameLog) add(f []byte, ts int64) { l.Handle(f, ts) }

// wait returns the frames once n arrived or after timeout, and forgets them.
func (l *frameLog) wait(n int, timeout time.Duration) [][]byte {
	deadline := time.Now().Add(timeout)
	for l.Len() < n && !time.Now().After(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return l.Take()
}

// count waits until n frames for which mine holds have arrived, or for timeout, and
// returns how many did; it forgets every frame it looked at.
func (l *frameLog) count(n int, timeout time.Duration, mine func(f []byte) bool) int {
	got := 0
	deadline := time.Now().Add(timeout)
	for got < n && time.Now().Before(deadline) {
		for _, f := range l.wait(n-got, 100*time.Millisecond) {
			if mine(f) {
				got++
			}
		}
	}
	return got
}

// startTAPGuest boots the guest of the virtio multi-queue tests, running script: 2 vCPUs
// and one modern virtio-net NIC on a 2-queue host TAP (-netdev tap,queues=2,script=no,
// downscript=no,vhost=off; the device with mq=on,vectors=6 behind intel-iommu). It skips
// t unless ip(8) is there to bring the TAP interface up.
func startTAPGuest(t *testing.T, script string) *qemutest.VM {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip(8) to bring the TAP interface up")
	}
	return startGuest(t, qemutest.DebianKernel, qemutest.Options{
		IOMMU: true, NICModel: "virtio", NICs: 1, TAPQueues: 2, CPUs: 2, HugePages: 16,
		// Without it a 2-vCPU TCG guest may fall back to the HPET clock and stall.
		Cmdline: []string{"tsc=reliable"},
		Timeout: 8 * time.Minute,
		Script:  script,
	})
}

// openTAP brings up the TAP interface of vm's NIC 0 (Options.TAPQueues) and opens it
// through AF_PACKET, collecting what it receives; the port closes when t ends.
func openTAP(t *testing.T, vm *qemutest.VM) (*wire.PacketPort, *frameLog, error) {
	tap := vm.NICs[0].TAP
	if out, err := exec.Command("ip", "link", "set", "dev", tap, "up").CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("ip link set %s up: %v: %s", tap, err, out)
	}
	port, err := wire.ListenPacket(tap)
	if err != nil {
		return nil, nil, err
	}
	t.Cleanup(func() { port.Close() })
	back := &frameLog{}
	port.SetHandler(back.add)
	return port, back, nil
}

// sendFlows sends n UDP frames (udpFrame) from src to dst into port, frame i from source
// port sport+i%flows, pausing 5 ms after every 8 so that the guest's poll threads go idle
// and sleep in between.
func sendFlows(port *wire.PacketPort, dst, src []byte, n, flows int, sport uint16) error {
	for i := 0; i < n; i++ {
		if err := port.Send(udpFrame(dst, src, sport+uint16(i%flows), i)); err != nil {
			return fmt.Errorf("send frame %d: %w", i, err)
		}
		if i%8 == 7 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}

// udpFrame builds a 64-byte IPv4/UDP frame from src to dst with the given source port and
// sequence number in the payload.
func udpFrame(dst, src []byte, sport uint16, seq int) []byte {
	f := make([]byte, 64)
	copy(f, dst)
	copy(f[6:], src)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], 50)
	copy(ip[12:], []byte{10, 9, 0, 1})
	copy(ip[16:], []byte{10, 9, 0, 2})
	binary.BigEndian.PutUint16(ip[20:], sport)
	binary.BigEndian.PutUint16(ip[22:], 9)
	binary.BigEndian.PutUint16(ip[24:], 30)
	copy(ip[28:], fmt.Sprintf("mq %d", seq))
	return f
}
