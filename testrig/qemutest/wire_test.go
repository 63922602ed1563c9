package qemutest

import (
	"bytes"
	"encoding/binary"
	"net"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// TestIntegrationWire checks both directions of each NIC's datagram wire while the guest
// runs, with the guest's own igb driver: the host receives the ARP requests the guest
// transmits, and frames the host sends arrive in the guest's receive counters. The guest
// keeps transmitting until the host, through the control port, says it has seen them.
func TestIntegrationWire(t *testing.T) {
	vm := Start(t, Options{
		NICs: 2,
		Script: `i=0
for n in eth0 eth1; do
	ip addr add 10.9.$i.1/24 dev $n
	ip link set $n up
	# Transmit ARP requests: ping an absent neighbour.
	(ping -c 200 -i 0.5 10.9.$i.2 >/dev/null 2>&1 &)
	i=$((i+1))
done
for s in $(seq 200); do
	a=$(cat /sys/class/net/eth0/statistics/rx_packets)
	b=$(cat /sys/class/net/eth1/statistics/rx_packets)
	[ "$a" -ge 3 ] && [ "$b" -ge 3 ] && break
	sleep 0.5
done
read -t 100 -r line <$UIOD_GUEST_CONTROL
echo "host: $line; rx eth0=$a eth1=$b"
`,
		Timeout: 3 * time.Minute,
	})

	arps := make([]atomic.Int64, len(vm.NICs))
	for i, nic := range vm.NICs {
		c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: nic.HostSocket, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		go func() {
			buf := make([]byte, 2048)
			for {
				n, err := c.Read(buf)
				if err != nil {
					return
				}
				if n >= 14 && binary.BigEndian.Uint16(buf[12:14]) == 0x0806 && bytes.Equal(buf[6:12], nic.MAC) {
					arps[i].Add(1)
				}
			}
		}()
		// Inject broadcast frames (a made-up ethertype the guest counts and drops).
		go func() {
			frame := make([]byte, 60)
			copy(frame, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x88, 0xb5})
			dst := &net.UnixAddr{Name: nic.GuestSocket, Net: "unixgram"}
			for {
				select {
				case <-vm.done:
					return
				case <-time.After(200 * time.Millisecond):
				}
				c.WriteToUnix(frame, dst) // fails until QEMU has bound its end
			}
		}()
	}

	// Tell the guest to finish once every NIC's ARP requests have arrived.
	go func() {
		for {
			select {
			case <-vm.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			seen := true
			for i := range arps {
				seen = seen && arps[i].Load() > 0
			}
			if seen {
				vm.Send("seen")
				return
			}
		}
	}()

	r, err := vm.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("boot %v, script %v, wall %v: %s", r.Boot, r.Script, r.Wall, r.Output)
	if r.Exit != 0 {
		t.Fatalf("guest script exit status %d:\n%s", r.Exit, r.Output)
	}
	m := regexp.MustCompile(`host: (\w*); rx eth0=(\d+) eth1=(\d+)`).FindStringSubmatch(r.Output)
	if m == nil {
		t.Fatalf("no rx counters in the output:\n%s", r.Output)
	}
	if m[1] != "seen" {
		t.Errorf("the guest did not hear from the host: %q", m[0])
	}
	for i, s := range m[2:] {
		if n, _ := strconv.Atoi(s); n < 3 {
			t.Errorf("guest NIC %d received %d frames from the host, want at least 3", i, n)
		}
	}
	for i := range arps {
		if arps[i].Load() == 0 {
			t.Errorf("host received no ARP request from guest NIC %d (%v)", i, vm.NICs[i].MAC)
		}
	}
}
