package virtio

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	simvirtio "github.com/uiod/uiod/sim/virtio"
)

var (
	testGroup  = net.HardwareAddr{0x33, 0x33, 0xff, 0x00, 0x00, 0x01}
	testGroup2 = net.HardwareAddr{0x33, 0x33, 0xff, 0x00, 0x00, 0x02}
	testMAC    = net.HardwareAddr{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
)

// TestFilterCommandsSent checks what the device holds after each call: nothing sent at
// open (the device stays promiscuous), then the table, all-multicast for all and for
// more than 64 groups, promiscuous off, the station address.
func TestFilterCommandsSent(t *testing.T) {
	h, p := openTest(t, simvirtio.Config{}, nic.Config{Interrupts: nic.IRQNone}, Options{})
	vm := h.Virtio()
	if f := vm.Filter(); !f.Promisc || vm.Stats().CtrlCommands != 0 {
		t.Fatalf("after open: filter %+v after %d commands, want the reset's promiscuous mode and none", f, vm.Stats().CtrlCommands)
	}
	if err := p.SetMulticast([]net.HardwareAddr{testGroup, testGroup2, testGroup}, false); err != nil {
		t.Fatal(err)
	}
	f := vm.Filter()
	if f.Promisc || f.AllMulti || len(f.Multicast) != 2 || !bytes.Equal(f.Multicast[0], testGroup) || !bytes.Equal(f.Multicast[1], testGroup2) || len(f.Unicast) != 0 {
		t.Fatalf("after SetMulticast of 2 groups (one twice): %+v", f)
	}
	if err := p.SetMulticast(nil, true); err != nil {
		t.Fatal(err)
	}
	if f := vm.Filter(); !f.AllMulti || len(f.Multicast) != 0 {
		t.Fatalf("after all: %+v", f)
	}
	var many []net.HardwareAddr
	for i := 0; i < maxMACTable+1; i++ {
		many = append(many, net.HardwareAddr{0x33, 0x33, 0, 0, 0, byte(i)})
	}
	if err := p.SetMulticast(many, false); err != nil {
		t.Fatal(err)
	}
	if f := vm.Filter(); !f.AllMulti || len(f.Multicast) != 0 {
		t.Fatalf("after %d groups: %+v, want all-multicast", len(many), f)
	}
	if err := p.SetMulticast(many[:maxMACTable], false); err != nil {
		t.Fatal(err)
	}
	if f := vm.Filter(); f.AllMulti || len(f.Multicast) != maxMACTable {
		t.Fatalf("after %d groups: all-multicast %v, %d in the table", maxMACTable, f.AllMulti, len(f.Multicast))
	}
	if err := p.SetMAC(testMAC); err != nil {
		t.Fatal(err)
	}
	if f := vm.Filter(); !bytes.Equal(f.MAC, testMAC) || !bytes.Equal(p.MAC(), testMAC) {
		t.Fatalf("after SetMAC: device %v, port %v", f.MAC, p.MAC())
	}
}

// TestFilterWithoutFeatures: a device without VIRTIO_NET_F_CTRL_RX or
// VIRTIO_NET_F_CTRL_MAC_ADDR gets errors naming the feature, and keeps its own filter.
func TestFilterWithoutFeatures(t *testing.T) {
	h, p := openTest(t, simvirtio.Config{NoCtrlRX: true, NoCtrlMACAddr: true}, nic.Config{Interrupts: nic.IRQNone}, Options{})
	err := p.SetMulticast([]net.HardwareAddr{testGroup}, false)
	if err == nil || !strings.Contains(err.Error(), "VIRTIO_NET_F_CTRL_RX") || !errors.Is(err, pci.ErrNotSupported) {
		t.Errorf("SetMulticast without CTRL_RX: %v", err)
	}
	own := p.MAC()
	err = p.SetMAC(testMAC)
	if err == nil || !strings.Contains(err.Error(), "VIRTIO_NET_F_CTRL_MAC_ADDR") {
		t.Errorf("SetMAC without CTRL_MAC_ADDR: %v", err)
	}
	if !bytes.Equal(p.MAC(), own) {
		t.Errorf("MAC %v after a failed SetMAC, want %v", p.MAC(), own)
	}
	if c := h.Virtio().Stats().CtrlCommands; c != 0 {
		t.Errorf("%d control commands sent to a device without the features", c)
	}
	got := h.Probe(testGroup2)
	if !got[testGroup2.String()] {
		t.Error("a device left to its own (promiscuous) filter dropped a group")
	}
}

// TestFilterOnlyMACAddr: with CTRL_MAC_ADDR but no CTRL_RX, SetMAC moves the address and
// the device keeps taking everything (it has no RX mode commands).
func TestFilterOnlyMACAddr(t *testing.T) {
	h, p := openTest(t, simvirtio.Config{NoCtrlRX: true}, nic.Config{Interrupts: nic.IRQNone}, Options{})
	if err := p.SetMAC(testMAC); err != nil {
		t.Fatal(err)
	}
	if f := h.Virtio().Filter(); !bytes.Equal(f.MAC, testMAC) || !f.Promisc {
		t.Fatalf("filter %+v", f)
	}
}

// TestFilterAfterRecover: a recovery from DEVICE_NEEDS_RESET, whose reset makes the
// device promiscuous with its configured address again, sends the filter again.
func TestFilterAfterRecover(t *testing.T) {
	h, p := openTest(t, simvirtio.Config{}, nic.Config{Interrupts: nic.IRQNone}, Options{})
	if err := p.SetMulticast([]net.HardwareAddr{testGroup}, false); err != nil {
		t.Fatal(err)
	}
	if err := p.SetMAC(testMAC); err != nil {
		t.Fatal(err)
	}
	vm := h.Virtio()
	vm.RaiseNeedsReset()
	if err := p.SetMulticast([]net.HardwareAddr{testGroup}, false); err == nil || !strings.Contains(err.Error(), "DEVICE_NEEDS_RESET") {
		t.Errorf("SetMulticast on a broken device: %v", err)
	}
	if err := p.Recover(); err != nil {
		t.Fatal(err)
	}
	f := vm.Filter()
	if f.Promisc || len(f.Multicast) != 1 || !bytes.Equal(f.Multicast[0], testGroup) || !bytes.Equal(f.MAC, testMAC) {
		t.Fatalf("after Recover: %+v", f)
	}
	got := h.Probe(testGroup, testGroup2, testMAC, vm.MAC())
	want := map[string]bool{testGroup.String(): true, testGroup2.String(): false, testMAC.String(): true, vm.MAC().String(): false}
	for a, w := range want {
		if got[a] != w {
			t.Errorf("after Recover: frame to %s received %v, want %v", a, got[a], w)
		}
	}
}

// TestFilterRefusedKeepsLast: a filter the device refused is not the one Recover sends
// again; the last one it took is.
func TestFilterRefusedKeepsLast(t *testing.T) {
	h, p := openTest(t, simvirtio.Config{}, nic.Config{Interrupts: nic.IRQNone}, Options{})
	vm := h.Virtio()
	if err := p.SetMulticast([]net.HardwareAddr{testGroup}, false); err != nil {
		t.Fatal(err)
	}
	vm.RefuseCtrlNext(1)
	if err := p.SetMulticast([]net.HardwareAddr{testGroup2}, false); err == nil || !strings.Contains(err.Error(), "VIRTIO_NET_ERR") {
		t.Fatalf("SetMulticast refused by the device: %v", err)
	}
	vm.RaiseNeedsReset()
	if err := p.Recover(); err != nil {
		t.Fatal(err)
	}
	if f := vm.Filter(); len(f.Multicast) != 1 || !bytes.Equal(f.Multicast[0], testGroup) || f.Promisc {
		t.Fatalf("after Recover: %+v, want the table the device took (%v)", f, testGroup)
	}
}
