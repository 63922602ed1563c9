package integration

import (
	"reflect"
	"strings"
	"testing"
)

// TestE2EDirections checks the runs of probes of a guest with several NIC models: each
// model's pair of NICs both ways, in model order, under distinct names.
func TestE2EDirections(t *testing.T) {
	got := e2eDirections([]string{"igb", "virtio"})
	want := []direction{
		{"igb-nic1-to-nic2", "igb", 0, 1}, {"igb-nic2-to-nic1", "igb", 1, 0},
		{"virtio-nic3-to-nic4", "virtio", 2, 3}, {"virtio-nic4-to-nic3", "virtio", 3, 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("directions %+v, want %+v", got, want)
	}
}

// TestParseE2EModels checks the lines a guest with several pairs adds: the uio ports'
// INTx numbers and the drivers before binding (none for a NIC without one), and that a
// uio port's interrupt is told apart from another uio port's by its number.
func TestParseE2EModels(t *testing.T) {
	out := strings.Join([]string{
		"E2E original 0000:01:00.0 igb",
		"E2E original 0000:04:00.0 ",
		"E2E intx 0000:02:00.0 16",
		"E2E intx 0000:04:00.0 17",
		"E2E irq start  16:  5  IR-IO-APIC  16-fasteoi   uio_pci_generic",
		"E2E irq start  17:  1  IR-IO-APIC  17-fasteoi   uio_pci_generic",
		"E2E irq after  16:  5  IR-IO-APIC  16-fasteoi   uio_pci_generic",
		"E2E irq after  17:  9  IR-IO-APIC  17-fasteoi   uio_pci_generic",
	}, "\n")
	rep := parseE2E(out)
	if want := map[string]string{"0000:01:00.0": "igb", "0000:04:00.0": ""}; !reflect.DeepEqual(rep.orig, want) {
		t.Errorf("original drivers %q, want %q", rep.orig, want)
	}
	if want := map[string]string{"0000:02:00.0": "16", "0000:04:00.0": "17"}; !reflect.DeepEqual(rep.intx, want) {
		t.Errorf("intx %q, want %q", rep.intx, want)
	}
	before, after := rep.snap("start"), rep.snap("after")
	for addr, want := range map[string]uint64{"0000:02:00.0": 0, "0000:04:00.0": 8} {
		n, ok := irqLinesDelta(before, after, irqLines(after, rep.intx[addr], "uio_pci_generic"))
		if !ok || n != want {
			t.Errorf("%s: INTx fired %d times (found %v), want %d", addr, n, ok, want)
		}
	}
	if n, _ := irqDelta(before, after, "uio_pci_generic"); n != 8 {
		t.Errorf("every uio line fired %d times, want 8", n)
	}
	if _, ok := irqLinesDelta(before, after, irqLines(after, "18", "uio_pci_generic")); ok {
		t.Error("found an interrupt the guest never printed")
	}
}

// TestWakeCountsSharedTx checks the allowance for a virtio INTx port's transmits: its
// own line's interrupts (tx) pass and may account for wake-ups; another port's do not.
func TestWakeCountsSharedTx(t *testing.T) {
	ok := wakeCounts{sleeps: 5, woken: 7, spurious: 1, own: 5, tx: 2}
	if p := ok.problems(); len(p) != 0 {
		t.Errorf("the sending port's transmit interrupts: problems %q", p)
	}
	bad := ok
	bad.other = 1
	if p := bad.problems(); len(p) != 1 || !strings.Contains(p[0], "received nothing") {
		t.Errorf("an interrupt of another port: problems %q", p)
	}
	bad = ok
	bad.woken = 8
	if p := bad.problems(); len(p) != 1 || !strings.Contains(p[0], "more than") {
		t.Errorf("more wake-ups than interrupts: problems %q", p)
	}
}
